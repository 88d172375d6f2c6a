"""Resolve the team the user is working in (session choice, else their first team).

One query a request at most: the user's teams, in the team switcher's order, are read once (lazily, on
first use) and both the current team (``request.team``) and the layout's switcher
(``request.user_teams``, through teams.context_processors.console) come from that list.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import router
from django.utils.functional import SimpleLazyObject

from core.prepared import PreparedRead, concrete_attnames, instance

SESSION_KEY = "evalconsole_team_id"


def _teams_of(user_pk: int):
    from teams.models import Team

    user = get_user_model()(pk=user_pk)  # the query names only its id
    return Team.objects.visible_to(user).order_by("name", "id").values_list(*concrete_attnames(Team))


# `list(Team.objects.visible_to(user).order_by("name", "id"))`, compiled once per process (core.prepared).
_TEAMS_READ = PreparedRead(_teams_of, (int,))


def _user_teams(request) -> list:
    from teams.models import Team

    user = request.user
    if not user.is_authenticated:
        return []
    using = router.db_for_read(Team)
    return [instance(Team, row, using) for row in _TEAMS_READ.rows(user.pk, using=using)]


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
