"""Django admin: bad input is a form error (never a 500), writes go through the services."""

from __future__ import annotations

import pytest

from agents.models import Agent
from checks.models import Check


@pytest.fixture
def superuser(make_user):
    return make_user("root", is_staff=True, is_superuser=True)


@pytest.fixture
def root_client(client, superuser):
    client.raise_request_exception = False  # a 500 shows as a status code, not an exception
    client.force_login(superuser)
    return client


def agent_form(agent: Agent, **changes) -> dict:
    data = {
        "team": agent.team_id,
        "name": agent.name,
        "description": "",
        "kind": agent.kind,
        "protocol": agent.protocol,
        "endpoint_url": agent.endpoint_url,
        "model_name": "",
        "timeout_s": agent.timeout_s,
        "retries": agent.retries,
        "max_concurrency": agent.max_concurrency,
        "nodes-TOTAL_FORMS": 0,
        "nodes-INITIAL_FORMS": 0,
    }
    return {**data, **changes}


def test_admin_check_with_a_bad_config_is_a_form_error(root_client, agent):
    response = root_client.post(
        "/admin/checks/check/add/",
        {"agent": agent.pk, "name": "Greets", "kind": "text_includes", "config": "{}",
         "versions-TOTAL_FORMS": 0, "versions-INITIAL_FORMS": 0},
    )
    assert response.status_code == 200
    assert "config.text" in response.content.decode()
    assert not Check.objects.exists()


def test_admin_check_edit_of_an_archived_check_is_a_form_error(root_client, agent, member):
    from checks import services

    check = services.create_check(agent=agent, by=member, name="Greets", kind="text_includes",
                                  config={"text": "hi"})
    services.archive_check(check=check, by=None)
    response = root_client.post(
        f"/admin/checks/check/{check.pk}/change/",
        {"name": "Greets more", "kind": "text_includes", "config": '{"text": "hello"}',
         "versions-TOTAL_FORMS": 0, "versions-INITIAL_FORMS": 0},
    )
    assert response.status_code == 200
    assert "restore it before editing" in response.content.decode()
    assert Check.objects.get(pk=check.pk).version == 1


def test_admin_agent_with_an_out_of_range_timeout_is_a_form_error(root_client, agent):
    response = root_client.post(f"/admin/agents/agent/{agent.pk}/change/", agent_form(agent, timeout_s=0))
    assert response.status_code == 200
    assert "between 0.1 and 600 seconds" in response.content.decode()
    assert Agent.objects.get(pk=agent.pk).timeout_s == 30.0


def test_admin_agent_cannot_change_team_or_archived_at_in_the_form(root_client, agent, other_team):
    response = root_client.post(
        f"/admin/agents/agent/{agent.pk}/change/",
        agent_form(
            agent, team=other_team.pk, timeout_s=5, archived_at_0="2024-01-01", archived_at_1="00:00:00"
        ),
    )
    assert response.status_code == 302
    saved = Agent.objects.get(pk=agent.pk)
    assert (saved.team_id, saved.archived_at, saved.timeout_s) == (agent.team_id, None, 5.0)


def test_admin_archive_action_goes_through_the_service(root_client, agent):
    response = root_client.post(
        "/admin/agents/agent/", {"action": "archive", "_selected_action": [agent.pk]}
    )
    assert response.status_code == 302
    assert Agent.objects.get(pk=agent.pk).archived_at is not None
