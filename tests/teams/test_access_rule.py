"""The one permission rule (teams.access): what each role may do, asked by services, API, pages, admin."""

import pytest

from agents.models import Agent
from checks.models import Check, Test, TestSet
from monitors.models import Monitor, Task
from runs.models import Run
from teams import access
from teams.models import Role, Team

EVERYDAY = [Check, TestSet, Test, Run, Monitor, Task]


@pytest.mark.parametrize("model", [*EVERYDAY, Agent, Team])
def test_anyone_in_the_team_reads_and_only_admins_archive(model):
    assert access.role_needed(access.READ, model) == Role.VIEWER
    assert access.role_needed(access.ARCHIVE, model) == Role.ADMIN


@pytest.mark.parametrize("model", EVERYDAY)
@pytest.mark.parametrize("operation", [access.USE, access.CREATE, access.CHANGE])
def test_members_build_and_launch(model, operation):
    assert access.role_needed(operation, model) == Role.MEMBER


@pytest.mark.parametrize("model", [Agent, Team])
def test_agents_and_the_team_are_the_admins_to_set_up(model):
    assert access.role_needed(access.CREATE, model) == Role.ADMIN
    assert access.role_needed(access.CHANGE, model) == Role.ADMIN
    assert access.role_needed(access.USE, model) == Role.MEMBER  # e.g. ping an agent


def test_an_unknown_operation_is_refused():
    with pytest.raises(ValueError, match="unknown operation 'delete'"):
        access.role_needed("delete", Check)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("role", "flags"),
    [
        (Role.VIEWER, {"can_edit": False, "can_admin": False}),
        (Role.MEMBER, {"can_edit": True, "can_admin": False}),
        (Role.ADMIN, {"can_edit": True, "can_admin": True}),
    ],
)
def test_each_role_sees_what_the_rule_allows(django_user_model, role, flags):
    from core.errors import PermissionDenied
    from teams import services

    team = services.create_team(name="Acme")
    other = services.create_team(name="Other")
    user = django_user_model.objects.create_user("u")
    services.add_member(team=team, user=user, role=role)
    agent = Agent.objects.create(team=team, name="a", endpoint_url="http://127.0.0.1:1/")
    assert access.page_flags(user, team) == flags
    assert access.page_flags(user, other) == {"can_edit": False, "can_admin": False}
    assert access.allows(user, access.CHANGE, agent) is flags["can_admin"]
    assert access.allows(user, access.USE, agent) is flags["can_edit"]
    assert access.allows(user, access.READ, agent) is True
    assert access.allows(user, access.READ, team, team=other) is False
    if flags["can_admin"]:
        access.require(user, access.ARCHIVE, agent)
    else:
        with pytest.raises(PermissionDenied, match=r"your role in Acme does not allow this \(needs admin\)"):
            access.require(user, access.ARCHIVE, agent)
    assert access.require(None, access.ARCHIVE, agent) is None  # the system
    assert list(access.teams_with_role(user, access.ARCHIVE)) == ([team] if flags["can_admin"] else [])
