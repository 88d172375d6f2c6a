"""Ingestion, sampling, monitor evaluation, evaluations and retention through the service layer."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from checks.services import edit_check
from core.errors import PermissionDenied, ValidationFailed
from monitors import services as monitoring
from monitors.models import Evaluation, Task
from runs.models import CheckResult
from tests.monitors.conftest import task_item


def ingest(agent, by, items, capture):
    with capture(execute=True) as callbacks:
        result = monitoring.ingest_tasks(agent=agent, by=by, items=items)
    return result, callbacks


# ---------------------------------------------------------------- sampling


@pytest.mark.parametrize("rate", ["10", "1", "33.33", "50", "0.5"])
def test_sampling_rate_over_10000_ids_is_within_one_point(rate):
    picked = sum(monitoring.is_sampled(7, f"task-{i}", rate) for i in range(10_000))
    assert abs(picked / 100 - float(rate)) <= 1.0


def test_sampling_is_deterministic_per_monitor_and_task():
    first = [monitoring.sample_bucket(3, f"t{i}") for i in range(1000)]
    assert first == [monitoring.sample_bucket(3, f"t{i}") for i in range(1000)]
    # Another monitor of the same agent picks a different (independent) subset.
    assert first != [monitoring.sample_bucket(4, f"t{i}") for i in range(1000)]
    assert (
        monitoring.rate_threshold(Decimal("0")) == 0 and monitoring.rate_threshold(Decimal("100")) == 10_000
    )
    assert all(monitoring.is_sampled(3, f"t{i}", 100) for i in range(100))
    assert not any(monitoring.is_sampled(3, f"t{i}", 0) for i in range(100))


def test_ingested_sample_over_10000_tasks_is_within_one_point_and_stable(
    agent, member, checks, django_capture_on_commit_callbacks
):
    monitor = monitoring.create_monitor(
        agent=agent, by=member, name="Live", checks=[checks[0].pk], sample_rate=10
    )
    for start in range(0, 10_000, 1000):
        items = [task_item(i) for i in range(start, start + 1000)]
        ingest(agent, member, items, django_capture_on_commit_callbacks)
    sampled = Task.objects.filter(agent=agent, sampled=True)
    assert abs(sampled.count() / 100 - 10) <= 1.0
    # The decision is the hash's: recomputing it gives exactly the stored set.
    expected = {f"conv-{i}" for i in range(10_000) if monitoring.is_sampled(monitor.pk, f"conv-{i}", 10)}
    assert set(sampled.values_list("external_id", flat=True)) == expected
    # Every sampled task was evaluated (synchronously in tests) with the monitor's check, once.
    assert CheckResult.objects.filter(monitor=monitor).count() == len(expected)


# ---------------------------------------------------------------- ingestion


def test_reposting_a_batch_creates_no_duplicates(agent, member, checks, django_capture_on_commit_callbacks):
    monitor = monitoring.create_monitor(
        agent=agent, by=member, name="All", checks=[c.pk for c in checks], sample_rate=100
    )
    items = [task_item(i) for i in range(1000)]
    first, callbacks = ingest(agent, member, items, django_capture_on_commit_callbacks)
    assert (first.created, first.existing, len(set(first.ids))) == (1000, 0, 1000)
    assert len(callbacks) == 1  # one background job for the whole batch, after commit
    results = CheckResult.objects.filter(monitor=monitor).count()
    assert results == 2000

    again, callbacks = ingest(agent, member, items, django_capture_on_commit_callbacks)
    assert (again.created, again.existing, again.ids) == (0, 1000, first.ids)
    assert callbacks == []  # nothing new, nothing to evaluate
    # A batch overlapping the first one only adds the new ids.
    mixed, _ = ingest(
        agent, member, [task_item(i) for i in range(900, 1100)], django_capture_on_commit_callbacks
    )
    assert (mixed.created, mixed.existing) == (100, 100)
    assert mixed.ids[:100] == first.ids[900:]
    assert Task.objects.filter(agent=agent).count() == 1100
    assert CheckResult.objects.filter(monitor=monitor).count() == 2200


def test_same_external_id_in_two_agents_is_two_tasks(
    agent, team, admin_user, member, django_capture_on_commit_callbacks
):
    from agents.services import create_agent

    other = create_agent(team=team, by=admin_user, name="Other bot", endpoint_url="http://127.0.0.1:9/other")
    ingest(agent, member, [task_item(1)], django_capture_on_commit_callbacks)
    result, _ = ingest(other, member, [task_item(1)], django_capture_on_commit_callbacks)
    assert result.created == 1


def test_ingestion_validation_names_item_index_and_field(agent, member):
    items = [task_item(0), task_item(1), task_item(2), task_item(3), task_item(4)]
    items[1]["completed_at"] = "yesterday"
    items[2]["messages"] = [{"role": "robot", "content": "hi"}]
    items[3]["external_id"] = "conv-0"
    items[4]["latencyMs"] = 5  # (toolCalls, the protocol's key, is accepted: see test_api)
    with pytest.raises(ValidationFailed) as exc:
        monitoring.ingest_tasks(agent=agent, by=member, items=items)
    errors = exc.value.errors
    assert "ISO 8601" in errors["items.1.completed_at"]
    assert "items.2.messages.0.role" in errors
    assert "also appears in item 0" in errors["items.3.external_id"]
    assert "did you mean 'latency_ms'" in errors["items.4.latencyMs"]
    assert "items.0.completed_at" not in errors
    assert not Task.objects.exists()  # all or nothing


def test_ingestion_limits_and_roles(agent, member, viewer, outsider, settings):
    settings.EVALCONSOLE_MAX_TASK_BATCH = 3
    with pytest.raises(ValidationFailed) as exc:
        monitoring.ingest_tasks(agent=agent, by=member, items=[task_item(i) for i in range(4)])
    assert "limit of 3" in exc.value.errors["items"]
    with pytest.raises(ValidationFailed):
        monitoring.ingest_tasks(agent=agent, by=member, items=[])
    for user in (viewer, outsider):
        with pytest.raises(PermissionDenied):
            monitoring.ingest_tasks(agent=agent, by=user, items=[task_item(1)])


def test_ingestion_keeps_evidence_as_reported(agent, member, django_capture_on_commit_callbacks):
    items = [
        task_item(1, tool_calls=None),
        task_item(2, tool_calls=[]),
        task_item(3, completed_at="2025-02-01T10:00:00"),
    ]
    result, _ = ingest(agent, member, items, django_capture_on_commit_callbacks)
    tasks = {t.external_id: t for t in Task.objects.filter(pk__in=result.ids)}
    assert tasks["conv-1"].tool_calls is None and tasks["conv-2"].tool_calls == []
    assert tasks["conv-3"].completed_at == datetime(2025, 2, 1, 10, tzinfo=UTC)  # no offset = UTC
    assert tasks["conv-1"].metadata == {"customer": "c1", "plan": "pro"}


# ---------------------------------------------------------------- monitors


def test_failures_mark_tasks_and_inactive_monitors_sample_nothing(
    agent, member, checks, django_capture_on_commit_callbacks
):
    monitor = monitoring.create_monitor(
        agent=agent, by=member, name="Refunds", checks=[checks[1].pk], sample_rate=100
    )
    ingest(
        agent,
        member,
        [task_item(1, output="refund done"), task_item(2, output="no")],
        django_capture_on_commit_callbacks,
    )
    assert dict(Task.objects.values_list("external_id", "has_failures")) == {"conv-1": False, "conv-2": True}
    monitoring.update_monitor(monitor=monitor, by=member, active=False)
    result, callbacks = ingest(agent, member, [task_item(3)], django_capture_on_commit_callbacks)
    assert callbacks == [] and not Task.objects.get(pk=result.ids[0]).sampled


def test_monitor_validation(agent, member, checks, viewer):
    with pytest.raises(ValidationFailed) as exc:
        monitoring.create_monitor(agent=agent, by=member, name="x", checks=[checks[0].pk], sample_rate="101")
    assert "sample_rate" in exc.value.errors
    with pytest.raises(ValidationFailed) as exc:
        monitoring.create_monitor(agent=agent, by=member, name="x", sample_rate="1.234")
    assert "two decimal" in exc.value.errors["sample_rate"]
    with pytest.raises(ValidationFailed) as exc:
        monitoring.create_monitor(agent=agent, by=member, name="", sample_rate=5)
    assert "name" in exc.value.errors
    with pytest.raises(ValidationFailed) as exc:
        monitoring.create_monitor(agent=agent, by=member, name="x", checks=[999999])
    assert "checks.0.check" in exc.value.errors
    with pytest.raises(PermissionDenied):
        monitoring.create_monitor(agent=agent, by=viewer, name="x")
    with pytest.raises(ValidationFailed) as exc:  # every problem at once, a monitor needs a check
        monitoring.create_monitor(agent=agent, by=member, name="", sample_rate="101")
    assert set(exc.value.errors) == {"name", "sample_rate", "checks"}
    monitor = monitoring.create_monitor(
        agent=agent, by=member, name="x", checks=[checks[0].pk], sample_rate="0.25"
    )
    assert monitor.sample_rate == Decimal("0.25")
    with pytest.raises(ValidationFailed) as exc:
        monitoring.update_monitor(monitor=monitor, by=member, checks=[], sample_rate="-1")
    assert set(exc.value.errors) == {"sample_rate", "checks"}
    with pytest.raises(PermissionDenied):
        monitoring.delete_monitor(monitor=monitor, by=member)  # deleting is for admins


def test_edited_check_shows_results_of_both_versions(
    agent, member, make_check, django_capture_on_commit_callbacks
):
    check = make_check("Mentions answer", text="answer")
    now = datetime(2025, 3, 1, 12, tzinfo=UTC)
    monitor = monitoring.create_monitor(
        agent=agent, by=member, name="Live", checks=[check.pk], sample_rate=100
    )
    ingest(
        agent,
        member,
        [task_item(i, when=now - timedelta(hours=3) + timedelta(minutes=i)) for i in range(5)],
        django_capture_on_commit_callbacks,
    )
    edit_check(check=check, by=member, config={"text": "question"})
    ingest(
        agent,
        member,
        [task_item(i, when=now - timedelta(hours=1) + timedelta(minutes=i)) for i in range(5, 9)],
        django_capture_on_commit_callbacks,
    )

    board = monitoring.monitor_dashboard(monitor, bucket="hour", days=1, now=now)
    labels = {s.label: s for s in board.series}
    assert set(labels) == {"Mentions answer v1", "Mentions answer v2"}
    assert labels["Mentions answer v1"].totals["pass"] == 5 and not labels["Mentions answer v1"].current
    assert labels["Mentions answer v2"].totals["fail"] == 4 and labels["Mentions answer v2"].current
    assert board.total_tasks == 9 and board.total_evaluated == 9
    chart = board.chart_data()
    assert [s["label"] for s in chart["series"]] == ["Mentions answer v1", "Mentions answer v2"]
    assert len(chart["x"]) == 2  # two hour buckets
    assert chart["series"][0]["values"] == [100.0, None] and chart["series"][1]["values"] == [None, 0.0]


def test_redelivered_monitor_batch_is_harmless(agent, member, checks, django_capture_on_commit_callbacks):
    from monitors.tasks import evaluate_monitor_batch

    monitor = monitoring.create_monitor(
        agent=agent, by=member, name="All", checks=[checks[0].pk], sample_rate=100
    )
    result, _ = ingest(agent, member, [task_item(i) for i in range(10)], django_capture_on_commit_callbacks)
    assert evaluate_monitor_batch([(monitor.pk, result.ids)]) == 10  # evaluated again, nothing stored twice
    assert CheckResult.objects.filter(monitor=monitor).count() == 10


# ---------------------------------------------------------------- evaluations


def test_evaluation_by_filter_freezes_versions(agent, member, checks, django_capture_on_commit_callbacks):
    ingest(
        agent,
        member,
        [task_item(i, output="refund" if i % 3 == 0 else "no") for i in range(12)],
        django_capture_on_commit_callbacks,
    )
    with django_capture_on_commit_callbacks(execute=True):
        evaluation = monitoring.launch_evaluation(
            agent=agent, by=member, check_ids=[checks[1].pk], filters={"q": '"pro"'}, name="Pro plan"
        )
    evaluation.refresh_from_db()
    assert evaluation.status == Evaluation.Status.COMPLETED
    assert evaluation.tasks.count() == 6  # odd i are on the pro plan
    assert list(evaluation.check_versions.all()) == [checks[1].current_version]
    edit_check(check=checks[1], by=member, config={"text": "nothing"})
    grid = monitoring.evaluation_grid(evaluation)
    assert [v.number for v in grid.versions] == [1]
    assert grid.done == 6 and grid.counts[checks[1].current_version_id]["pass"] == 2  # i = 3, 9


def test_evaluation_validation(
    agent, member, checks, other_team, outsider, django_capture_on_commit_callbacks
):
    result, _ = ingest(agent, member, [task_item(1)], django_capture_on_commit_callbacks)
    with pytest.raises(ValidationFailed) as exc:
        monitoring.launch_evaluation(agent=agent, by=member, check_ids=[], task_ids=result.ids)
    assert "checks" in exc.value.errors
    with pytest.raises(ValidationFailed) as exc:
        monitoring.launch_evaluation(
            agent=agent, by=member, check_ids=[checks[0].pk], task_ids=[*result.ids, 424242]
        )
    assert "tasks.1" in exc.value.errors
    with pytest.raises(ValidationFailed) as exc:
        monitoring.launch_evaluation(
            agent=agent, by=member, check_ids=[checks[0].pk], filters={"q": "nomatch"}
        )
    assert "tasks" in exc.value.errors
    with pytest.raises(PermissionDenied):
        monitoring.launch_evaluation(agent=agent, by=outsider, check_ids=[checks[0].pk], task_ids=result.ids)


def test_rerun_evaluation_skips_done_tasks(agent, member, checks, django_capture_on_commit_callbacks):
    result, _ = ingest(agent, member, [task_item(i) for i in range(4)], django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        evaluation = monitoring.launch_evaluation(
            agent=agent, by=member, check_ids=[c.pk for c in checks], task_ids=result.ids
        )
    assert CheckResult.objects.filter(evaluation=evaluation).count() == 8
    Evaluation.objects.filter(pk=evaluation.pk).update(status=Evaluation.Status.RUNNING)  # a worker died
    assert monitoring.run_evaluation(evaluation_id=evaluation.pk) == 0
    assert CheckResult.objects.filter(evaluation=evaluation).count() == 8
    assert monitoring.run_evaluation(evaluation_id=evaluation.pk) == 0  # completed: not claimed again


# ---------------------------------------------------------------- retention


def test_delete_old_tasks_in_batches(agent, member, checks, django_capture_on_commit_callbacks):
    now = datetime(2025, 6, 1, tzinfo=UTC)
    monitoring.create_monitor(agent=agent, by=member, name="All", checks=[checks[0].pk], sample_rate=100)
    old = [task_item(i, when=now - timedelta(days=40, minutes=i)) for i in range(25)]
    new = [task_item(100 + i, when=now - timedelta(days=5)) for i in range(5)]
    result, _ = ingest(agent, member, old + new, django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        monitoring.launch_evaluation(agent=agent, by=member, check_ids=[checks[0].pk], task_ids=result.ids)
    batches = []
    assert monitoring.delete_old_tasks(days=30, batch_size=10, now=now, on_batch=batches.append) == 25
    assert batches == [10, 20, 25]
    assert Task.objects.count() == 5
    assert CheckResult.objects.count() == 10  # the kept tasks' monitor and evaluation results
    with pytest.raises(ValidationFailed):
        monitoring.delete_old_tasks(days=0)


def test_delete_old_tasks_command(agent, member, settings, django_capture_on_commit_callbacks):
    from io import StringIO

    from django.core.management import CommandError, call_command

    now = datetime.now(UTC)
    settings.EVALCONSOLE_TASK_RETENTION_DAYS = 10
    items = [task_item(i, when=now - timedelta(days=11 + i)) for i in range(7)] + [task_item(99, when=now)]
    ingest(agent, member, items, django_capture_on_commit_callbacks)
    out = StringIO()
    call_command("delete_old_tasks", "--dry-run", stdout=out)
    assert out.getvalue().startswith("7 task(s)") and Task.objects.count() == 8
    out = StringIO()
    call_command("delete_old_tasks", "--batch-size", "3", stdout=out)
    assert "Deleted 7 task(s) older than 10 day(s)." in out.getvalue()
    assert list(Task.objects.values_list("external_id", flat=True)) == ["conv-99"]
    with pytest.raises(CommandError):
        call_command("delete_old_tasks", "--days", "0")


def test_insert_skips_rows_another_request_stored(agent, member, django_capture_on_commit_callbacks):
    """The race path: ON CONFLICT DO NOTHING returns only the rows this request inserted."""
    first, _ = ingest(agent, member, [task_item(1)], django_capture_on_commit_callbacks)
    rows = monitoring.validate_task_items([task_item(1), task_item(2)])
    for row in rows:
        row["sampled"] = False
    inserted = monitoring._insert_new_tasks(agent.pk, rows)
    assert list(inserted) == ["conv-2"]
    assert Task.objects.get(external_id="conv-1").pk == first.ids[0]
    stored = Task.objects.get(external_id="conv-2")
    assert stored.messages[0] == {"role": "user", "content": "question 2"} and stored.tool_calls is None
    assert stored.completed_at == datetime(2025, 1, 1, 0, 2, tzinfo=UTC) and stored.metadata["plan"] == "free"
