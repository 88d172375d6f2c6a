"""Roles, team isolation and write-only secrets at the service and model layers."""

from __future__ import annotations

import pytest
from django.db import connection

from agents.models import Agent
from agents.services import create_agent, update_agent
from checks import services as check_services
from checks.models import Check
from core.errors import PermissionDenied


def test_viewer_cannot_write(agent, viewer, test_set):
    with pytest.raises(PermissionDenied):
        check_services.create_check(
            agent=agent, by=viewer, name="x", kind="text_includes", config={"text": "a"}
        )
    with pytest.raises(PermissionDenied):
        check_services.create_test_set(agent=agent, by=viewer, name="x")
    with pytest.raises(PermissionDenied):
        check_services.create_test(test_set=test_set, by=viewer, name="x", scenarios=["hi"])


def test_member_cannot_manage_agents(team, member):
    with pytest.raises(PermissionDenied):
        create_agent(team=team, by=member, name="x", endpoint_url="http://127.0.0.1:9/")


def test_outsider_sees_nothing_of_another_team(agent, member, outsider):
    check = check_services.create_check(agent=agent, by=member, name="x", kind="text_includes",
                                        config={"text": "a"})
    assert not Agent.objects.visible_to(outsider).filter(pk=agent.pk).exists()
    assert not Check.objects.visible_to(outsider).filter(pk=check.pk).exists()
    assert Check.objects.visible_to(member).filter(pk=check.pk).exists()
    with pytest.raises(PermissionDenied):
        check_services.create_check(
            agent=agent, by=outsider, name="y", kind="text_includes", config={"text": "a"}
        )


def test_agent_headers_are_encrypted_at_rest(team, admin_user):
    agent = create_agent(team=team, by=admin_user, name="Secret bot", endpoint_url="https://agent.example/",
                         headers={"Authorization": "Bearer sk-live-123456"})
    with connection.cursor() as cursor:
        cursor.execute("SELECT headers_encrypted, header_names FROM agents_agent WHERE id = %s", [agent.pk])
        stored, names = cursor.fetchone()
    assert "sk-live-123456" not in stored
    assert "Authorization" in str(names)
    assert Agent.objects.get(pk=agent.pk).get_headers() == {"Authorization": "Bearer sk-live-123456"}


def test_updating_an_agent_without_headers_keeps_them(team, admin_user):
    agent = create_agent(team=team, by=admin_user, name="Bot", endpoint_url="https://agent.example/",
                         headers={"X-Key": "abc"})
    update_agent(agent=agent, by=admin_user, timeout_s=5)
    assert Agent.objects.get(pk=agent.pk).get_headers() == {"X-Key": "abc"}
    update_agent(agent=agent, by=admin_user, headers={})
    assert Agent.objects.get(pk=agent.pk).get_headers() == {}


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"endpoint_url": "ftp://x"}, "endpoint_url"),
        ({"endpoint_url": "not a url"}, "endpoint_url"),
        ({"timeout_s": 0}, "timeout_s"),
        ({"retries": 11}, "retries"),
        ({"max_concurrency": 0}, "max_concurrency"),
        ({"protocol": "grpc"}, "protocol"),
        ({"name": ""}, "name"),
    ],
)
def test_agent_validation_names_the_field(team, admin_user, changes, field):
    from core.errors import ValidationFailed

    spec = {"name": "Bot", "endpoint_url": "http://127.0.0.1:9/", **changes}
    with pytest.raises(ValidationFailed) as exc:
        create_agent(team=team, by=admin_user, **spec)
    assert field in exc.value.errors
    assert not Agent.objects.filter(team=team).exists()
