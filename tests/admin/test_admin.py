"""Django admin: bad input is a form error (never a 500), writes go through the services."""

from __future__ import annotations

import pytest

from agents.models import Agent
from checks.models import Check
from tests import factories


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


def check_form(**fields) -> dict:
    """A POST of the check change form: its fields plus the (read-only) versions inline's management form."""
    return {"versions-TOTAL_FORMS": 0, "versions-INITIAL_FORMS": 0, **fields}


def change_check(client, check, **fields):
    """POST the admin change form of `check` with `fields`."""
    return client.post(f"/admin/checks/check/{check.pk}/change/", check_form(**fields))


@pytest.fixture
def greets(agent, member):
    """A text_includes check "Greets" looking for "hi", at version 1."""
    return factories.check(agent, member, name="Greets", config={"text": "hi"})


@pytest.mark.parametrize(
    "kind,config,message",
    [
        pytest.param("text_includes", "{}", "config.text", id="missing-field"),
        pytest.param("text_includes", '{"text": "a\\u0000b"}', "must not contain NUL characters", id="nul"),
        pytest.param(
            "text_includes",
            '{"text": ' + "[" * 5000 + "]" * 5000 + "}",
            "is nested more than 32 levels deep",
            id="nested-like-the-api-refuses",
        ),
        pytest.param("latency", '{"max_ms": 1e30}', "config.max_ms: must be at most 600,000", id="unbounded"),
    ],
)
def test_admin_check_with_a_bad_config_is_a_form_error(root_client, agent, kind, config, message):
    """Held to the API's JSON rules and the kinds' bounds: a form error, never a 500 or a saved check."""
    response = root_client.post(
        "/admin/checks/check/add/", check_form(agent=agent.pk, name="Greets", kind=kind, config=config)
    )
    assert response.status_code == 200
    assert message in response.content.decode()
    assert not Check.objects.exists()


def test_admin_check_edit_of_an_archived_check_is_a_form_error(root_client, greets):
    from checks import services

    services.archive_check(check=greets, by=None)
    response = change_check(root_client, greets, name="Greets more", kind="text_includes",
                            config='{"text": "hello"}')
    assert response.status_code == 200
    assert "restore it before editing" in response.content.decode()
    assert Check.objects.get(pk=greets.pk).version == 1


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


# ---------------------------------------------------------------- staff who are not superusers


@pytest.fixture
def staff(outsider):
    """Admin of another team with every Django model permission, but not a superuser."""
    from django.contrib.auth.models import Permission

    outsider.is_staff = True
    outsider.save()
    outsider.user_permissions.set(Permission.objects.all())
    return outsider


@pytest.fixture
def staff_client(client, staff):
    client.raise_request_exception = False
    client.force_login(staff)
    return client


@pytest.fixture
def populated(agent, member, test_set):
    """One object of most models in `team` (Acme), which the staff user is not part of."""
    from agents.models import Node
    from checks import services
    from monitors.models import Task
    from teams.services import issue_token

    check = services.create_check(agent=agent, by=member, name="Acme greets", kind="text_includes",
                                  config={"text": "hi"})
    services.create_test(test_set=test_set, by=member, name="Acme test", scenarios=["hi"],
                         checks=[{"check": check.pk}])
    Node.objects.create(agent=agent, name="acme-node")
    Task.objects.create(agent=agent, external_id="acme-task", completed_at="2024-01-01T00:00:00Z")
    issue_token(user=member, name="acme-token")
    return check


def test_every_admin_list_works_and_shows_staff_nothing_of_another_team(
    staff_client, root_client_for_lists, populated
):
    from django.contrib import admin

    for model in admin.site._registry:
        url = f"/admin/{model._meta.app_label}/{model._meta.model_name}/"
        assert root_client_for_lists.get(url).status_code == 200, url
        response = staff_client.get(url)
        assert response.status_code == 200, url
        assert "Acme" not in response.content.decode(), url  # neither rows nor filter choices
        assert "acme-" not in response.content.decode(), url


@pytest.fixture
def root_client_for_lists(superuser):
    from django.test import Client

    client = Client(raise_request_exception=False)
    client.force_login(superuser)
    return client


def test_staff_cannot_open_or_archive_another_teams_agent(staff_client, agent):
    assert staff_client.get(f"/admin/agents/agent/{agent.pk}/change/").status_code == 302  # "does not exist"
    staff_client.post("/admin/agents/agent/", {"action": "archive", "_selected_action": [agent.pk]})
    assert Agent.objects.get(pk=agent.pk).archived_at is None


def test_staff_cannot_make_themselves_a_member_of_another_team(staff_client, staff, team):
    from teams.models import Membership

    response = staff_client.post(
        "/admin/teams/membership/add/", {"team": team.pk, "user": staff.pk, "role": "admin"}
    )
    assert response.status_code == 200  # the form refuses the team: not one of the choices
    assert not Membership.objects.filter(team=team, user=staff).exists()


def test_staff_cannot_add_a_check_to_another_teams_agent(staff_client, agent):
    response = staff_client.post(
        "/admin/checks/check/add/",
        {"agent": agent.pk, "name": "Mine now", "kind": "text_includes", "config": '{"text": "x"}',
         "versions-TOTAL_FORMS": 0, "versions-INITIAL_FORMS": 0},
    )
    assert response.status_code == 200
    assert not Check.objects.filter(agent=agent).exists()


def test_staff_acts_as_themselves_in_their_own_team(staff_client, staff, other_team):
    from agents.services import create_agent

    theirs = create_agent(team=other_team, by=staff, name="Globex bot", endpoint_url="http://127.0.0.1:9/")
    response = staff_client.post(
        "/admin/agents/agent/", {"action": "archive", "_selected_action": [theirs.pk]}
    )
    assert response.status_code == 302
    assert Agent.objects.get(pk=theirs.pk).archived_at is not None


def test_admin_token_cannot_be_unrevoked_or_given_to_someone_else(root_client, member, superuser):
    from teams.models import ApiToken
    from teams.services import issue_token, revoke_token

    token = revoke_token(token=issue_token(user=member, name="ci").token, by=None)
    response = root_client.post(
        f"/admin/teams/apitoken/{token.pk}/change/",
        {"name": "ci", "user": superuser.pk, "can_write": "on", "revoked_at_0": "", "revoked_at_1": ""},
    )
    assert response.status_code == 302
    saved = ApiToken.objects.get(pk=token.pk)
    assert saved.user_id == member.pk
    assert saved.revoked_at is not None


# ---------------------------------------------------------------- writes through the services


def test_admin_monitor_refuses_a_check_of_another_agent(root_client, agent, team, admin_user, member):
    from agents.services import create_agent
    from checks import services
    from monitors.models import Monitor

    other = create_agent(team=team, by=admin_user, name="Other bot", endpoint_url="http://127.0.0.1:9/")
    foreign = services.create_check(agent=other, by=member, name="Other's", kind="text_includes",
                                    config={"text": "x"})
    response = root_client.post(
        "/admin/monitors/monitor/add/",
        {"agent": agent.pk, "name": "Live", "checks": [foreign.pk], "sample_rate": "10", "active": "on"},
    )
    assert response.status_code == 200
    assert "not in Support bot" in response.content.decode()
    assert not Monitor.objects.exists()


def test_admin_monitor_refuses_a_rate_over_100(root_client, agent):
    from monitors.models import Monitor

    response = root_client.post(
        "/admin/monitors/monitor/add/",
        {"agent": agent.pk, "name": "Live", "sample_rate": "250", "active": "on"},
    )
    assert response.status_code == 200
    assert "between 0 and 100" in response.content.decode()
    assert not Monitor.objects.exists()


def test_admin_monitor_is_created_by_the_service(root_client, agent, populated, superuser):
    from monitors.models import Monitor

    response = root_client.post(
        "/admin/monitors/monitor/add/",
        {"agent": agent.pk, "name": "Live", "checks": [populated.pk], "sample_rate": "12.5", "active": "on"},
    )
    assert response.status_code == 302
    monitor = Monitor.objects.get()
    assert (monitor.name, str(monitor.sample_rate), list(monitor.checks.all())) == (
        "Live",
        "12.50",
        [populated],
    )


def test_admin_test_set_cannot_move_to_another_agent_and_archives_through_the_action(
    root_client, test_set, team, admin_user
):
    from agents.services import create_agent
    from checks.models import TestSet

    other = create_agent(team=team, by=admin_user, name="Other bot", endpoint_url="http://127.0.0.1:9/")
    response = root_client.post(
        f"/admin/checks/testset/{test_set.pk}/change/",
        {"agent": other.pk, "name": "Orders v2", "description": "d"},
    )
    assert response.status_code == 302
    saved = TestSet.objects.get(pk=test_set.pk)
    assert (saved.agent_id, saved.name, saved.description) == (test_set.agent_id, "Orders v2", "d")
    root_client.post("/admin/checks/testset/", {"action": "archive", "_selected_action": [test_set.pk]})
    assert TestSet.objects.get(pk=test_set.pk).archived_at is not None


@pytest.mark.parametrize(
    "model", ["agents/node", "monitors/task", "runs/sample", "runs/checkresult"]
)
def test_admin_cannot_edit_or_delete_evidence_and_nodes_directly(root_client, superuser, model):
    from django.contrib import admin
    from django.test import RequestFactory

    request = RequestFactory().get("/admin/")
    request.user = superuser
    app_label, model_name = model.split("/")
    model_admin = next(
        a for m, a in admin.site._registry.items()
        if (m._meta.app_label, m._meta.model_name) == (app_label, model_name)
    )
    assert not model_admin.has_add_permission(request)
    assert not model_admin.has_change_permission(request)
    if model != "monitors/task":  # old tasks may be deleted (delete_old_tasks does the same)
        assert not model_admin.has_delete_permission(request)


def test_admin_test_form_offers_only_what_it_saves(root_client, test_set, member):
    from checks import services

    test = services.create_test(test_set=test_set, by=member, name="T", scenarios=["hi"])
    html = root_client.get(f"/admin/checks/test/{test.pk}/change/").content.decode()
    assert 'name="name"' in html
    assert 'name="test_set"' not in html and 'name="archived_at_0"' not in html
    response = root_client.post(f"/admin/checks/test/{test.pk}/change/", {"name": "T renamed"})
    assert response.status_code == 302
    test.refresh_from_db()
    assert (test.name, test.version) == ("T renamed", 2)


# ---------------------------------------------------------------- the check library in the admin


def test_admin_adds_a_check_as_version_1(root_client, agent):
    response = root_client.post(
        "/admin/checks/check/add/",
        check_form(agent=agent.pk, name="Greets", kind="text_includes", config='{"text": "hi"}'),
    )
    assert response.status_code == 302
    check = Check.objects.get()
    assert (check.name, check.version, check.current_version.config["text"]) == ("Greets", 1, "hi")


def test_admin_rename_and_config_edit_save_a_new_version(root_client, greets):
    check = greets
    response = change_check(root_client, check, name="Greets warmly", kind="text_includes",
                            config='{"text": "hello"}')
    assert response.status_code == 302
    check.refresh_from_db()
    assert (check.name, check.version) == ("Greets warmly", 2)
    assert [(v.number, v.name, v.config["text"]) for v in check.versions.order_by("number")] == [
        (1, "Greets", "hi"), (2, "Greets warmly", "hello"),
    ]


def test_admin_check_edit_with_a_bad_config_keeps_the_stored_version(root_client, greets):
    check = greets
    response = change_check(root_client, check, name="Greets", kind="text_includes", config='{"text": ""}')
    assert response.status_code == 200
    assert "config.text" in response.content.decode()
    check.refresh_from_db()
    assert (check.version, check.current_version.config["text"]) == (1, "hi")


def test_admin_archives_a_check_from_the_list(root_client, greets):
    response = root_client.post(
        "/admin/checks/check/", {"action": "archive", "_selected_action": [greets.pk]}
    )
    assert response.status_code == 302
    assert Check.objects.get(pk=greets.pk).archived_at is not None


def test_admin_archiving_a_check_tests_use_names_them_in_a_warning(root_client, greets, member, test_set):
    from checks import services

    check = greets
    services.create_test(test_set=test_set, by=member, name="Welcome", scenarios=["hi"], checks=[check.pk])
    response = root_client.post(
        "/admin/checks/check/", {"action": "archive", "_selected_action": [check.pk]}, follow=True
    )
    html = response.content.decode()
    assert Check.objects.get(pk=check.pk).archived_at is not None
    assert "Greets is still used by 1 test: Welcome" in html
    assert "keeps running its last version (v1)" in html


def test_admin_rename_of_a_test_with_an_archived_check_is_a_form_error(root_client, greets, member, test_set):
    from checks import services
    from checks.models import Test

    check = greets
    test = services.create_test(test_set=test_set, by=member, name="Welcome", scenarios=["hi"],
                                checks=[check.pk])
    services.archive_check(check=check, by=None, confirm=True)
    response = root_client.post(f"/admin/checks/test/{test.pk}/change/", {"name": "Welcome back"})
    assert response.status_code == 200
    assert "&#x27;Greets&#x27; is archived" in response.content.decode()
    assert Test.objects.get(pk=test.pk).version == 1


def test_admin_check_delete_is_refused_with_the_reason(root_client, greets):
    check = greets
    change_page = root_client.get(f"/admin/checks/check/{check.pk}/change/").content.decode()
    assert "deletelink" not in change_page  # no button that can only fail
    listing = root_client.get("/admin/checks/check/").content.decode()
    assert 'value="delete_selected"' not in listing and 'value="archive"' in listing
    response = root_client.get(f"/admin/checks/check/{check.pk}/delete/", follow=True)
    html = response.content.decode()
    assert response.status_code == 200
    assert "permission to delete" not in html
    assert "Checks are archived, not deleted" in html and "keep the check versions they used" in html
    root_client.post(f"/admin/checks/check/{check.pk}/delete/", {"post": "yes"})
    assert Check.objects.filter(pk=check.pk).exists()


def test_staff_add_forms_offer_only_their_teams_agents_and_checks(staff_client, staff, other_team, populated):
    """The monitor form has a foreign key (agent) and a many-to-many (checks): neither offers Acme's."""
    own_agent = factories.agent(other_team, staff, name="staff-bot")
    factories.check(own_agent, staff, name="Staff greets")
    body = staff_client.get("/admin/monitors/monitor/add/").content.decode()
    assert "staff-bot" in body and "Staff greets" in body  # the choices in scope are offered
    assert "Acme greets" not in body and "Support bot" not in body
