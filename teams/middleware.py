"""Resolve the team the user is working in (session choice, else their first team).

One query a request at most: the user's teams, in the team switcher's order, are read once (lazily, on
first use) and both the current team (``request.team``) and the layout's switcher
(``request.user_teams``, through teams.context_processors.console) come from that list.
"""

from __future__ import annotations

from django.utils.functional import SimpleLazyObject

SESSION_KEY = "evalconsole_team_id"


def _user_teams(request) -> list:
    from teams.models import Team

    user = request.user
    if not user.is_authenticated:
        return []
    return list(Team.objects.visible_to(user).order_by("name", "id"))


def _current_team(request):
    teams = request.user_teams
    if not teams:
        return None
    team_id = str(request.session.get(SESSION_KEY) or "")
    for team in teams:
        if str(team.pk) == team_id:
            return team
    return teams[0]


class CurrentTeamMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.user_teams = SimpleLazyObject(lambda: _user_teams(request))
        request.team = SimpleLazyObject(lambda: _current_team(request))
        return self.get_response(request)
