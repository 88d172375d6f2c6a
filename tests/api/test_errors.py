"""Bad input is a JSON 400 (a message list per field), never a 500; throttling is a 429 with Retry-After."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.django_db

HUGE = 10**30


def _post_raw(api, path, raw: bytes | str, content_type="application/json"):
    return api.client.post(
        path, data=raw, content_type=content_type, HTTP_AUTHORIZATION=f"Bearer {api.secrets['admin']}"
    )


@pytest.mark.parametrize("raw", [b"{not json", b"", b"[1, 2", b'{"name": "\\ud800"}', b"\xff\xfe"])
def test_non_json_bodies_are_400(api, agent, raw):
    response = _post_raw(api, "/api/v1/checks/", raw)
    assert response.status_code == 400
    assert isinstance(response.json(), dict)


def test_deeply_nested_json_is_400(api, agent):
    raw = "[" * 100_000 + "]" * 100_000
    response = _post_raw(api, "/api/v1/checks/", raw)
    assert response.status_code == 400


@pytest.mark.parametrize(
    ("method", "path"),
    [("post", "/api/v1/agents/"), ("patch", "/api/v1/agents/{agent}/"),
     ("post", "/api/v1/agents/{agent}/tasks/"), ("post", "/api/v1/checks/")],
)
def test_a_body_over_the_limit_is_a_json_413_without_a_traceback(api, agent, method, path, settings, caplog):
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    raw = json.dumps({"name": "Big", "endpoint_url": "http://127.0.0.1:9/", "description": "x" * (limit + 1)})
    caplog.set_level("INFO")
    response = getattr(api.client, method)(
        path.format(agent=agent.pk), data=raw, content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {api.secrets['admin']}",
    )
    assert response.status_code == 413
    assert response["Content-Type"] == "application/json"
    assert response.json() == {
        "detail": f"The request body is larger than the limit of {limit:,} bytes; send less at a time."
    }
    assert [r for r in caplog.records if r.exc_info] == []
    agent.refresh_from_db()
    assert agent.description == "" and not agent.tasks.exists()


def test_an_oversized_body_with_a_session_is_a_json_413_too(admin_user, settings, caplog):
    """With session auth, DRF's CSRF check parses the body first (during authentication)."""
    from django.test import Client

    browser = Client(enforce_csrf_checks=True)
    browser.force_login(admin_user)
    browser.cookies["csrftoken"] = "a" * 32  # so that the check goes on to look for the token in the body
    caplog.set_level("INFO")
    raw = json.dumps({"name": "Big", "description": "x" * settings.DATA_UPLOAD_MAX_MEMORY_SIZE})
    response = browser.post("/api/v1/agents/", data=raw, content_type="application/json")
    assert response.status_code == 413 and response["Content-Type"] == "application/json"
    assert "larger than the limit" in response.json()["detail"]
    assert [r for r in caplog.records if r.exc_info] == []


def test_a_form_body_is_415(api):
    response = _post_raw(api, "/api/v1/tokens/", "name=x", content_type="application/x-www-form-urlencoded")
    assert response.status_code == 415


@pytest.mark.parametrize(
    "body",
    [
        [],
        "a string",
        {"agent": "one", "name": 5, "kind": ["text_includes"], "config": "text"},
        {"agent": True, "name": "x", "kind": "text_includes", "config": {"text": "a"}},
        {"agent": HUGE, "name": "x", "kind": "text_includes", "config": {"text": "a"}},
        {"agent": -1, "name": "x", "kind": "text_includes", "config": {"text": "a"}},
        {"agent": 1.5, "name": "x", "kind": "text_includes", "config": {"text": "a"}},
        {"agent": "١", "name": "x", "kind": "text_includes", "config": {"text": "a"}},
        {"agent": None, "name": None, "kind": None, "config": None},
    ],
)
def test_wrong_types_in_a_check_are_400(api, agent, body):
    response = api.post("admin", "/api/v1/checks/", body)
    assert response.status_code == 400, response.content
    errors = response.json()
    assert isinstance(errors, dict) and errors
    assert all(isinstance(messages, list | dict) for messages in errors.values())


@pytest.mark.parametrize("text", ["nul \x00 byte", "lone \ud800 surrogate"])
def test_unstorable_text_inside_json_fields_is_400(api, library, text):
    check = api.post(
        "admin",
        "/api/v1/checks/",
        {"agent": library["agent"].pk, "name": "x", "kind": "text_includes", "config": {"text": text}},
    )
    assert check.status_code == 400 and "config" in check.json()
    test = api.post(
        "admin",
        "/api/v1/tests/",
        {
            "test_set": library["test_set"].pk,
            "name": "x",
            "scenarios": [{"input": "hi", "metadata": {"note": text}}],
        },
    )
    assert test.status_code == 400 and "scenarios" in test.json()
    name = api.post("admin", "/api/v1/test-sets/", {"agent": library["agent"].pk, "name": text})
    assert name.status_code == 400 and "name" in name.json()


def test_unicode_is_kept(api, library):
    name = "Commande 🚚 — статус 订单"
    response = api.post(
        "admin",
        "/api/v1/checks/",
        {"agent": library["agent"].pk, "name": name, "kind": "text_includes", "config": {"text": "已发货"}},
    )
    assert response.status_code == 201
    assert api.get("viewer", f"/api/v1/checks/{response.json()['id']}/").json()["name"] == name


@pytest.mark.parametrize(
    "field,value",
    [
        ("samples_per_scenario", HUGE),
        ("samples_per_scenario", -3),
        ("samples_per_scenario", "many"),
        ("required_pass_rate", 101),
        ("required_pass_rate", 0),
        ("min_valid_per_scenario", 1.5),
        ("scenarios", "just text"),
        ("scenarios", [{"input": [5]}]),
        ("scenarios", [{"messages": "hi"}]),
        ("checks", [{"check": HUGE}]),
        ("checks", ["abc"]),
        ("checks", [{"check": 1, "required": "maybe"}]),
    ],
)
def test_bad_test_fields_are_400_naming_the_field(api, library, field, value):
    body = {"test_set": library["test_set"].pk, "name": "x", "scenarios": [{"input": "hi"}], field: value}
    response = api.post("member", "/api/v1/tests/", body)
    assert response.status_code == 400, response.content
    assert field in response.json() or any(key.startswith(f"{field}.") for key in response.json())


@pytest.mark.parametrize(
    "path",
    [
        f"/api/v1/agents/{HUGE}/",
        "/api/v1/agents/-1/",
        "/api/v1/agents/abc/",
        "/api/v1/checks/0/versions/",
        f"/api/v1/runs/{HUGE}/samples/",
        "/api/v1/tests/%F0%9F%9A%9A/",
    ],
)
def test_odd_ids_in_paths_are_404(api, agent, path):
    response = api.get("admin", path)
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")


@pytest.mark.parametrize(
    "query",
    [
        "?page=0",
        "?page=abc",
        "?page=99",
        f"?page={HUGE}",
        "?page=%00",
    ],
)
def test_bad_pages_are_404(api, agent, query):
    response = api.get("admin", f"/api/v1/agents/{query}")
    assert response.status_code == 404 and "detail" in response.json()


@pytest.mark.parametrize("query", [f"?page_size={HUGE}", "?page_size=-1", "?page_size=x", "?page_size=%00"])
def test_bad_page_sizes_fall_back_to_the_default(api, agent, query):
    assert api.get("admin", f"/api/v1/agents/{query}").status_code == 200


@pytest.mark.parametrize(
    "query",
    [
        f"?agent={HUGE}",
        "?agent=-1",
        "?kind=%00",
        "?used=%00",
        "?archived=maybe",
        "?agent=abc",
    ],
)
def test_bad_filters_are_400_or_ignored(api, agent, query):
    response = api.get("admin", f"/api/v1/checks/{query}")
    assert response.status_code in (200, 400)
    assert response["Content-Type"].startswith("application/json")


def test_throttle_answers_429_with_retry_after(api, agent, monkeypatch):
    from teams.throttling import TokenRateThrottle

    # DRF reads rates when the class is defined: override them on the class.
    monkeypatch.setattr(TokenRateThrottle, "THROTTLE_RATES", {"token": "3/min"})
    codes = [api.get("member", "/api/v1/agents/").status_code for _ in range(3)]
    assert codes == [200, 200, 200]
    throttled = api.get("member", "/api/v1/agents/")
    assert throttled.status_code == 429
    assert 1 <= int(throttled["Retry-After"]) <= 60
    assert "detail" in throttled.json()
    # Per token: another token of the same server still has its budget.
    assert api.get("viewer", "/api/v1/agents/").status_code == 200


def test_validation_error_body_is_a_message_list_per_field(api, library):
    response = api.post(
        "member", "/api/v1/tests/", {"test_set": library["test_set"].pk, "name": "", "scenarios": []}
    )
    assert response.status_code == 400
    body = response.json()
    assert set(body) == {"name"} or set(body) >= {"name"}
    assert all(isinstance(v, list) and all(isinstance(m, str) for m in v) for v in body.values()), json.dumps(
        body
    )


def test_every_invalid_test_field_is_reported_at_once_each_on_its_field(api, library):
    body = {
        "test_set": library["test_set"].pk,
        "name": "x",
        "scenarios": [{"input": "a"}, {"input": "b"}],
        "samples_per_scenario": 6,
        "min_valid_per_scenario": 9,
        "required_pass_rate": 0,
    }
    response = api.post("member", "/api/v1/tests/", body)
    assert response.status_code == 400
    errors = response.json()
    assert sorted(errors) == ["min_valid_per_scenario", "required_pass_rate", "samples_per_scenario"]
    assert all(len(messages) == 1 for messages in errors.values())
    assert errors["samples_per_scenario"] == [
        "2 scenarios × 6 samples = 12 is over the limit of 10 samples per run"
    ]
    assert errors["min_valid_per_scenario"] == ["must be between 1 and the samples per scenario (6)"]

    test = library["test"]
    edit = {"samples_per_scenario": 11, "min_valid_per_scenario": 12, "required_pass_rate": 101}
    response = api.patch("member", f"/api/v1/tests/{test.pk}/", edit)
    assert response.status_code == 400
    assert sorted(response.json()) == sorted(edit)


def test_shape_errors_and_rule_errors_are_reported_together(api, library):
    body = {
        "test_set": library["test_set"].pk,
        "name": "",
        "scenarios": [{"input": "   "}, {"messages": [{"role": "assistant", "content": "hi"}]}],
        "checks": [{"check": 987654}],
        "required_pass_rate": 0,
    }
    response = api.post("member", "/api/v1/tests/", body)
    assert response.status_code == 400
    errors = response.json()
    assert set(errors) >= {
        "name", "checks", "required_pass_rate", "scenarios.0.input", "scenarios.1.messages"
    }
    assert "scenarios" not in errors
    assert not library["test_set"].tests.exclude(pk=library["test"].pk).exists()


def test_a_check_names_its_bad_name_and_every_bad_config_field_at_once(api, library):
    body = {"agent": library["agent"].pk, "name": "", "kind": "tool_usage",
            "config": {"tool": " ", "mode": "exactly"}}
    response = api.post("member", "/api/v1/checks/", body)
    assert response.status_code == 400
    assert sorted(response.json()) == ["config.count", "config.tool", "name"]
    check = library["check"]
    response = api.patch("member", f"/api/v1/checks/{check.pk}/", {"name": "", "config": {"text": ""}})
    assert response.status_code == 400
    assert sorted(response.json()) == ["config.text", "name"]


def test_a_config_number_over_its_bound_is_400_naming_the_field_and_the_bound(api, library):
    config = {"tool": "t", "count": HUGE}
    body = {"agent": library["agent"].pk, "name": "x", "kind": "tool_usage", "config": config}
    response = api.post("member", "/api/v1/checks/", body)
    assert response.status_code == 400
    assert response.json() == {"config.count": ["must be at most 1,000"]}
    check = library["check"]
    edit = {"kind": "latency", "config": {"max_ms": HUGE}}
    response = api.patch("member", f"/api/v1/checks/{check.pk}/", edit)
    assert response.status_code == 400
    assert response.json() == {"config.max_ms": ["must be at most 600,000"]}
