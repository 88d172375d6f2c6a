"""REST API v1 for tasks, monitors and evaluations, through real token authentication."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from monitors import services as monitoring
from monitors.models import Evaluation, Monitor, Task
from runs.models import CheckResult, Outcome
from tests.monitors.conftest import task_item

V1 = "/api/v1"


def post_tasks(client, agent, body, capture):
    with capture(execute=True) as callbacks:
        response = client.post(f"{V1}/agents/{agent.pk}/tasks/", body, format="json")
    return response, callbacks


def test_ingest_batch_is_idempotent(api, agent, member, checks, django_capture_on_commit_callbacks):
    monitor = api.post(
        f"{V1}/monitors/",
        {"agent": agent.pk, "name": "Live", "checks": [checks[0].pk], "sample_rate": 100},
        format="json",
    )
    assert monitor.status_code == 201, monitor.json()
    batch = [task_item(i) for i in range(200)]
    first, callbacks = post_tasks(api, agent, batch, django_capture_on_commit_callbacks)
    assert first.status_code == 201, first.json()
    assert first.json()["created"] == 200 and first.json()["sampled"] == 200
    assert len(callbacks) == 1  # one background job per posted batch, sent after commit
    again, callbacks = post_tasks(api, agent, batch, django_capture_on_commit_callbacks)
    assert again.status_code == 200
    assert again.json() == {"created": 0, "existing": 200, "sampled": 0, "ids": first.json()["ids"]}
    assert callbacks == []
    assert Task.objects.count() == 200
    assert CheckResult.objects.filter(monitor_id=monitor.json()["id"]).count() == 200


def test_ingest_one_task_object(api, agent, django_capture_on_commit_callbacks):
    response, _ = post_tasks(api, agent, task_item(7), django_capture_on_commit_callbacks)
    assert response.status_code == 201
    assert response.json()["ids"] == [Task.objects.get(external_id="conv-7").pk]


def test_ingest_validation_errors_name_index_and_field(api, agent, django_capture_on_commit_callbacks):
    batch = [task_item(i) for i in range(5)]
    batch[2]["completed_at"] = "not a date"
    batch[4]["messages"] = [{"role": "user", "content": 42}]
    del batch[3]["external_id"]
    response, _ = post_tasks(api, agent, batch, django_capture_on_commit_callbacks)
    assert response.status_code == 400
    body = response.json()
    assert set(body) == {"items.2.completed_at", "items.3.external_id", "items.4.messages.0.content"}
    assert all(isinstance(v, list) and v[0] for v in body.values())
    single = task_item(1, latency_ms="slow")
    response, _ = post_tasks(api, agent, single, django_capture_on_commit_callbacks)
    assert response.status_code == 400 and "latency_ms" in response.json()
    response, _ = post_tasks(api, agent, "hello", django_capture_on_commit_callbacks)
    assert response.status_code == 400 and "items" in response.json()
    assert not Task.objects.exists()


def test_ingest_batch_limit(api, agent, settings, django_capture_on_commit_callbacks):
    settings.EVALCONSOLE_MAX_TASK_BATCH = 10
    response, _ = post_tasks(
        api, agent, [task_item(i) for i in range(11)], django_capture_on_commit_callbacks
    )
    assert response.status_code == 400
    assert "limit of 10" in response.json()["items"][0]


def test_ingest_permissions(api_as, agent, viewer, outsider, member, django_capture_on_commit_callbacks):
    response, _ = post_tasks(api_as(viewer), agent, [task_item(1)], django_capture_on_commit_callbacks)
    assert response.status_code == 403
    response, _ = post_tasks(api_as(outsider), agent, [task_item(1)], django_capture_on_commit_callbacks)
    assert response.status_code == 404  # another team's agent does not exist for them
    response, _ = post_tasks(
        api_as(member, can_write=False), agent, [task_item(1)], django_capture_on_commit_callbacks
    )
    assert response.status_code == 403
    response = api_as(member).post(f"{V1}/agents/abc/tasks/", [task_item(1)], format="json")
    assert response.status_code == 404
    assert not Task.objects.exists()


def test_task_list_filters_and_detail(
    api, api_as, agent, member, outsider, checks, django_capture_on_commit_callbacks
):
    api.post(
        f"{V1}/monitors/",
        {"agent": agent.pk, "name": "Refund", "checks": [checks[1].pk], "sample_rate": 100},
        format="json",
    )
    items = [task_item(i, output="refund ok" if i % 2 else "nope") for i in range(6)]
    post_tasks(api, agent, items, django_capture_on_commit_callbacks)
    listed = api.get(f"{V1}/tasks/", {"agent": agent.pk}).json()
    assert listed["count"] == 6 and listed["results"][0]["external_id"] == "conv-5"  # newest first
    assert api.get(f"{V1}/tasks/", {"has_failures": "true"}).json()["count"] == 3
    assert api.get(f"{V1}/tasks/", {"q": "c3"}).json()["count"] == 1
    assert (
        api.get(
            f"{V1}/tasks/",
            {"completed_after": "2025-01-01T00:02:00Z", "completed_before": "2025-01-01T00:04:00Z"},
        ).json()["count"]
        == 2
    )
    assert api.get(f"{V1}/tasks/", {"has_failures": "maybe"}).status_code == 400
    task_id = listed["results"][0]["id"]
    detail = api.get(f"{V1}/tasks/{task_id}/").json()
    assert detail["messages"][0]["role"] == "user"
    assert [r["outcome"] for r in detail["results"]] == ["pass"]
    assert detail["results"][0]["version"] == 1
    other = api_as(outsider)
    assert other.get(f"{V1}/tasks/{task_id}/").status_code == 404
    assert other.get(f"{V1}/tasks/").json()["count"] == 0


def test_monitor_crud_and_roles(api, api_as, agent, member, viewer, outsider, admin_user, checks):
    created = api.post(
        f"{V1}/monitors/",
        {"agent": agent.pk, "name": "Live", "checks": [c.pk for c in checks], "sample_rate": "12.5"},
        format="json",
    )
    assert created.status_code == 201, created.json()
    body = created.json()
    assert body["sample_rate"] == 12.5 and body["checks"] == sorted(c.pk for c in checks) or body["checks"]
    assert {c["version"] for c in body["checks_detail"]} == {1}
    url = f"{V1}/monitors/{body['id']}/"
    changed = api.patch(url, {"sample_rate": 50, "checks": [checks[0].pk]}, format="json")
    assert changed.status_code == 200, changed.json()
    assert changed.json()["sample_rate"] == 50 and changed.json()["checks"] == [checks[0].pk]
    bad = api.post(f"{V1}/monitors/", {"agent": agent.pk, "name": "x", "sample_rate": 150}, format="json")
    assert bad.status_code == 400 and "sample_rate" in bad.json()
    bad = api.post(
        f"{V1}/monitors/",
        {"agent": agent.pk, "name": "x", "sample_rate": 5, "checks": [987654]},
        format="json",
    )
    assert bad.status_code == 400 and "checks.0.check" in bad.json()
    assert api_as(viewer).get(url).status_code == 200
    assert api_as(viewer).patch(url, {"name": "y"}, format="json").status_code == 403
    assert api_as(outsider).get(url).status_code == 404
    assert api_as(outsider).patch(url, {"name": "y"}, format="json").status_code == 404
    assert (
        api_as(outsider)
        .post(f"{V1}/monitors/", {"agent": agent.pk, "name": "x", "sample_rate": 5}, format="json")
        .status_code
        == 400
    )  # agent "does not exist" for them
    assert api.delete(url).status_code == 403  # members create, admins delete
    assert api_as(admin_user).delete(url).status_code == 204
    assert not Monitor.objects.exists()


def test_monitor_results_endpoint(api, agent, member, checks, django_capture_on_commit_callbacks):
    from datetime import UTC, datetime, timedelta

    monitor = api.post(
        f"{V1}/monitors/",
        {"agent": agent.pk, "name": "Live", "checks": [checks[0].pk], "sample_rate": 100},
        format="json",
    ).json()
    now = datetime.now(UTC)
    post_tasks(
        api,
        agent,
        [task_item(i, when=now - timedelta(hours=2), output="answer" if i else "x") for i in range(4)],
        django_capture_on_commit_callbacks,
    )
    body = api.get(f"{V1}/monitors/{monitor['id']}/results/", {"bucket": "hour"}).json()
    assert [s["label"] for s in body["series"]] == ["Says answer v1"]
    point = body["series"][0]["points"][0]
    assert (point["pass"], point["fail"], point["pass_rate"]) == (3, 1, 75.0)
    assert sum(v["tasks"] for v in body["volume"]) == 4
    assert api.get(f"{V1}/monitors/{monitor['id']}/results/", {"bucket": "week"}).status_code == 400
    assert (
        api.get(f"{V1}/monitors/{monitor['id']}/results/", {"bucket": "day", "days": "0"}).status_code == 400
    )


def expected_grid(i: int) -> tuple[str, str, str]:
    """The outcomes of the 3 grid checks on task i (see test_evaluation_grid_50_tasks_x_3_checks)."""
    includes = "pass" if i % 2 == 0 or i % 5 == 0 else "fail"
    equals = "pass" if i % 5 == 0 else "fail"
    tools = "indeterminate" if i % 3 == 0 else ("pass" if i % 3 == 1 else "fail")
    return includes, equals, tools


def grid_items():
    items = []
    for i in range(50):
        output = "refund approved" if i % 5 == 0 else ("refund pending" if i % 2 == 0 else "no")
        if i % 5 == 0 and i % 2:
            output = "refund approved"
        tool_calls = (
            None if i % 3 == 0 else ([{"name": "lookup_order", "status": "succeeded"}] if i % 3 == 1 else [])
        )
        items.append(task_item(i, output=output, tool_calls=tool_calls))
    return items


def grid_checks(make_check):
    return [
        make_check("A includes refund", text="refund"),
        make_check("B equals approved", kind="text_equals", expected="refund approved"),
        make_check("C looks up order", kind="tool_usage", tool="lookup_order", mode="at_least", count=1),
    ]


def test_evaluation_grid_50_tasks_x_3_checks(
    api, agent, member, make_check, django_capture_on_commit_callbacks
):
    checks = grid_checks(make_check)
    ingest, _ = post_tasks(api, agent, grid_items(), django_capture_on_commit_callbacks)
    ids = ingest.json()["ids"]
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(
            f"{V1}/evaluations/",
            {"tasks": ids, "checks": [c.pk for c in checks], "name": "grid"},
            format="json",
        )
    assert response.status_code == 202, response.json()
    evaluation_id = response.json()["id"]
    body = api.get(f"{V1}/evaluations/{evaluation_id}/").json()
    assert body["status"] == "completed" and body["task_count"] == 50
    assert [v["name"] for v in body["check_versions"]] == [c.name for c in checks]
    assert len(body["grid"]) == 50
    by_external = {row["external_id"]: row["outcomes"] for row in body["grid"]}
    for i in range(50):
        row = by_external[f"conv-{i}"]
        assert tuple(row[str(c.pk)] for c in checks) == expected_grid(i), i
    # Totals per check agree with the grid.
    a = body["counts"][str(checks[0].pk)]
    assert (a["pass"], a["fail"]) == (30, 20)  # even i, or a multiple of 5
    assert CheckResult.objects.filter(evaluation_id=evaluation_id).count() == 150
    results = api.get(f"{V1}/evaluations/{evaluation_id}/results/", {"page_size": 200}).json()
    assert results["count"] == 150 and results["results"][0]["explanation"]
    # Each result names its task and check version (joined columns of the list: monitors.api).
    shown = {(r["external_id"], r["check"], r["version"], r["name"]) for r in results["results"]}
    assert shown == {(f"conv-{i}", c.pk, c.version, c.name) for i in range(50) for c in checks}
    url = f"{V1}/evaluations/{evaluation_id}/results/"
    with CaptureQueriesContext(connection) as one:
        api.get(url, {"page_size": 1})
    # A full page of 150 is counted as a page of 1 is.
    with CaptureQueriesContext(connection) as all_of_them:
        api.get(url, {"page_size": 150})
    assert len(one) == len(all_of_them)
    # A first page that is not full is counted by its rows.
    with CaptureQueriesContext(connection) as not_full:
        api.get(url, {"page_size": 200})
    assert len(not_full) == len(one) - 1
    assert not any("COUNT(" in query["sql"] for query in not_full.captured_queries)


def test_evaluation_api_by_filter_and_errors(
    api, api_as, agent, member, viewer, outsider, checks, django_capture_on_commit_callbacks
):
    post_tasks(api, agent, [task_item(i) for i in range(10)], django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(
            f"{V1}/evaluations/",
            {"agent": agent.pk, "filter": {"q": "c1"}, "checks": [checks[0].pk]},
            format="json",
        )
    assert response.status_code == 202, response.json()
    assert response.json()["task_count"] == 2  # c1: i = 1, 8
    assert Evaluation.objects.get().status == "completed"
    bad = api.post(
        f"{V1}/evaluations/", {"tasks": [1], "filter": {}, "checks": [checks[0].pk]}, format="json"
    )
    assert bad.status_code == 400 and "tasks" in bad.json()
    bad = api.post(f"{V1}/evaluations/", {"tasks": [999999], "checks": [checks[0].pk]}, format="json")
    assert bad.status_code == 400 and "tasks.0" in bad.json()
    some = Task.objects.values_list("pk", flat=True)[0]
    assert (
        api_as(viewer)
        .post(f"{V1}/evaluations/", {"tasks": [some], "checks": [checks[0].pk]}, format="json")
        .status_code
        == 403
    )
    assert (
        api_as(outsider)
        .post(f"{V1}/evaluations/", {"tasks": [some], "checks": [checks[0].pk]}, format="json")
        .status_code
        == 400
    )  # their task "does not exist"
    evaluation_id = response.json()["id"]
    assert api_as(outsider).get(f"{V1}/evaluations/{evaluation_id}/").status_code == 404
    assert api_as(viewer).get(f"{V1}/evaluations/{evaluation_id}/").status_code == 200


@pytest.mark.parametrize("n", [1, 30])
def test_api_list_queries_do_not_grow(
    api, agent, member, checks, n, django_assert_max_num_queries, django_capture_on_commit_callbacks
):
    from monitors import services as monitoring

    for i in range(n):
        monitoring.create_monitor(
            agent=agent, by=member, name=f"m{i}", checks=[c.pk for c in checks], sample_rate=1
        )
    post_tasks(api, agent, [task_item(i) for i in range(n)], django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        monitoring.launch_evaluation(
            agent=agent,
            by=member,
            check_ids=[checks[0].pk],
            task_ids=list(Task.objects.values_list("pk", flat=True)),
        )
    # token lookup + last_used update at most, count, page (+ prefetches): fixed whatever n is.
    for url, limit in ((f"{V1}/tasks/", 4), (f"{V1}/monitors/", 5), (f"{V1}/evaluations/", 5)):
        with django_assert_max_num_queries(limit):
            assert api.get(url).status_code == 200


def test_ingest_rejects_text_no_database_can_store(api, agent, django_capture_on_commit_callbacks):
    body = (
        '[{"external_id": "a", "completed_at": "2025-01-01T00:00:00Z", "output": "nul \\u0000 here"},'
        ' {"external_id": "b", "completed_at": "2025-01-01T00:00:00Z", "metadata": {"k": "\\ud800"}},'
        ' {"external_id": "c", "completed_at": "2025-01-01T00:00:00Z",'
        ' "output": "a literal \\\\u0000 is fine"}]'
    )
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(f"{V1}/agents/{agent.pk}/tasks/", body, content_type="application/json")
    assert response.status_code == 400
    assert set(response.json()) == {"items.0.output", "items.1.metadata"}
    assert "NUL" in response.json()["items.0.output"][0]


def _evalconsole_request(text: str) -> dict:
    return {
        "protocol": "evalconsole/1",
        "run": "live",
        "sample": "1",
        "attempt": 1,
        "scenario": {"name": "live", "input": text, "messages": [{"role": "user", "content": text}]},
    }


def _demo_agent_reply(text: str) -> dict:
    """The demo agent's evalconsole/1 reply body, over HTTP, exactly as it sent it."""
    import httpx

    from agents.demo_agent import DemoAgent

    with DemoAgent() as demo:
        return httpx.post(demo.url, json=_evalconsole_request(text), timeout=10).json()


def _python_adapter_reply(text: str) -> dict:
    """The Python adapter's reply body for an agent that calls one recorded tool."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "adapters" / "python"))
    from evalconsole_adapter import ToolRecorder, wrap

    recorder = ToolRecorder()

    @recorder.tool
    def lookup_order(order_id: str) -> dict:
        return {"status": "shipped"}

    def agent(messages, scenario) -> str:
        return f"Order EC-1042 is {lookup_order('EC-1042')['status']}."

    return json.loads(json.dumps(wrap(agent, recorder=recorder)(_evalconsole_request(text))))


@pytest.mark.parametrize(
    "produce", [_demo_agent_reply, _python_adapter_reply], ids=["demo-agent", "python-adapter"]
)
def test_an_agent_reply_body_posts_as_a_task_with_its_tool_calls(
    produce, api, agent, member, make_check, django_capture_on_commit_callbacks
):
    """The protocol's `toolCalls` is accepted as is (issue 14, 15): stored and evaluated."""
    used = make_check("Looks up the order", kind="tool_usage", tool="lookup_order", mode="at_least", count=1)
    monitoring.create_monitor(agent=agent, by=member, name="All", checks=[used.pk], sample_rate=100)
    reply = produce("Where is my order EC-1042?")
    assert "toolCalls" in reply and "tool_calls" not in reply  # the wire format, untouched
    task = {**reply, "external_id": "reply-1", "completed_at": "2025-01-01T12:00:00Z"}
    response, _ = post_tasks(api, agent, task, django_capture_on_commit_callbacks)
    assert response.status_code == 201, response.json()
    stored = Task.objects.get(external_id="reply-1")
    assert stored.tool_calls == reply["toolCalls"] and stored.output == reply["output"]
    assert [c["name"] for c in stored.tool_calls][:1] == ["lookup_order"]
    if "trace" in reply:
        assert stored.trace == reply["trace"]
    result = CheckResult.objects.get(task=stored)
    assert result.outcome == Outcome.PASS, result.explanation
    detail = api.get(f"{V1}/tasks/{stored.pk}/").json()
    assert detail["tool_calls"] == reply["toolCalls"]


def test_tool_calls_in_both_spellings_is_a_400_naming_both(api, agent, django_capture_on_commit_callbacks):
    calls = [{"name": "lookup_order", "status": "succeeded"}]
    item = task_item(1, tool_calls=calls, toolCalls=calls)
    response, _ = post_tasks(api, agent, item, django_capture_on_commit_callbacks)
    assert response.status_code == 400
    (message,) = response.json()["tool_calls"]
    assert "toolCalls" in message and "tool_calls" in message
    bad = task_item(2, tool_calls=None, toolCalls="lookup_order")
    response, _ = post_tasks(
        api, agent, {k: v for k, v in bad.items() if k != "tool_calls"}, django_capture_on_commit_callbacks
    )
    assert response.status_code == 400 and "toolCalls" in response.json()  # named as it was sent
    assert not Task.objects.exists()


def test_openapi_documents_both_spellings_of_tool_calls(db):
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    item = schema["components"]["schemas"]["TaskItemRequest"]["properties"]
    assert {"tool_calls", "toolCalls", "output", "messages", "trace"} <= set(item)
    assert "toolCalls" in item["tool_calls"]["description"]
    ingest = schema["paths"]["/api/v1/agents/{agent_id}/tasks/"]["post"]["description"]
    assert "toolCalls" in ingest and "tool_calls" in ingest
