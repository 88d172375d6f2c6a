"""REST API v1 behaviour per resource: shapes, versions, filters, launches, secrets that never come back."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

pytestmark = pytest.mark.django_db


# ----------------------------------------------------------------------------- agents


def test_agent_headers_are_write_only(api, team):
    created = api.post(
        "admin",
        "/api/v1/agents/",
        {
            "name": "Billing bot",
            "endpoint_url": "http://127.0.0.1:9/billing",
            "headers": {"Authorization": "Bearer sk-very-secret", "X-Team": "acme-42"},
            "nodes": [{"name": "refunds", "kind": "tool"}],
        },
    )
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["team"] == team.pk  # the admin's only team
    assert body["header_names"] == ["Authorization", "X-Team"]
    assert "headers" not in body
    assert body["nodes"] == [{"name": "refunds", "kind": "tool"}]
    for response in (
        created,
        api.get("admin", f"/api/v1/agents/{body['id']}/"),
        api.get("admin", "/api/v1/agents/"),
    ):
        assert b"sk-very-secret" not in response.content and b"acme-42" not in response.content

    kept = api.patch("admin", f"/api/v1/agents/{body['id']}/", {"timeout_s": 12.5})
    assert kept.status_code == 200 and kept.json()["header_names"] == ["Authorization", "X-Team"]
    assert kept.json()["timeout_s"] == 12.5
    cleared = api.patch("admin", f"/api/v1/agents/{body['id']}/", {"headers": {}})
    assert cleared.json()["header_names"] == []


def test_agent_validation_names_fields(api):
    response = api.post(
        "admin",
        "/api/v1/agents/",
        {
            "name": "x",
            "endpoint_url": "ftp://example.com",
            "timeout_s": 0,
            "headers": {"bad name": "v"},
        },
    )
    assert response.status_code == 400
    errors = response.json()
    assert set(errors) == {"timeout_s"}  # shape errors first; each field has a list of messages
    response = api.post(
        "admin",
        "/api/v1/agents/",
        {"name": "x", "endpoint_url": "ftp://example.com", "headers": {"bad name": "v"}},
    )
    assert response.status_code == 400
    assert set(response.json()) == {"endpoint_url", "headers"}
    assert all(isinstance(v, list) and len(v) == 1 for v in response.json().values())


def test_agent_archive_hides_it_from_the_list_only(api, agent):
    assert api.delete("admin", f"/api/v1/agents/{agent.pk}/").status_code == 204
    assert api.get("viewer", "/api/v1/agents/").json()["count"] == 0
    assert [a["id"] for a in api.get("viewer", "/api/v1/agents/?archived=true").json()["results"]] == [
        agent.pk
    ]
    assert api.get("viewer", f"/api/v1/agents/{agent.pk}/").json()["archived_at"] is not None


def test_ping_reports_an_unreachable_agent_in_the_body(api, agent):
    response = api.post("member", f"/api/v1/agents/{agent.pk}/ping/")
    assert response.status_code == 200
    body = response.json()
    assert body["ok"] is False and body["error"]


def test_ping_reaches_the_demo_agent(api, team, admin_user):
    from agents.demo_agent import DemoAgent
    from agents.services import create_agent

    with DemoAgent() as demo:
        agent = create_agent(team=team, by=admin_user, name="Demo", endpoint_url=demo.url)
        body = api.post("member", f"/api/v1/agents/{agent.pk}/ping/").json()
    assert body["ok"] is True and body["status_code"] == 200 and isinstance(body["output"], str)


# ----------------------------------------------------------------------------- checks


def test_check_edit_makes_a_new_version(api, agent):
    created = api.post(
        "member",
        "/api/v1/checks/",
        {
            "agent": agent.pk,
            "name": "Looks up the order",
            "kind": "tool_usage",
            "config": {"tool": "lookup_order", "count": 1},
        },
    )
    assert created.status_code == 201, created.content
    check = created.json()
    assert check["version"] == 1
    assert check["config"] == {
        "tool": "lookup_order",
        "mode": "at_least",
        "count": 1,
        "inputs": [],
        "node": None,
    }

    edited = api.patch(
        "member", f"/api/v1/checks/{check['id']}/", {"config": {"tool": "lookup_order", "count": 2}}
    )
    assert edited.status_code == 200 and edited.json()["version"] == 2
    same = api.patch(
        "member", f"/api/v1/checks/{check['id']}/", {"config": {"tool": "lookup_order", "count": 2}}
    )
    assert same.json()["version"] == 2  # an edit that changes nothing makes no version

    versions = api.get("viewer", f"/api/v1/checks/{check['id']}/versions/").json()
    assert [v["number"] for v in versions["results"]] == [2, 1]
    assert versions["results"][1]["config"]["count"] == 1  # version 1 is frozen


def test_check_config_errors_name_the_config_field(api, agent):
    response = api.post(
        "member",
        "/api/v1/checks/",
        {"agent": agent.pk, "name": "x", "kind": "text_includes", "config": {"text": "", "surprise": 1}},
    )
    assert response.status_code == 400
    assert set(response.json()) == {"config.text", "config.surprise"}
    response = api.post("member", "/api/v1/checks/", {"agent": agent.pk, "name": "x", "kind": "no_such_kind"})
    assert response.status_code == 400 and "kind" in response.json()


def test_check_filters(api, library, member):
    from checks.services import create_check

    agent = library["agent"]
    create_check(agent=agent, by=member, name="Quick", kind="latency", config={"max_ms": 500})

    def names(query):
        return sorted(c["name"] for c in api.get("viewer", f"/api/v1/checks/{query}").json()["results"])

    assert names("?kind=latency") == ["Quick"]
    assert names("?used=in_tests") == ["Mentions shipping"]
    assert names("?used=unused") == ["Polite", "Quick"]
    assert names(f"?agent={agent.pk}") == ["Mentions shipping", "Polite", "Quick"]
    assert api.get("viewer", "/api/v1/checks/?used=sometimes").status_code == 400
    assert api.get("viewer", "/api/v1/checks/?agent=999999").status_code == 400


def test_check_archive_is_admin_only_and_keeps_the_check_readable(api, library):
    check = library["extra_check"]
    assert api.delete("member", f"/api/v1/checks/{check.pk}/").status_code == 403
    assert api.delete("admin", f"/api/v1/checks/{check.pk}/").status_code == 204
    assert check.pk not in [c["id"] for c in api.get("member", "/api/v1/checks/").json()["results"]]
    assert api.get("member", f"/api/v1/checks/{check.pk}/").status_code == 200
    assert api.get("member", "/api/v1/checks/?archived=true").json()["count"] == 1


def test_archiving_a_check_tests_use_is_a_409_naming_them_until_confirmed(api, library):
    check, test = library["check"], library["test"]
    response = api.delete("admin", f"/api/v1/checks/{check.pk}/")
    assert response.status_code == 409
    body = response.json()
    assert body["tests"] == [{"id": test.pk, "name": "Order status"}]
    assert "Order status" in body["detail"] and "?confirm=true" in body["detail"]
    assert api.get("admin", f"/api/v1/checks/{check.pk}/").json()["archived_at"] is None
    response = api.delete("admin", f"/api/v1/checks/{check.pk}/?confirm=maybe")
    assert response.status_code == 400 and "confirm" in response.json()
    assert api.delete("member", f"/api/v1/checks/{check.pk}/?confirm=true").status_code == 403
    assert api.delete("admin", f"/api/v1/checks/{check.pk}/?confirm=true").status_code == 204
    assert api.get("admin", f"/api/v1/checks/{check.pk}/").json()["archived_at"] is not None
    # The test still shows the check; saving a new version names it.
    response = api.patch("member", f"/api/v1/tests/{test.pk}/", {"name": "Renamed"})
    assert response.status_code == 400
    assert "'Mentions shipping' is archived" in response.json()["checks.0.check"][0]


def test_another_teams_object_in_a_body_does_not_exist(api, other_team, outsider):
    from agents.services import create_agent
    from checks.services import create_check

    theirs = create_agent(team=other_team, by=outsider, name="Theirs", endpoint_url="http://127.0.0.1:9/")
    their_check = create_check(
        agent=theirs, by=outsider, name="Secret rubric", kind="text_equals", config={"expected": "x"}
    )
    response = api.post(
        "member",
        "/api/v1/checks/",
        {"agent": theirs.pk, "name": "x", "kind": "text_equals", "config": {"expected": "y"}},
    )
    assert response.status_code == 400
    assert response.json() == {"agent": [f"Agent {theirs.pk} does not exist."]}
    assert api.get("member", f"/api/v1/checks/{their_check.pk}/").status_code == 404
    assert b"Secret rubric" not in api.get("member", "/api/v1/checks/").content


# ----------------------------------------------------------------------------- tests


def test_test_create_edit_and_limits(api, library):
    test_set, check = library["test_set"], library["check"]
    body = {
        "test_set": test_set.pk,
        "name": "Refunds",
        "scenarios": [
            {"name": "Refund", "input": "Refund EC-1042"},
            {
                "messages": [{"role": "system", "content": "Be brief"}, {"role": "user", "content": "Hi"}],
                "metadata": {"tier": "gold"},
            },
        ],
        "checks": [{"check": check.pk, "required": False}],
        "samples_per_scenario": 3,
        "min_valid_per_scenario": 2,
        "required_pass_rate": 80,
    }
    created = api.post("member", "/api/v1/tests/", body)
    assert created.status_code == 201, created.content
    test = created.json()
    assert test["version"] == 1 and test["agent"] == library["agent"].pk
    assert test["scenarios"][1] == {
        "name": "Scenario 2",
        "input": "Hi",
        "messages": [{"role": "system", "content": "Be brief"}, {"role": "user", "content": "Hi"}],
        "metadata": {"tier": "gold"},
    }
    assert test["checks"] == [{"check": check.pk, "required": False}]

    over = api.patch("member", f"/api/v1/tests/{test['id']}/", {"samples_per_scenario": 6})
    assert over.status_code == 400
    assert "limit of 10 samples per run" in over.json()["samples_per_scenario"][0]
    edited = api.patch("member", f"/api/v1/tests/{test['id']}/", {"required_pass_rate": 50})
    assert (
        edited.status_code == 200
        and edited.json()["version"] == 2
        and edited.json()["required_pass_rate"] == 50
    )

    eleven = [{"input": f"q{i}"} for i in range(11)]
    response = api.patch("member", f"/api/v1/tests/{test['id']}/", {"scenarios": eleven})
    assert response.status_code == 400 and "over the limit of 10" in response.json()["scenarios"][0]


# ----------------------------------------------------------------------------- runs


def test_launch_run_answers_202_and_shows_progress(api, library):
    response = api.post(
        "member",
        "/api/v1/runs/",
        {"test": library["test"].pk, "additional_checks": [library["extra_check"].pk]},
    )
    assert response.status_code == 202, response.content
    run = response.json()
    assert run["status"] == "queued" and run["result"] is None and run["total_samples"] == 2
    assert run["scenarios"][0]["name"] == "Where is EC-1042" and run["scenarios"][0]["pending"] == 2
    assert [(c["name"], c["version"], c["additional"]) for c in run["checks"]] == [
        ("Mentions shipping", 1, False),
        ("Polite", 1, True),
    ]

    samples = api.get("viewer", f"/api/v1/runs/{run['id']}/samples/").json()
    assert samples["count"] == 2 and samples["results"][0]["status"] == "queued"

    cancelled = api.post("member", f"/api/v1/runs/{run['id']}/cancel/")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    again = api.post("member", f"/api/v1/runs/{run['id']}/cancel/")
    assert again.status_code == 409 and "detail" in again.json()


def test_launch_rejects_a_check_of_another_agent(api, library, team, admin_user, member):
    from agents.services import create_agent
    from checks.services import create_check

    other = create_agent(team=team, by=admin_user, name="Other", endpoint_url="http://127.0.0.1:9/o")
    foreign = create_check(
        agent=other, by=member, name="Other's", kind="text_equals", config={"expected": "x"}
    )
    response = api.post(
        "member", "/api/v1/runs/", {"test": library["test"].pk, "additional_checks": [foreign.pk]}
    )
    assert response.status_code == 400
    assert list(response.json()) == ["additional_checks.0.check"]


def test_launch_test_set_launches_every_test(api, library, member):
    from checks.services import create_test

    create_test(test_set=library["test_set"], by=member, name="Greeting", scenarios=[{"input": "Hello"}])
    response = api.post("member", f"/api/v1/test-sets/{library['test_set'].pk}/runs/", {})
    assert response.status_code == 202, response.content
    runs = response.json()["runs"]
    assert sorted(r["name"] for r in runs) == ["Greeting", "Order status"]
    assert len({r["batch"] for r in runs}) == 1 and runs[0]["batch"]
    listed = api.get("viewer", f"/api/v1/runs/?batch={runs[0]['batch']}").json()
    assert listed["count"] == 2


def test_run_filters(api, library):
    run = library["run"]
    ids = lambda query: [r["id"] for r in api.get("viewer", f"/api/v1/runs/{query}").json()["results"]]  # noqa: E731
    assert ids(f"?test={library['test'].pk}&status=queued") == [run.pk]
    assert ids("?status=completed") == []
    assert ids("?result=pass") == []
    before = (run.created_at - timedelta(seconds=1)).isoformat().replace("+00:00", "Z")
    after = (run.created_at + timedelta(seconds=1)).isoformat().replace("+00:00", "Z")
    assert ids(f"?created_after={before}&created_before={after}") == [run.pk]
    assert ids(f"?created_after={after}") == []
    assert api.get("viewer", "/api/v1/runs/?created_after=yesterday").status_code == 400
    assert api.get("viewer", "/api/v1/runs/?status=sleeping").status_code == 400
    # No filter named (the list skips building the filters then): every run, by page; a filter with a
    # page, or an unknown parameter, still goes through the filters.
    assert ids("") == ids("?page=1&page_size=50") == ids("?unknown=1") == [run.pk]
    assert ids("?page=1&status=completed") == []
    assert api.get("viewer", "/api/v1/runs/?page=1&status=sleeping").status_code == 400


# ----------------------------------------------------------------------------- tokens


def test_token_secret_is_shown_once(api, personas):
    created = api.post("member", "/api/v1/tokens/", {"name": "CI", "can_write": False, "expires_in_days": 30})
    assert created.status_code == 201
    body = created.json()
    secret = body["token"]
    assert secret.startswith("ect_") and body["can_write"] is False and body["expires_at"]
    for response in (
        api.get("member", "/api/v1/tokens/"),
        api.get("member", f"/api/v1/tokens/{body['id']}/"),
    ):
        assert secret.encode() not in response.content
        # the random part: everything after ect_<key_id>_ (it may hold "_" itself)
        assert secret.split("_", 2)[2].encode() not in response.content
    from teams.models import ApiToken

    stored = ApiToken.objects.get(pk=body["id"])
    assert secret.split("_", 2)[2] not in (stored.digest, stored.key_id, stored.name)

    api.secrets["fresh"] = secret
    assert api.get("fresh", "/api/v1/agents/").status_code == 200
    assert api.post("fresh", "/api/v1/tokens/", {"name": "escalate"}).status_code == 403  # read-only


def test_a_token_manages_only_its_users_tokens(api, personas):
    from teams.models import ApiToken

    admins = ApiToken.objects.filter(user=personas["admin"]).values_list("pk", flat=True)
    listed = [t["id"] for t in api.get("member", "/api/v1/tokens/").json()["results"]]
    assert not set(listed) & set(admins)
    for token_id in admins:
        assert api.delete("member", f"/api/v1/tokens/{token_id}/").status_code == 404


def test_revoked_token_stops_working_at_once(api, personas):
    from teams.models import ApiToken

    own = ApiToken.objects.get(user=personas["member"])
    assert api.delete("member", f"/api/v1/tokens/{own.pk}/").status_code == 204
    response = api.get("member", "/api/v1/agents/")
    assert response.status_code == 401 and "revoked" in response.json()["detail"]


@pytest.mark.parametrize(
    "header",
    [
        "Bearer ect_",  # malformed
        "Bearer not-a-token",
        "Bearer ect_onlyid",
        "Bearer ect_0123456789ab_wrongsecret",  # unknown id
    ],
)
def test_malformed_or_unknown_tokens_are_401(api, header):
    response = api.client.get("/api/v1/agents/", HTTP_AUTHORIZATION=header)
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Bearer"
    assert response.json()["detail"]


def test_wrong_secret_and_expired_tokens_are_401(api, personas):
    from teams.models import ApiToken
    from teams.services import issue_token

    key_id = api.secrets["admin"].split("_")[1]
    wrong = api.client.get("/api/v1/agents/", HTTP_AUTHORIZATION=f"Bearer ect_{key_id}_{'x' * 43}")
    assert wrong.status_code == 401 and wrong.json()["detail"] == "Invalid token."

    issued = issue_token(user=personas["admin"], name="short", expires_in_days=1)
    ApiToken.objects.filter(pk=issued.token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    expired = api.client.get("/api/v1/agents/", HTTP_AUTHORIZATION=f"Bearer {issued.secret}")
    assert expired.status_code == 401 and "expired" in expired.json()["detail"]


def test_create_api_token_command_prints_only_the_token(admin_user, api):
    import io
    import re

    from django.core.management import call_command

    out = io.StringIO()
    call_command("create_api_token", admin_user.username, "--read-only", "--name", "cron", stdout=out)
    printed = out.getvalue()
    assert re.fullmatch(r"ect_[0-9a-f]{12}_[A-Za-z0-9_-]{43}\n", printed), printed
    api.secrets["cron"] = printed.strip()
    assert api.get("cron", "/api/v1/agents/").status_code == 200
    assert api.post("cron", "/api/v1/tokens/", {"name": "x"}).status_code == 403


def test_agent_team_is_required_for_a_member_of_several_teams(api, admin_user, other_team):
    from teams.services import add_member

    add_member(team=other_team, user=admin_user, role="admin")
    body = {"name": "Bot", "endpoint_url": "http://127.0.0.1:9/"}
    response = api.post("admin", "/api/v1/agents/", body)
    assert response.status_code == 400 and response.json() == {
        "team": ["required when you belong to several teams"]
    }
    created = api.post("admin", "/api/v1/agents/", {**body, "team": other_team.pk})
    assert created.status_code == 201 and created.json()["team"] == other_team.pk


def test_an_archived_test_set_refuses_new_tests_and_launches_naming_the_field(api, library, admin_user):
    from checks.services import archive_test_set
    from runs.models import Run

    test_set, test = library["test_set"], library["test"]
    archive_test_set(test_set=test_set, by=admin_user)
    body = {"test_set": test_set.pk, "name": "Refunds", "scenarios": [{"input": "Refund EC-1042"}]}
    created = api.post("member", "/api/v1/tests/", body)
    assert created.status_code == 400
    assert created.json()["test_set"] == ["test set 'Orders' is archived; restore it to add tests"]
    both = api.post("member", "/api/v1/tests/", {**body, "name": ""}).json()
    assert set(both) == {"test_set", "name"}  # reported with the other problems at once

    runs_before = Run.objects.count()
    launched = api.post("member", "/api/v1/runs/", {"test": test.pk})
    assert launched.status_code == 400
    assert launched.json()["test"] == ["test set 'Orders' is archived; restore it to launch its tests"]
    whole = api.post("member", f"/api/v1/test-sets/{test_set.pk}/runs/", {})
    assert whole.status_code == 400 and "archived" in whole.json()["test_set"][0]
    assert Run.objects.count() == runs_before


@pytest.mark.parametrize("resource", ["agents", "checks", "test-sets", "tests"])
def test_the_archived_filter_must_be_a_boolean(api, library, resource):
    bad = api.get("member", f"/api/v1/{resource}/?archived=maybe")
    assert bad.status_code == 400
    assert bad.json() == {"archived": ["'maybe' is not a boolean; use true or false"]}
    for value in ("true", "false", "1", "0", "True"):
        assert api.get("member", f"/api/v1/{resource}/?archived={value}").status_code == 200, value
