"""Resolve the team the user is working in (session choice, else their first team)."""

from __future__ import annotations

from django.utils.functional import SimpleLazyObject

SESSION_KEY = "evalconsole_team_id"


def _current_team(request):
    from teams.models import Team

    user = request.user
    if not user.is_authenticated:
        return None
    teams = Team.objects.visible_to(user)
    team_id = request.session.get(SESSION_KEY)
    team = teams.filter(pk=team_id).first() if team_id else None
    return team or teams.order_by("name", "id").first()


class CurrentTeamMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.team = SimpleLazyObject(lambda: _current_team(request))
        return self.get_response(request)
