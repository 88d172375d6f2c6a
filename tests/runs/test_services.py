"""runs.services (launch: frozen versions, limits, roles; cancel) and runs.queue (claim, record,
recover), in sync mode."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest
from django.utils import timezone

from checks.services import archive_test, create_check, create_test_set, edit_check, edit_test
from core.errors import Conflict, PermissionDenied, ValidationFailed
from runs import limiter, queue, services
from runs.models import CheckResult, Run, RunCheck, Sample
from runs.queue import CheckResultWrite, SampleWrite

pytestmark = pytest.mark.django_db


def _write(sample: Sample, claim: str, outcome: str = "pass", **extra) -> SampleWrite:
    results = tuple(
        CheckResultWrite(
            check_version_id=rc.check_version_id,
            required=rc.required,
            outcome=outcome,
            expected="x",
            actual="y",
            explanation="because",
            evidence=[],
            details={},
        )
        for rc in RunCheck.objects.filter(run_id=sample.run_id)
    )
    return SampleWrite(
        sample_id=sample.pk,
        run_id=sample.run_id,
        agent_id=sample.run.agent_id,
        claim=claim,
        outcome=outcome,
        output="ok",
        results=results,
        **extra,
    )


# --------------------------------------------------------------------------- launch


def test_runs_of_an_unchanged_test_keep_an_archived_checks_last_version(make_test, member, admin_user,
                                                                         order_checks):
    from checks.services import archive_check

    check = order_checks[0]
    edit_check(check=check, by=member, config={"text": "EC-2001"})  # v2
    test = make_test()
    archive_check(check=check, by=admin_user, confirm=True)
    run = services.launch_run(test=test, by=member)
    check.refresh_from_db()
    assert check.version == 2
    used = dict(run.run_checks.values_list("check_version__parent_id", "check_version__number"))
    assert used[check.pk] == 2  # still executed, at the version it had when archived
    with pytest.raises(ValidationFailed, match="archived"):
        edit_check(check=check, by=member, config={"text": "EC-3003"})  # pinned: no new version
    with pytest.raises(ValidationFailed) as refused:
        services.launch_run(test=test, by=member, additional_checks=[check.pk])
    assert "is archived" in str(refused.value)


def test_launch_creates_run_checks_and_one_sample_per_scenario_and_sample(
    make_test, member, order_checks, django_capture_on_commit_callbacks
):
    test = make_test(scenarios=["Where is EC-1042?", "Cancel EC-1042", "Hello"], samples=3)
    with django_capture_on_commit_callbacks() as callbacks:
        run = services.launch_run(test=test, by=member)
    assert len(callbacks) == 1  # one drain enqueued, after commit
    assert (run.status, run.total_samples, run.done_samples, run.launched_by) == ("queued", 9, 0, member)
    assert run.test_version_id == test.current_version_id
    slots = sorted(run.samples.values_list("scenario_index", "sample_index"))
    assert slots == [(s, k) for s in range(3) for k in range(3)]
    assert list(run.run_checks.values_list("check_version_id", "required", "additional")) == [
        (c.current_version_id, True, False) for c in order_checks
    ]
    assert run.summary["total"] == 9 and run.summary["done"] == 0
    assert [s["pending"] for s in run.summary["scenarios"]] == [3, 3, 3]


def test_editing_a_check_or_test_after_launch_does_not_change_the_run(make_test, member, order_checks):
    test = make_test()
    run = services.launch_run(test=test, by=member)
    v1 = order_checks[0].current_version_id
    edited = edit_check(check=order_checks[0], by=member, config={"text": "EC-2000"})
    edit_test(test=test, by=member, required_pass_rate=50)
    run.refresh_from_db()
    assert edited.current_version_id != v1
    assert run.run_checks.get(position=0).check_version_id == v1
    assert run.run_checks.get(position=0).check_version.config["text"] == "EC-1042"
    assert run.test_version.required_pass_rate == 100
    later = services.launch_run(test=test, by=member)
    assert later.run_checks.get(position=0).check_version_id == edited.current_version_id
    assert later.test_version.required_pass_rate == 50


def test_attached_checks_keep_their_required_flag(make_test, member, order_checks, live_agent):
    from checks.services import create_test

    test_set = create_test_set(agent=live_agent, by=member, name="Advisory")
    test = create_test(
        test_set=test_set,
        by=member,
        name="T",
        scenarios=["EC-1042"],
        checks=[
            {"check": order_checks[0].pk, "required": True},
            {"check": order_checks[1].pk, "required": False},
        ],
    )
    run = services.launch_run(test=test, by=member)
    assert list(run.run_checks.values_list("required", flat=True)) == [True, False]


def test_additional_checks_are_frozen_required_and_counted_apart(make_test, member, live_agent, settings):
    settings.EVALCONSOLE_MAX_CHECKS = 2
    settings.EVALCONSOLE_MAX_ADDITIONAL_CHECKS = 2
    test = make_test()  # two attached checks: at the test limit
    extra = [
        create_check(
            agent=live_agent, by=member, name=f"Extra {i}", kind="text_includes", config={"text": "Order"}
        )
        for i in range(2)
    ]
    run = services.launch_run(
        test=test, by=member, additional_checks=[extra[0].pk, {"check": extra[1], "required": False}]
    )
    rows = list(run.run_checks.order_by("position").values_list("check_version_id", "required", "additional"))
    assert rows[2:] == [(extra[0].current_version_id, True, True), (extra[1].current_version_id, False, True)]


def test_additional_checks_over_the_limit_are_refused_naming_the_field(
    make_test, member, live_agent, settings
):
    settings.EVALCONSOLE_MAX_ADDITIONAL_CHECKS = 1
    test = make_test()
    extra = [
        create_check(agent=live_agent, by=member, name=f"E{i}", kind="text_includes", config={"text": "a"})
        for i in range(2)
    ]
    with pytest.raises(ValidationFailed) as err:
        services.launch_run(test=test, by=member, additional_checks=[c.pk for c in extra])
    assert "additional_checks" in err.value.errors
    assert "limit of 1" in err.value.errors["additional_checks"]
    assert not Run.objects.exists()


def test_additional_check_already_attached_or_of_another_agent_is_refused(
    make_test, member, order_checks, team, admin_user
):
    from agents.services import create_agent

    test = make_test()
    with pytest.raises(ValidationFailed) as err:
        services.launch_run(test=test, by=member, additional_checks=[order_checks[0].pk])
    assert "additional_checks.0.check" in err.value.errors
    other = create_agent(team=team, by=admin_user, name="Other", endpoint_url="http://127.0.0.1:9/")
    foreign = create_check(agent=other, by=admin_user, name="F", kind="text_includes", config={"text": "a"})
    with pytest.raises(ValidationFailed) as err:
        services.launch_run(test=test, by=member, additional_checks=[foreign.pk])
    assert "additional_checks.0.check" in err.value.errors
    assert not Run.objects.exists()


def test_viewer_and_another_team_cannot_launch(make_test, viewer, outsider):
    test = make_test()
    for user in (viewer, outsider):
        with pytest.raises(PermissionDenied):
            services.launch_run(test=test, by=user)
    assert not Run.objects.exists()


def test_token_launch_records_token_and_its_user(make_test, member):
    from teams.services import issue_token

    issued = issue_token(user=member, name="ci")
    run = services.launch_run(test=make_test(), by=None, token=issued.token)
    assert (run.launched_by, run.launched_by_token) == (member, issued.token)


def test_archived_test_is_not_launched(make_test, member, admin_user):
    test = make_test()
    archive_test(test=test, by=admin_user)
    with pytest.raises(ValidationFailed) as err:
        services.launch_run(test=test, by=member)
    assert "test" in err.value.errors


def test_launch_test_set_launches_every_active_test_in_one_batch(
    make_test, member, live_agent, admin_user, django_capture_on_commit_callbacks
):
    test_set = create_test_set(agent=live_agent, by=member, name="Batch")
    tests = [make_test(test_set=test_set) for _ in range(3)]
    archive_test(test=tests[2], by=admin_user)
    with django_capture_on_commit_callbacks() as callbacks:
        runs = services.launch_test_set(test_set=test_set, by=member)
    assert len(callbacks) == 1
    assert sorted(r.test_id for r in runs) == sorted(t.pk for t in tests[:2])
    assert len({r.batch for r in runs}) == 1 and runs[0].batch
    empty = create_test_set(agent=live_agent, by=member, name="Empty")
    with pytest.raises(ValidationFailed):
        services.launch_test_set(test_set=empty, by=member)


def test_a_batch_across_teams_needs_the_launch_role_in_each_and_is_all_or_none(
    make_test, member, other_team, django_capture_on_commit_callbacks
):
    from teams.services import add_member
    from tests import factories

    ours = make_test()
    theirs = factories.test(factories.agent(other_team, name="Their bot"), scenarios=["hi"])
    add_member(team=other_team, user=member, role="viewer")  # sees their test, may not launch it
    with pytest.raises(PermissionDenied):
        services.launch_batch(tests=[ours, theirs], by=member)
    assert not Run.objects.exists()
    add_member(team=other_team, user=member, role="member")
    with django_capture_on_commit_callbacks() as callbacks:
        runs = services.launch_batch(tests=[ours, theirs, ours], by=member)
    assert len(callbacks) == 1  # one enqueue for the whole batch
    assert [r.test_id for r in runs] == [ours.pk, theirs.pk, ours.pk]
    agents = [ours.test_set.agent_id, theirs.test_set.agent_id, ours.test_set.agent_id]
    assert [r.agent_id for r in runs] == agents
    assert Sample.objects.filter(run__in=runs).count() == 3 and len({r.batch for r in runs}) == 1


def test_launch_of_an_archived_test_set_is_refused(make_test, member, live_agent, admin_user):
    from checks.services import archive_test_set

    test_set = create_test_set(agent=live_agent, by=member, name="Old")
    make_test(test_set=test_set)
    archive_test_set(test_set=test_set, by=admin_user)
    with pytest.raises(ValidationFailed) as exc:
        services.launch_test_set(test_set=test_set, by=member)
    assert "archived" in exc.value.errors["test_set"]
    assert not Run.objects.filter(test__test_set=test_set).exists()


# --------------------------------------------------------------------------- cancel


def test_cancel_keeps_finished_samples_and_cancels_the_rest(make_test, member):
    run = services.launch_run(test=make_test(scenarios=["EC-1042", "b"], samples=2), by=member)
    claim = queue.claim_samples(worker="w", capacity=2)
    first = Sample.objects.get(pk=claim.samples[0].id)
    assert queue.record_sample_results([_write(first, claim.samples[0].claim)]) == [True]
    late = Sample.objects.get(pk=claim.samples[1].id)

    cancelled = services.cancel_run(run=run, by=member)
    assert (cancelled.status, cancelled.result, cancelled.done_samples) == ("cancelled", "", 1)
    assert cancelled.finished_at is not None
    assert sorted(run.samples.values_list("status", flat=True)) == [
        "cancelled",
        "cancelled",
        "cancelled",
        "done",
    ]
    assert cancelled.summary["done"] == 1
    # The executor still calling the agent for `late` lost its claim: its result is dropped.
    assert queue.record_sample_results([_write(late, claim.samples[1].claim)]) == [False]
    assert CheckResult.objects.filter(sample=late).count() == 0
    with pytest.raises(Conflict):
        services.cancel_run(run=run, by=member)


def test_viewer_cannot_cancel(make_test, member, viewer):
    run = services.launch_run(test=make_test(), by=member)
    with pytest.raises(PermissionDenied):
        services.cancel_run(run=run, by=viewer)


def test_cancel_rejects_finished_run(make_test, member):
    run = services.launch_run(test=make_test(), by=member)
    claim = queue.claim_samples(worker="w", capacity=5)
    queue.record_sample_results([_write(Sample.objects.get(pk=s.id), s.claim) for s in claim.samples])
    run.refresh_from_db()
    assert run.status == "completed"
    with pytest.raises(Conflict):
        services.cancel_run(run=run, by=member)


# --------------------------------------------------------------------------- claim / record / recover


def test_claim_holds_the_agents_cap_across_claims(make_test, member, live_agent):
    live_agent.max_concurrency = 2
    live_agent.save()
    run = services.launch_run(test=make_test(scenarios=["a", "b"], samples=3), by=member)
    first = queue.claim_samples(worker="w1", capacity=10)
    assert len(first.samples) == 2 and first.plans[run.pk].scenarios[0]["input"] == "a"
    assert queue.claim_samples(worker="w2", capacity=10).samples == []  # another worker: still capped
    run.refresh_from_db()
    assert run.status == "running"
    s = first.samples[0]
    queue.record_sample_results([_write(Sample.objects.get(pk=s.id), s.claim)])
    again = queue.claim_samples(worker="w2", capacity=10, known_runs={run.pk})
    assert len(again.samples) == 1 and again.plans == {}
    assert Sample.objects.get(pk=again.samples[0].id).executions == 1


def test_a_sample_is_written_once_per_claim(make_test, member):
    run = services.launch_run(test=make_test(scenarios=["a", "b"]), by=member)
    claim = queue.claim_samples(worker="w", capacity=5)
    s = claim.samples[0]
    sample = Sample.objects.get(pk=s.id)
    assert queue.record_sample_results([_write(sample, s.claim)]) == [True]
    assert queue.record_sample_results([_write(sample, s.claim)]) == [False]  # a duplicate executor
    assert queue.record_sample_results([_write(sample, "someone-else")]) == [False]
    assert CheckResult.objects.filter(sample=sample).count() == 2
    run.refresh_from_db()
    assert (run.status, run.done_samples) == ("running", 1)
    assert run.summary["scenarios"][0]["passed"] == 1 and run.summary["scenarios"][1]["pending"] == 1


def test_a_drains_write_keeps_done_counts_exact_and_recounts_summaries_when_asked(make_test, member):
    """The drain's way (runs.execution): a going run's summary is recounted when the drain asks (at most
    every half second) and when a write completes the run; its done count is exact after every write."""
    run = services.launch_run(test=make_test(scenarios=["a", "b", "c"]), by=member)
    first, second, third = queue.claim_samples(worker="w", capacity=5).samples
    written = queue.record_sample_results([_write(Sample.objects.get(pk=first.id), first.claim)], set())
    assert written == [True]
    run.refresh_from_db()
    assert (run.status, run.done_samples, run.summary["done"]) == ("running", 1, 0)  # summary: as launched
    assert queue.refresh_runs([run.pk]) == set()  # recounted, not complete
    run.refresh_from_db()
    assert (run.done_samples, run.summary["done"], run.summary["scenarios"][0]["passed"]) == (1, 1, 1)
    # asked for in the write itself
    assert queue.record_sample_results(
        [_write(Sample.objects.get(pk=second.id), second.claim, outcome="fail")], {run.pk}
    ) == [True]
    run.refresh_from_db()
    assert (run.done_samples, run.summary["done"], run.summary["scenarios"][1]["failed"]) == (2, 2, 1)
    # the write that completes the run recounts it, whatever it was asked
    assert queue.record_sample_results([_write(Sample.objects.get(pk=third.id), third.claim)], set()) == [
        True
    ]
    run.refresh_from_db()
    assert (run.status, run.result, run.done_samples, run.summary["done"]) == ("completed", "fail", 3, 3)
    assert queue.refresh_runs([run.pk]) == set()  # a finished run is left alone


def test_run_is_completed_once_with_the_outcome_rules(make_test, member):
    run = services.launch_run(test=make_test(scenarios=["a", "b"], samples=2, rate=50), by=member)
    claim = queue.claim_samples(worker="w", capacity=10)
    by_slot = {(s.scenario_index, s.sample_index): s for s in claim.samples}
    outcomes = {(0, 0): "pass", (0, 1): "fail", (1, 0): "pass", (1, 1): "error"}
    writes = [
        _write(Sample.objects.get(pk=s.id), s.claim, outcome=outcomes[slot]) for slot, s in by_slot.items()
    ]
    assert queue.record_sample_results(writes) == [True] * 4
    run.refresh_from_db()
    assert (run.status, run.result, run.done_samples) == ("completed", "pass", 4)  # 1/2 = 50 % meets 50 %
    finished_at = run.finished_at
    assert queue.finalise_run(run=run) is False
    run.refresh_from_db()
    assert run.finished_at == finished_at


def test_recover_requeues_expired_leases_only(make_test, member, settings):
    services.launch_run(test=make_test(scenarios=["a", "b", "c"]), by=member)
    claim = queue.claim_samples(worker="dead", capacity=2)
    expired, alive = claim.samples
    Sample.objects.filter(pk=expired.id).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    report = queue.recover_runs()
    assert (report.requeued, report.errored, report.claimable) == (1, 0, True)
    assert Sample.objects.get(pk=expired.id).status == "queued"
    assert Sample.objects.get(pk=alive.id).status == "running"
    # The dead worker's late write is refused; the re-claimed sample counts its second execution.
    assert queue.record_sample_results([_write(Sample.objects.get(pk=expired.id), expired.claim)]) == [False]
    again = queue.claim_samples(worker="new", capacity=5)
    assert {s.id for s in again.samples} >= {expired.id}
    assert Sample.objects.get(pk=expired.id).executions == 2


def test_recover_gives_up_on_a_sample_that_keeps_killing_workers(make_test, member, settings):
    settings.EVALCONSOLE_MAX_SAMPLE_EXECUTIONS = 2
    run = services.launch_run(test=make_test(), by=member)
    for _ in range(2):
        claim = queue.claim_samples(worker="dead", capacity=1)
        Sample.objects.filter(pk=claim.samples[0].id).update(
            lease_expires_at=timezone.now() - timedelta(seconds=1)
        )
        report = queue.recover_runs()
    assert report.errored == 1
    sample = run.samples.get()
    assert (sample.status, sample.outcome) == ("done", "error")
    assert "stopped 2 times" in sample.error
    assert CheckResult.objects.filter(sample=sample, outcome="error").count() == 2
    run.refresh_from_db()
    assert (run.status, run.result) == ("completed", "error")


def test_renew_leases_reports_lost_samples(make_test, member):
    run = services.launch_run(test=make_test(scenarios=["a", "b"]), by=member)
    claim = queue.claim_samples(worker="w", capacity=5)
    assert queue.renew_leases(claim.samples) == {s.id for s in claim.samples}
    services.cancel_run(run=run, by=member)
    assert queue.renew_leases(claim.samples) == set()


def test_renewing_leases_is_one_update_however_many_samples_and_claims(
    make_test, member, django_assert_num_queries
):
    run = services.launch_run(test=make_test(scenarios=["a", "b", "c", "d", "e"], samples=2), by=member)
    held = [s for _ in range(4) for s in queue.claim_samples(worker="w", capacity=3).samples]
    assert len(held) == 10 and len({s.claim for s in held}) == 4  # four claims, four tokens
    Sample.objects.filter(run=run).update(lease_expires_at=timezone.now() + timedelta(seconds=1))
    with django_assert_num_queries(1):  # the UPDATE; nothing else while every claim holds
        assert queue.renew_leases(held) == {s.id for s in held}
    soonest = Sample.objects.filter(run=run).order_by("lease_expires_at").first().lease_expires_at
    assert soonest > timezone.now() + timedelta(seconds=queue.lease_seconds() - 1)

    lost, cancelled = held[0], held[5]
    Sample.objects.filter(pk=lost.id).update(claimed_by="another-worker:1:abc")  # taken over
    Sample.objects.filter(pk=cancelled.id).update(status=Sample.Status.CANCELLED)
    with django_assert_num_queries(2):  # the UPDATE matched fewer rows: one SELECT says which
        assert queue.renew_leases(held) == {s.id for s in held} - {lost.id, cancelled.id}
    stale = dataclasses.replace(held[1], claim="w:stale-token")  # the same sample under an old claim
    assert queue.renew_leases([stale]) == set()


# --------------------------------------------------------------------------- AIMD window


def test_aimd_pure_rules():
    assert limiter.allowed_in_flight(10, None) == 10
    assert limiter.allowed_in_flight(10, 3.7) == 3
    assert limiter.allowed_in_flight(10, 0.2) == 1
    assert limiter.allowed_in_flight(4, 9.0) == 4
    assert limiter.decreased(None, 10) == 5.0
    assert limiter.decreased(1.5, 10) == 1.0
    assert limiter.increased(4.0, 10) == 4.25
    assert limiter.increased(9.95, 10) is None


def test_aimd_window_is_shared_through_the_database(live_agent):
    now = timezone.now()
    assert limiter.shrink_window(live_agent.pk, now=now)
    assert not limiter.shrink_window(live_agent.pk, now=now)  # the same burst of 429s counts once
    live_agent.refresh_from_db()
    assert live_agent.concurrency_window == 5.0
    assert limiter.shrink_window(live_agent.pk, now=now + timedelta(seconds=2))
    live_agent.refresh_from_db()
    assert live_agent.concurrency_window == 2.5
    limiter.grow_window(live_agent.pk, 2)
    live_agent.refresh_from_db()
    assert live_agent.concurrency_window == pytest.approx(2.5 + 0.4 + 1 / 2.9)
    limiter.grow_window(live_agent.pk, 200)
    live_agent.refresh_from_db()
    assert live_agent.concurrency_window is None  # back at max_concurrency


def test_a_429_shrinks_the_window_and_claims_follow_it(make_test, member, live_agent):
    services.launch_run(test=make_test(scenarios=["a", "b", "c"], samples=3), by=member)
    claim = queue.claim_samples(worker="w", capacity=1)
    s = claim.samples[0]
    queue.record_sample_results([_write(Sample.objects.get(pk=s.id), s.claim, saw_429=True)])
    live_agent.refresh_from_db()
    assert live_agent.concurrency_window == 5.0
    assert len(queue.claim_samples(worker="w", capacity=100).samples) == 5


# --------------------------------------------------------------------------- claimed ahead


def _ahead_claim(run_test, member, live_agent, *, cap: int):
    live_agent.max_concurrency = cap
    live_agent.save()
    run = services.launch_run(test=run_test, by=member)
    first = queue.claim_samples(worker="w1", capacity=10)
    # the drain's next claim, its calls out: one sample ahead per call to the agent
    claim = queue.claim_samples(worker="w1", capacity=10, ahead={live_agent.pk: cap}, ahead_max=10)
    claim.samples[:0] = first.samples
    started = [s for s in claim.samples if not s.ahead]
    ahead = [s for s in claim.samples if s.ahead]
    return run, started, ahead


def test_samples_claimed_ahead_hold_no_slot_and_no_execution(make_test, member, live_agent):
    run, started, ahead = _ahead_claim(
        make_test(scenarios=["a", "b", "c"], samples=2), member, live_agent, cap=2
    )
    assert (len(started), len(ahead)) == (2, 2)  # one ahead per call claimed, the agent's cap for the calls
    rows = {s.pk: s for s in Sample.objects.filter(run=run)}
    assert all(
        rows[s.id].status == "running" and rows[s.id].started_at and rows[s.id].executions == 1
        for s in started
    )
    assert all(
        rows[s.id].status == "running" and rows[s.id].started_at is None and rows[s.id].executions == 0
        for s in ahead
    )
    assert all(rows[s.id].lease_expires_at > timezone.now() for s in ahead)  # under a lease like the rest
    # Another worker: the cap is held by the two calls; the samples held ahead are not claimable either.
    assert queue.claim_samples(worker="w2", capacity=10).samples == []
    assert queue.renew_leases(ahead) == {s.id for s in ahead}

    # A call ended (its write follows): the sample held ahead starts in its slot and counts an execution.
    first = ahead[0]
    assert queue.start_ahead([first]) == {first.id: 1}
    assert Sample.objects.get(pk=first.id).started_at is not None
    assert queue.start_ahead([first]) == {}  # once
    queue.record_sample_results([_write(rows[started[0].id], started[0].claim)])
    assert queue.claim_samples(worker="w2", capacity=10).samples == []  # still 2 calls: the cap holds


def test_a_sample_held_ahead_is_not_started_once_its_run_is_cancelled(make_test, member, live_agent):
    run, started, ahead = _ahead_claim(make_test(scenarios=["a", "b"], samples=2), member, live_agent, cap=1)
    assert (len(started), len(ahead)) == (1, 1)
    services.cancel_run(run=run, by=member)
    assert queue.start_ahead(ahead) == {}  # no agent call for it
    assert queue.release_ahead(ahead) == 0
    assert set(Sample.objects.filter(run=run).values_list("status", flat=True)) == {"cancelled"}


def test_samples_held_ahead_go_back_to_the_queue_unstarted(make_test, member, live_agent):
    run, started, ahead = _ahead_claim(make_test(scenarios=["a", "b"], samples=2), member, live_agent, cap=1)
    other = ahead[0]
    assert queue.release_ahead(started) == 0  # a started sample is not released
    assert (
        queue.release_ahead([dataclasses.replace(other, claim="someone-else")]) == 0
    )  # only under its claim
    assert queue.release_ahead(ahead) == 1
    row = Sample.objects.get(pk=other.id)
    assert (row.status, row.claimed_by, row.lease_expires_at, row.executions) == ("queued", "", None, 0)
    assert queue.start_ahead(ahead) == {}  # released: its old claim starts nothing
    queue.record_sample_results([_write(Sample.objects.get(pk=started[0].id), started[0].claim)])
    again = queue.claim_samples(worker="w2", capacity=10)
    assert [s.id for s in again.samples] == [other.id] and not again.samples[0].ahead


def test_a_dead_workers_samples_held_ahead_are_queued_again_without_an_execution(
    make_test, member, live_agent, settings
):
    settings.EVALCONSOLE_MAX_SAMPLE_EXECUTIONS = 1
    run, started, ahead = _ahead_claim(make_test(scenarios=["a", "b"], samples=2), member, live_agent, cap=1)
    Sample.objects.filter(status="running").update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    report = queue.recover_runs()
    # The called one has used its one execution and is given up; the one held ahead was never called.
    assert (report.requeued, report.errored) == (1, 1)
    row = Sample.objects.get(pk=ahead[0].id)
    assert (row.status, row.executions) == ("queued", 0)
    assert Sample.objects.get(pk=started[0].id).outcome == "error"


def test_an_agent_in_a_429_window_gets_nothing_claimed_ahead(make_test, member, live_agent):
    live_agent.concurrency_window = 2.0
    live_agent.save()
    services.launch_run(test=make_test(scenarios=["a", "b"], samples=3), by=member)
    claim = queue.claim_samples(worker="w", capacity=10, ahead={live_agent.pk: 5}, ahead_max=10)
    assert len(claim.samples) == 2 and not any(s.ahead for s in claim.samples)
