"""The user-facing writes to runs: launch (one run or a whole test set) and cancel.

Launching freezes what a run uses (the test's current version and the current version of each
check) and enqueues background work after commit. What the workers do with it afterwards
(claim, renew, record, recover, finalise) is the storage protocol in runs/queue.py.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from agents.models import Agent
from checks.models import Check, Test, TestCheck, TestSet, TestVersion
from checks.services import resolve_checks
from core.errors import Conflict, ValidationFailed
from runs.models import Run, RunCheck, RunScene, Sample
from runs.outcomes import SampleRecord, summarise_run
from runs.queue import ACTIVE, OPEN, end_worlds_of, run_summary, scenario_specs
from teams import access
from worlds.models import TestScene

__all__ = [
    "cancel_run",
    "enqueue_drain",
    "launch_run",
    "launch_test_set",
    "launch_trials",
]


# --------------------------------------------------------------------------- launch


def _launcher(by, token):
    if by is None and token is not None:
        return token.user
    return by


def _resolve_additional(
    *, agent: Agent, additional_checks, attached_ids: set[int]
) -> list[tuple[Check, bool]]:
    limit = int(settings.EVALCONSOLE_MAX_ADDITIONAL_CHECKS)
    items = list(additional_checks or ())
    if len(items) > limit:
        raise ValidationFailed(
            f"{len(items)} additional checks is over the limit of {limit} per run "
            "(counted separately from the test's own checks)",
            field="additional_checks",
        )
    picked = resolve_checks(agent=agent, checks=items, limit=limit, field="additional_checks")
    for index, (check, _required) in enumerate(picked):
        if check.pk in attached_ids:
            raise ValidationFailed(
                f"check {check.name!r} is already attached to the test",
                field=f"additional_checks.{index}.check",
            )
    return picked


def _initial_summary(version: TestVersion) -> dict:
    specs = scenario_specs(version.scenarios, version.min_valid_per_scenario, version.required_pass_rate)
    records = [
        SampleRecord(scenario_index=s, outcome=None)
        for s in range(len(version.scenarios))
        for _ in range(version.samples_per_scenario)
    ]
    return summarise_run(records, specs).as_dict()


def archived_test_set_problem(test_set: TestSet) -> str:
    """Why no test of `test_set` may be launched while it is archived (the launcher shows it too)."""
    return f"test set {test_set.name!r} is archived; restore it to launch its tests"


def _create_run(*, test: Test, by, token, additional_checks, batch: str) -> Run:
    """The writes of one launch (the caller holds the transaction)."""
    test = Test.objects.select_related("test_set__agent__team", "current_version").get(pk=test.pk)
    agent = test.test_set.agent
    access.require(_launcher(by, token), access.CREATE, Run, team=agent.team)
    if test.archived_at is not None:
        raise ValidationFailed(f"test {test.name!r} is archived; restore it to launch it", field="test")
    if test.test_set.archived_at is not None:
        raise ValidationFailed(archived_test_set_problem(test.test_set), field="test")
    if agent.archived_at is not None:
        raise ValidationFailed(f"agent {agent.name!r} is archived", field="test")
    if test.current_version_id is None:
        raise ValidationFailed(f"test {test.name!r} has no saved version", field="test")
    version = test.current_version
    total = len(version.scenarios) * version.samples_per_scenario
    limit = int(settings.EVALCONSOLE_MAX_SAMPLES_PER_RUN)
    if total > limit:  # the limit may have been lowered since the test was saved
        raise ValidationFailed(
            f"{len(version.scenarios)} scenarios × {version.samples_per_scenario} samples = {total} is over "
            f"the limit of {limit} samples per run",
            field="test",
        )
    attached = list(
        TestCheck.objects.filter(test_version=version)
        .select_related("library_check")
        .order_by("position", "pk")
    )
    scenes = list(TestScene.objects.filter(test_version=version).select_related("scene").order_by("position"))
    archived = [ts.scene.name for ts in scenes if ts.scene.archived_at is not None]
    if archived:
        raise ValidationFailed(f"scene {archived[0]!r} is archived; restore it to launch this test", field="test")
    attached_ids = {tc.library_check_id for tc in attached}
    additional = _resolve_additional(
        agent=agent, additional_checks=additional_checks, attached_ids=attached_ids
    )
    # Freeze the CURRENT version of every check now; later edits make new versions this run never sees.
    current = {tc.library_check_id: tc.library_check.current_version_id for tc in attached}
    current.update({check.pk: check.current_version_id for check, _ in additional})
    launcher = _launcher(by, token)
    run = Run.objects.create(
        agent=agent,
        test=test,
        test_version=version,
        status=Run.Status.QUEUED,
        launched_by=launcher if getattr(launcher, "pk", None) else None,
        launched_by_token=token,
        batch=batch or "",
        total_samples=total,
        done_samples=0,
        summary=_initial_summary(version),
    )
    run_checks = [
        RunCheck(
            run=run,
            check_version_id=current[tc.library_check_id],
            required=tc.required,
            additional=False,
            position=position,
        )
        for position, tc in enumerate(attached)
    ]
    run_checks += [
        RunCheck(
            run=run,
            check_version_id=current[check.pk],
            required=required,
            additional=True,
            position=len(attached) + position,
        )
        for position, (check, required) in enumerate(additional)
    ]
    RunCheck.objects.bulk_create(run_checks)
    # Freeze each scene's CURRENT version too: every sample of the run plays exactly that file.
    RunScene.objects.bulk_create(
        [RunScene(run=run, scenario_index=ts.position, scene_version_id=ts.scene.current_version_id) for ts in scenes]
    )
    Sample.objects.bulk_create(
        [
            Sample(run=run, scenario_index=s, sample_index=k)
            for s in range(len(version.scenarios))
            for k in range(version.samples_per_scenario)
        ]
    )
    return run


def launch_run(*, test: Test, by, additional_checks: Iterable = (), token=None, batch: str = "") -> Run:
    """Launch one run of ``test``'s current version; its samples run in background workers.

    ``additional_checks``: check ids, Check objects or ``{"check": id, "required": bool}`` of the
    test's agent, up to settings.EVALCONSOLE_MAX_ADDITIONAL_CHECKS (counted apart from the test's
    own checks); they are required unless given ``required: false``. ``token``: the ApiToken that
    launched it (``by`` defaults to its user). Raises PermissionDenied (role below member, or
    another team's test) and ValidationFailed naming the field.
    """
    with transaction.atomic():
        run = _create_run(test=test, by=by, token=token, additional_checks=additional_checks, batch=batch)
        transaction.on_commit(enqueue_drain)
    return run


def max_trials() -> int:
    return int(getattr(settings, "EVALCONSOLE_MAX_TRIALS", 10))


def launch_trials(
    *, test: Test, by, trials: int, additional_checks: Iterable = (), token=None
) -> list[Run]:
    """Launch ``trials`` runs of ``test`` at once, one batch id for them all (all or none): the
    launch option "trials". Each run is an ordinary run within the per-run sample limit; the batch's
    consistency pools their samples (runs/consistency.py ``batch_figures``).

    Raises ValidationFailed on ``trials`` (not a whole number from 1 to settings.EVALCONSOLE_MAX_TRIALS)
    and what launch_run raises.
    """
    limit = max_trials()
    if isinstance(trials, bool) or not isinstance(trials, int) or not 1 <= trials <= limit:
        raise ValidationFailed(
            f"trials must be a whole number from 1 to {limit} (runs per launch), not {str(trials)[:20]!r}",
            field="trials",
        )
    batch = uuid.uuid4().hex[:16]
    additional = list(additional_checks or ())
    with transaction.atomic():
        runs = [
            _create_run(test=test, by=by, token=token, additional_checks=additional, batch=batch)
            for _ in range(trials)
        ]
        transaction.on_commit(enqueue_drain)
    return runs


def launch_test_set(*, test_set: TestSet, by, additional_checks: Iterable = (), token=None) -> list[Run]:
    """Launch every non-archived test of ``test_set`` (all or none), one batch id for them all."""
    tests = list(Test.objects.filter(test_set=test_set, archived_at__isnull=True).order_by("name", "pk"))
    access.require(_launcher(by, token), access.USE, test_set, team=test_set.agent.team)
    if test_set.archived_at is not None:
        raise ValidationFailed(
            f"test set {test_set.name!r} is archived; restore it to launch it", field="test_set"
        )
    if not tests:
        raise ValidationFailed(f"test set {test_set.name!r} has no tests to launch", field="test_set")
    batch = uuid.uuid4().hex[:16]
    additional = list(additional_checks or ())
    with transaction.atomic():
        runs = [
            _create_run(test=test, by=by, token=token, additional_checks=additional, batch=batch)
            for test in tests
        ]
        transaction.on_commit(enqueue_drain)
    return runs


def cancel_run(*, run: Run, by) -> Run:
    """Stop a queued or running run: no new agent calls; what finished so far stays.

    Queued and running samples become cancelled (a worker still calling the agent for one loses its
    claim, so it stops at its next lease renewal and its result is never written). The summary
    keeps the finished samples; the run's result stays empty. Raises Conflict on a finished run.
    """
    access.require(by, access.USE, run, team=run.agent.team)
    now = timezone.now()
    with transaction.atomic():
        locked = Run.objects.select_for_update().get(pk=run.pk)
        if locked.status not in ACTIVE:
            raise Conflict(f"run {locked.pk} is already {locked.get_status_display().lower()}")
        open_samples = Sample.objects.filter(run=locked, status__in=OPEN)
        end_worlds_of(open_samples)  # a scene sample's world stops answering (410) with it
        open_samples.update(
            status=Sample.Status.CANCELLED, claimed_by="", lease_expires_at=None, finished_at=now
        )
        progress = run_summary(locked.pk)
        Run.objects.filter(pk=locked.pk).update(
            status=Run.Status.CANCELLED,
            finished_at=now,
            done_samples=progress.done,
            summary=progress.summary.as_dict(),
        )
    return Run.objects.get(pk=run.pk)


# --------------------------------------------------------------------------- enqueue


def enqueue_drain() -> None:
    """Ask a worker to drain queued samples (one django-q2 task drains every run)."""
    from django_q.tasks import async_task

    async_task("runs.tasks.drain_samples", group="runs-drain", q_options={"task_name": "drain samples"})
