"""The drain in-process (django-q2 sync mode, the test's transaction) against a real loopback agent."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from agents.models import Agent
from checks.services import create_check, create_test, create_test_set
from runs import queue, services
from runs.execution import drain
from runs.models import Run, Sample
from tests import factories

pytestmark = pytest.mark.django_db

ORDER = "Where is my order EC-1042?"


def _run(test, member, **kwargs) -> Run:
    run = services.launch_run(test=test, by=member, **kwargs)
    drain(idle_ms=0)
    run.refresh_from_db()
    return run


def test_launch_in_sync_mode_runs_the_samples_after_commit(
    make_test, member, fake, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        run = services.launch_run(test=make_test(scenarios=[ORDER], samples=3), by=member)
    run.refresh_from_db()
    assert (run.status, run.result, run.done_samples) == ("completed", "pass", 3)
    assert run.summary["scenarios"][0]["passed"] == 3


def test_a_rate_limited_sample_is_queued_again_and_the_window_shrinks(make_test, member, fake, live_agent):
    live_agent.retries = 0
    live_agent.save()
    scenario = {"input": ORDER, "metadata": {"fake": {"status_429_times": 1, "retry_after": "0"}}}
    run = _run(make_test(scenarios=[scenario], samples=2), member)
    assert (run.status, run.result) == ("completed", "pass")
    for sample in run.samples.all():
        assert sample.executions == 2 and sample.error == ""
        assert [(a["number"], a["status_code"]) for a in sample.attempts] == [(1, 429), (2, 200)]
        assert sample.request["attempt"] == 2
    live_agent.refresh_from_db()
    assert (
        live_agent.concurrency_window is not None
        and live_agent.concurrency_window < live_agent.max_concurrency
    )


def test_rate_limited_too_often_becomes_an_error(make_test, member, fake, live_agent, settings):
    settings.EVALCONSOLE_RATE_LIMIT_REQUEUES = 1
    live_agent.retries = 0
    live_agent.save()
    scenario = {"input": ORDER, "metadata": {"fake": {"status_429_times": 5, "retry_after": "0"}}}
    run = _run(make_test(scenarios=[scenario]), member)
    sample = run.samples.get()
    assert (sample.outcome, sample.executions) == ("error", 2)
    assert sample.error.startswith("the agent answered HTTP 429 (rate limited)")
    assert run.result == "error"


def test_a_429_retried_inside_the_call_still_shrinks_the_window(make_test, member, fake, live_agent):
    scenario = {"input": ORDER, "metadata": {"fake": {"status_429_times": 1, "retry_after": "0"}}}
    run = _run(make_test(scenarios=[scenario]), member)
    sample = run.samples.get()
    assert (sample.outcome, sample.executions, len(sample.attempts)) == ("pass", 1, 2)
    live_agent.refresh_from_db()
    assert live_agent.concurrency_window == 5.0


def test_metadata_address_is_refused_with_the_reason(member, team, admin_user):
    agent = factories.agent(
        team, admin_user, name="Metadata", endpoint_url="http://127.0.0.1:9/latest/", retries=2
    )
    # Saving refuses this URL now; one stored before that (or a name resolving there) is refused here.
    Agent.objects.filter(pk=agent.pk).update(endpoint_url="http://169.254.169.254/latest/")
    check = factories.check(agent, member, config={"text": "x"})
    run = _run(factories.test(agent, member, scenarios=["hello"], checks=[check]), member)
    sample = run.samples.get()
    assert sample.outcome == "error"
    assert sample.error.startswith("refused: 169.254.169.254 is a link-local address")
    assert len(sample.attempts) == 1  # never retried


def test_openai_chat_agent(member, team, admin_user, fake):
    agent = factories.agent(
        team,
        admin_user,
        name="OpenAI-ish",
        endpoint_url=fake.openai_url,
        protocol="openai-chat",
        model_name="m1",
    )
    called = factories.check(
        agent, member, kind="tool_usage", config={"tool": "lookup_order", "mode": "at_least", "count": 1}
    )
    run = _run(factories.test(agent, member, scenarios=[ORDER], checks=[called]), member)
    sample = run.samples.get()
    assert (sample.outcome, run.result) == ("pass", "pass")
    assert sample.request == {"model": "m1", "messages": [{"role": "user", "content": ORDER}]}
    assert sample.tool_calls[0]["name"] == "lookup_order"
    assert sample.transcript[0] == {"role": "user", "content": ORDER}
    assert sample.transcript[-1]["role"] == "assistant"


def test_agent_messages_become_the_transcript_and_advisory_checks_do_not_count(
    make_test, member, fake, live_agent, order_checks
):
    messages = [
        {"role": "assistant", "content": "Looking it up"},
        {"role": "assistant", "content": "Found it"},
    ]
    scenario = {"input": ORDER, "metadata": {"fake": {"messages": messages, "output": "Found it"}}}
    strict = create_check(
        agent=live_agent, by=member, name="strict", kind="text_equals", config={"expected": "something else"}
    )
    test = create_test(
        test_set=create_test_set(agent=live_agent, by=member, name="adv"),
        by=member,
        name="t",
        scenarios=[scenario],
        checks=[{"check": order_checks[1].pk}, {"check": strict.pk, "required": False}],
    )
    run = _run(test, member)
    sample = run.samples.get()
    assert sample.transcript == [{"role": "user", "content": ORDER}, *messages]
    assert {r.check_version.name: r.outcome for r in sample.results.all()} == {
        "Looked up the order": "pass",
        "strict": "fail",
    }
    assert (sample.outcome, run.result) == ("pass", "pass")
    assert run.summary["checks"][str(strict.current_version_id)]["failed"] == 1


def test_missing_tool_calls_make_tool_checks_indeterminate(make_test, member, fake):
    scenario = {"input": ORDER, "metadata": {"fake": {"omit_tool_calls": True}}}
    run = _run(make_test(scenarios=[scenario]), member)
    sample = run.samples.get()
    assert {r.check_version.kind: r.outcome for r in sample.results.all()} == {
        "text_includes": "pass",
        "tool_usage": "indeterminate",
    }
    assert (sample.outcome, run.result) == ("indeterminate", "indeterminate")


def test_drain_leaves_cancelled_runs_alone(make_test, member, fake):
    run = services.launch_run(test=make_test(scenarios=[ORDER], samples=2), by=member)
    services.cancel_run(run=run, by=member)
    report = drain(idle_ms=0)
    assert report.claimed == 0 and fake.stats()["requests"] == 0
    assert set(Sample.objects.filter(run=run).values_list("status", flat=True)) == {"cancelled"}


def test_recover_runs_command_reports_and_drains(make_test, member, fake):
    run = services.launch_run(test=make_test(scenarios=[ORDER]), by=member)
    out = io.StringIO()
    call_command("recover_runs", "--drain", stdout=out)
    assert "0 sample(s) re-queued" in out.getvalue() and "drained: 1 sample(s) written" in out.getvalue()
    run.refresh_from_db()
    assert run.status == "completed"


def _locked(times: int, real):
    """`real`, its first `times` calls failing as a busy database fails them."""
    import functools

    from django.db import OperationalError

    left = [times]

    @functools.wraps(real)
    def flaky(*args):
        if left[0]:
            left[0] -= 1
            raise OperationalError("database is locked")
        return real(*args)

    return flaky


def test_transient_database_errors_do_not_lose_results(make_test, member, fake, monkeypatch):
    # more than one call's own retries: the drain keeps the batch and tries again
    monkeypatch.setattr(queue, "record_sample_results", _locked(4, queue.record_sample_results))
    run = services.launch_run(test=make_test(scenarios=[ORDER], samples=3), by=member)
    report = drain(idle_ms=0)
    run.refresh_from_db()
    assert (run.status, run.done_samples, report.written) == ("completed", 3, 3)
    assert any("database is locked" in e for e in report.errors)
    assert set(run.samples.values_list("executions", flat=True)) == {1}


def test_finished_samples_keep_their_leases_while_their_write_is_retried(
    make_test, member, fake, monkeypatch, settings
):
    import functools

    settings.EVALCONSOLE_SAMPLE_LEASE_S = 1  # renewals every 0.33 s: several while the write fails
    real_renew = queue.renew_leases
    renewed: list[set[int]] = []

    @functools.wraps(real_renew)
    def spy(samples):
        held = real_renew(samples)
        renewed.append(held)
        return held

    monkeypatch.setattr(queue, "record_sample_results", _locked(6, queue.record_sample_results))
    monkeypatch.setattr(queue, "renew_leases", spy)
    run = services.launch_run(test=make_test(scenarios=[ORDER]), by=member)
    report = drain(idle_ms=0)
    run.refresh_from_db()
    sample = run.samples.get()
    assert (run.status, report.written, sample.executions) == ("completed", 1, 1)
    assert {sample.pk} in renewed  # renewed after its call had finished, before it was written


def test_a_sample_claimed_again_by_the_same_drain_drops_the_older_call(make_test, member, monkeypatch):
    import asyncio
    from datetime import timedelta

    from django.utils import timezone

    from runs import execution

    services.launch_run(test=make_test(scenarios=[ORDER]), by=member)
    first = queue.claim_samples(worker="w", capacity=1)
    # Our renewals lapsed (a stalled loop): recovery re-queued the sample and we claimed it again.
    Sample.objects.update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert queue.recover_runs().requeued == 1
    second = queue.claim_samples(worker="w", capacity=1)
    assert [s.id for s in second.samples] == [s.id for s in first.samples]

    async def never_answers(*args, **kwargs):
        await asyncio.sleep(60)

    monkeypatch.setattr(execution, "execute_sample", never_answers)

    async def scenario() -> tuple[bool, bool]:
        d = execution._Drain(worker="w", db=execution._DB(), idle_s=0, claim_for_s=1, hard_s=1)
        d._wake, d.client = asyncio.Event(), None  # execute_sample is replaced: no HTTP client needed
        d.plans.update(first.plans)
        old = asyncio.ensure_future(never_answers())
        d.inflight[old] = first.samples[0]
        d._start(second)
        await asyncio.sleep(0)
        new = [task for task, sample in d.inflight.items() if sample.claim == second.samples[0].claim]
        result = old.cancelled(), new[0].cancelled()
        for task in d.inflight:
            task.cancel()
        await asyncio.gather(*d.inflight, return_exceptions=True)
        return result

    assert asyncio.run(scenario()) == (True, False)


def test_successes_grow_a_shrunk_window_back(make_test, member, fake, live_agent):
    live_agent.concurrency_window = 2.0
    live_agent.save()
    run = _run(make_test(scenarios=[ORDER], samples=4), member)
    assert run.result == "pass"
    live_agent.refresh_from_db()
    assert 2.0 < live_agent.concurrency_window < 4.0  # additive: about +1 per window's worth of successes
    assert fake.stats()["max_in_flight"] <= 2  # the shrunk window held while it was 2


def test_only_steps_marked_repeatable_are_retried_on_a_database_error(monkeypatch):
    from django.db import OperationalError

    from runs import execution

    monkeypatch.setattr(execution.time, "sleep", lambda seconds: None)
    marked = {name for name in queue.__all__ if queue.is_retried_db_step(getattr(queue, name))}
    # not claims; starting or releasing samples claimed ahead is one conditional UPDATE, safe to repeat
    assert marked == {
        "record_sample_results",
        "refresh_runs",
        "renew_leases",
        "recover_runs",
        "start_ahead",
        "release_ahead",
    }

    def failing(calls: list, fails: int):
        def step():
            calls.append(1)
            if len(calls) <= fails:
                raise OperationalError("database is locked")
            return "written"

        return step

    calls: list = []
    unmarked = failing(calls, 1)
    unmarked.__name__ = "record_sample_results"  # a repeatable step's name is not a mark
    with pytest.raises(OperationalError):
        execution._with_retries(unmarked)
    assert len(calls) == 1

    calls = []
    assert (
        execution._with_retries(queue.retried_db_step(failing(calls, execution.DB_STEP_TRIES - 1)))
        == "written"
    )
    assert len(calls) == execution.DB_STEP_TRIES

    calls = []
    with pytest.raises(OperationalError):
        execution._with_retries(queue.retried_db_step(failing(calls, execution.DB_STEP_TRIES)))
    assert len(calls) == execution.DB_STEP_TRIES


def test_a_drain_starts_samples_claimed_ahead_in_freed_slots_within_the_agents_cap(
    make_test, member, fake, live_agent
):
    live_agent.max_concurrency = 2
    live_agent.save()
    scenarios = [{"input": ORDER, "metadata": {"fake": {"delay_ms": 50}}} for _ in range(5)]
    run = services.launch_run(test=make_test(scenarios=scenarios, samples=2), by=member)
    report = drain(idle_ms=0)
    run.refresh_from_db()
    assert (run.status, run.result, run.done_samples) == ("completed", "pass", 10)
    assert report.ahead > 0 and (report.claimed, report.written, report.dropped) == (10, 10, 0)
    assert set(run.samples.values_list("executions", flat=True)) == {1}
    stats = fake.stats()
    assert sorted(stats["sample_attempts"].values()) == [1] * 10  # none called twice
    assert stats["max_in_flight"] <= 2  # a sample held ahead only ever took a freed slot


def test_a_drain_that_stops_claiming_puts_what_it_held_ahead_back(make_test, member, fake, live_agent):
    live_agent.max_concurrency = 1
    live_agent.save()
    scenarios = [{"input": ORDER, "metadata": {"fake": {"delay_ms": 1500}}} for _ in range(4)]
    run = services.launch_run(test=make_test(scenarios=scenarios), by=member)
    report = drain(idle_ms=0, max_seconds=0.5)  # claims (one call, one ahead), then only finishes that call
    assert (report.claimed, report.ahead, report.released, report.work_left) == (1, 1, 1, True)
    rows = sorted(run.samples.values_list("status", "executions", "claimed_by"))
    assert [(status, n) for status, n, _ in rows] == [("done", 1)] + [("queued", 0)] * 3
    assert all(claim == "" for status, _, claim in rows if status == "queued")
    assert fake.stats()["requests"] == 1
