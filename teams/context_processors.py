from __future__ import annotations


def console(request) -> dict:
    """Teams for the switcher and the current team; evaluated lazily by templates (one query for both:
    teams.middleware)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    teams = getattr(request, "user_teams", None)
    if teams is None:  # a request that did not pass through the middleware (a test's RequestFactory)
        from teams.models import Team

        teams = Team.objects.visible_to(user).order_by("name", "id")
    return {"current_team": getattr(request, "team", None), "user_teams": teams}
