"""The user-facing writes to runs: launch (one run or a whole test set) and cancel.

Launching freezes what a run uses (the test's current version and the current version of each
check) and enqueues background work after commit. What the workers do with it afterwards
(claim, renew, record, recover, finalise) is the storage protocol in runs/queue.py.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from django.conf import settings
from django.db import connection, transaction
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
    "launch_batch",
    "launch_run",
    "launch_test_set",
    "launch_trials",
]


# --------------------------------------------------------------------------- launch


def _launcher(by, token):
    if by is None and token is not None:
        return token.user
    return by


def _resolve_additional(*, agent: Agent, additional_checks) -> list[tuple[Check, bool]]:
    limit = int(settings.EVALCONSOLE_MAX_ADDITIONAL_CHECKS)
    items = list(additional_checks or ())
    if len(items) > limit:
        raise ValidationFailed(
            f"{len(items)} additional checks is over the limit of {limit} per run "
            "(counted separately from the test's own checks)",
            field="additional_checks",
        )
    return resolve_checks(agent=agent, checks=items, limit=limit, field="additional_checks")


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


def _launchable(test: Test, field: str) -> TestVersion:
    """The version a launch of `test` freezes, or ValidationFailed naming `field` (rules of one test)."""
    agent = test.test_set.agent
    if test.archived_at is not None:
        raise ValidationFailed(f"test {test.name!r} is archived; restore it to launch it", field=field)
    if test.test_set.archived_at is not None:
        raise ValidationFailed(archived_test_set_problem(test.test_set), field=field)
    if agent.archived_at is not None:
        raise ValidationFailed(f"agent {agent.name!r} is archived", field=field)
    if test.current_version_id is None:
        raise ValidationFailed(f"test {test.name!r} has no saved version", field=field)
    version = test.current_version
    total = len(version.scenarios) * version.samples_per_scenario
    limit = int(settings.EVALCONSOLE_MAX_SAMPLES_PER_RUN)
    if total > limit:  # the limit may have been lowered since the test was saved
        raise ValidationFailed(
            f"{len(version.scenarios)} scenarios × {version.samples_per_scenario} samples = {total} is over "
            f"the limit of {limit} samples per run",
            field=field,
        )
    return version


def _by_version(rows, versions: set[int]) -> dict[int, list]:
    out: dict[int, list] = {pk: [] for pk in versions}
    for row in rows:
        out[row.test_version_id].append(row)
    return out


def _create_runs(
    *, tests: list[Test], by, token, additional_checks, batch: str, field=lambda i: "test"
) -> list[Run]:
    """The writes of launching one run per entry of ``tests`` (a test may repeat), in that order.

    The caller holds the transaction. The number of queries does not grow with the number of runs:
    the tests, their attached checks and scenes, each team's membership and each agent's additional
    checks are read once, and runs, run checks, scenes and samples are each one bulk insert.
    ``field(i)`` names the input of the i-th test in a ValidationFailed.
    """
    launcher = _launcher(by, token)
    loaded = Test.objects.select_related("test_set__agent__team", "current_version").in_bulk(
        {test.pk for test in tests}
    )
    versions: dict[int, TestVersion] = {}
    allowed: set[int] = set()
    for index, test in enumerate(tests):
        if test.pk in versions:
            continue
        found = loaded.get(test.pk)
        if found is None:
            raise ValidationFailed(f"test {test.pk} does not exist", field=field(index))
        team = found.test_set.agent.team
        if team.pk not in allowed:
            access.require(launcher, access.CREATE, Run, team=team)
            allowed.add(team.pk)
        versions[test.pk] = _launchable(found, field(index))
    version_ids = {version.pk for version in versions.values()}
    attached = _by_version(
        TestCheck.objects.filter(test_version_id__in=version_ids)
        .select_related("library_check")
        .order_by("position", "pk"),
        version_ids,
    )
    scenes = _by_version(
        TestScene.objects.filter(test_version_id__in=version_ids)
        .select_related("scene")
        .order_by("position"),
        version_ids,
    )
    additional: dict[int, list[tuple[Check, bool]]] = {}  # agent id → resolved additional checks
    summaries: dict[int, dict] = {}
    for index, test in enumerate(tests):
        found, version = loaded[test.pk], versions[test.pk]
        if version.pk in summaries:
            continue
        archived = [ts.scene.name for ts in scenes[version.pk] if ts.scene.archived_at is not None]
        if archived:
            raise ValidationFailed(
                f"scene {archived[0]!r} is archived; restore it to launch this test", field=field(index)
            )
        agent = found.test_set.agent
        if agent.pk not in additional:
            additional[agent.pk] = (
                _resolve_additional(agent=agent, additional_checks=additional_checks)
                if additional_checks
                else []
            )
        attached_ids = {tc.library_check_id for tc in attached[version.pk]}
        for position, (check, _required) in enumerate(additional[agent.pk]):
            if check.pk in attached_ids:
                raise ValidationFailed(
                    f"check {check.name!r} is already attached to the test",
                    field=f"additional_checks.{position}.check",
                )
        summaries[version.pk] = _initial_summary(version)
    launched_by = launcher if getattr(launcher, "pk", None) else None
    runs = Run.objects.bulk_create(
        [
            Run(
                agent=loaded[test.pk].test_set.agent,
                test=loaded[test.pk],
                test_version=versions[test.pk],
                status=Run.Status.QUEUED,
                launched_by=launched_by,
                launched_by_token=token,
                batch=batch or "",
                total_samples=len(versions[test.pk].scenarios) * versions[test.pk].samples_per_scenario,
                done_samples=0,
                summary=summaries[versions[test.pk].pk],
            )
            for test in tests
        ]
    )
    run_checks, run_scenes, samples = [], [], []
    for run in runs:
        version, extra = run.test_version, additional[run.agent_id]
        own = attached[version.pk]
        # Freeze the CURRENT version of every check now; later edits make new versions this run never sees.
        run_checks += [
            RunCheck(
                run=run,
                check_version_id=tc.library_check.current_version_id,
                required=tc.required,
                additional=False,
                position=position,
            )
            for position, tc in enumerate(own)
        ]
        run_checks += [
            RunCheck(
                run=run,
                check_version_id=check.current_version_id,
                required=required,
                additional=True,
                position=len(own) + position,
            )
            for position, (check, required) in enumerate(extra)
        ]
        # Freeze each scene's CURRENT version too: every sample of the run plays exactly that file.
        run_scenes += [
            RunScene(run=run, scenario_index=ts.position, scene_version_id=ts.scene.current_version_id)
            for ts in scenes[version.pk]
        ]
        samples += [
            (run.pk, s, k) for s in range(len(version.scenarios)) for k in range(version.samples_per_scenario)
        ]
    RunCheck.objects.bulk_create(run_checks)
    RunScene.objects.bulk_create(run_scenes)
    _insert_samples(samples)
    return runs


def _insert_samples(rows: list[tuple[int, int, int]]) -> None:
    """The queued samples of new runs, (run id, scenario index, sample index) each: one INSERT per row
    through executemany. Every other column is its field's default, prepared once as the ORM would;
    bulk_create built a model instance and ran every field's preparation per row, most of the CPU of a
    100-run launch (1,000 samples), which a batch's first agent call waits for."""
    if not rows:
        return
    varying = ("run_id", "scenario_index", "sample_index")
    fields = [f for f in Sample._meta.concrete_fields if not f.primary_key and f.attname not in varying]
    template = Sample()
    fixed = [f.get_db_prep_save(f.pre_save(template, True), connection) for f in fields]
    qn = connection.ops.quote_name
    columns = ", ".join(qn(c) for c in [*varying, *(f.column for f in fields)])
    marks = ", ".join(["%s"] * (len(varying) + len(fields)))
    with connection.cursor() as cursor:
        cursor.executemany(
            f"INSERT INTO {qn(Sample._meta.db_table)} ({columns}) VALUES ({marks})",
            [[*row, *fixed] for row in rows],
        )


def launch_run(*, test: Test, by, additional_checks: Iterable = (), token=None, batch: str = "") -> Run:
    """Launch one run of ``test``'s current version; its samples run in background workers.

    ``additional_checks``: check ids, Check objects or ``{"check": id, "required": bool}`` of the
    test's agent, up to settings.EVALCONSOLE_MAX_ADDITIONAL_CHECKS (counted apart from the test's
    own checks); they are required unless given ``required: false``. ``token``: the ApiToken that
    launched it (``by`` defaults to its user). Raises PermissionDenied (role below member, or
    another team's test) and ValidationFailed naming the field.
    """
    with transaction.atomic():
        [run] = _create_runs(
            tests=[test], by=by, token=token, additional_checks=additional_checks, batch=batch
        )
        transaction.on_commit(enqueue_drain)
    return run


def max_trials() -> int:
    return int(getattr(settings, "EVALCONSOLE_MAX_TRIALS", 10))


def max_batch_runs() -> int:
    return int(getattr(settings, "EVALCONSOLE_MAX_BATCH_RUNS", 200))


def _launch_batch(*, tests: list[Test], by, additional_checks, token, field=lambda i: "test") -> list[Run]:
    """One transaction and one enqueued drain for every run, under one new batch id (all or none)."""
    batch = uuid.uuid4().hex[:16]
    with transaction.atomic():
        runs = _create_runs(
            tests=tests,
            by=by,
            token=token,
            additional_checks=list(additional_checks or ()),
            batch=batch,
            field=field,
        )
        transaction.on_commit(enqueue_drain)
    return runs


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
    return _launch_batch(tests=[test] * trials, by=by, additional_checks=additional_checks, token=token)


def launch_batch(*, tests: Iterable[Test], by, additional_checks: Iterable = (), token=None) -> list[Run]:
    """Launch one run per entry of ``tests`` (a test may repeat: N entries, N runs) as one batch.

    All or none: one transaction, one enqueued drain for all the runs, and a number of queries that
    does not grow with the number of runs. Every run gets ``additional_checks`` (of each test's agent).
    At most settings.EVALCONSOLE_MAX_BATCH_RUNS runs. Raises PermissionDenied (a role below member in
    a test's team) and ValidationFailed naming ``tests.<i>`` for the first bad entry (what launch_run
    refuses: archived, no saved version, over the sample limit), ``tests`` for an empty or too long list.
    """
    tests = list(tests)
    limit = max_batch_runs()
    if not tests:
        raise ValidationFailed("name at least one test to launch", field="tests")
    if len(tests) > limit:
        raise ValidationFailed(
            f"{len(tests)} runs is over the limit of {limit} runs per batch", field="tests"
        )
    return _launch_batch(
        tests=tests, by=by, additional_checks=additional_checks, token=token, field=lambda i: f"tests.{i}"
    )


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
    return _launch_batch(tests=tests, by=by, additional_checks=additional_checks, token=token)


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
