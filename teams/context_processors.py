from __future__ import annotations


def console(request) -> dict:
    """Teams for the switcher and the current team; evaluated lazily by templates."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    from teams.models import Team

    return {
        "current_team": getattr(request, "team", None),
        "user_teams": Team.objects.visible_to(user).order_by("name"),
    }
