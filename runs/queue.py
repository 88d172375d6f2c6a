"""The worker's storage protocol: how background workers claim, run and record samples.

Workers (runs/execution.py) call the sync functions below from a database thread:

    claim_samples()         queued -> running, with a lease and a claim token, per-agent cap held
    renew_leases()          keep the leases of samples whose agent call is still running
    record_sample_results() write finished samples (fields + CheckResults + run counters) in one
                            transaction; a write whose claim token is stale changes nothing
    recover_runs()          re-queue samples whose worker died (lease expired), finalise stuck runs
    finalise_run()          complete an active run with no open samples

A sample is written at most once per claim and a run is finalised exactly once (conditional updates
on the row's status), so a duplicate executor, django-q2's redelivery or a restarted worker can
never double count. The user-facing writes (launching, cancelling) are in runs/services.py.
"""

from __future__ import annotations

import logging
import os
import socket
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, F, Q
from django.utils import timezone

from agents.models import Agent
from checks.kinds import Outcome
from runs import limiter
from runs.models import CheckResult, Run, RunCheck, RunScene, Sample
from runs.outcomes import RunSummary, SampleRecord, ScenarioSpec, summarise_run
from worlds.models import World

log = logging.getLogger(__name__)

ACTIVE = (Run.Status.QUEUED, Run.Status.RUNNING)
OPEN = (Sample.Status.QUEUED, Sample.Status.RUNNING)

__all__ = [
    "ACTIVE",
    "OPEN",
    "CheckResultWrite",
    "Claim",
    "ClaimedSample",
    "PlannedCheck",
    "RecoveryReport",
    "RunPlan",
    "RunProgress",
    "SampleWrite",
    "claim_samples",
    "error_result",
    "finalise_run",
    "is_retried_db_step",
    "lease_seconds",
    "load_plans",
    "record_sample_results",
    "recover_runs",
    "renew_leases",
    "retried_db_step",
    "run_summaries",
    "run_summary",
    "scenario_specs",
    "worker_name",
]


def retried_db_step[F: Callable[..., Any]](fn: F) -> F:
    """Mark ``fn`` as a database step that is safe to repeat after a transient error.

    A step qualifies when a failed attempt wrote nothing (one transaction, or conditional updates
    only), so running it again cannot double count. The drain (runs/execution.py) retries marked
    steps on OperationalError / InterfaceError; calling ``fn`` directly is unchanged. The mark is an
    attribute, so ``functools.wraps`` carries it over to a wrapper.
    """
    fn.retried_db_step = True  # type: ignore[attr-defined]
    return fn


def is_retried_db_step(fn: Callable[..., Any]) -> bool:
    return getattr(fn, "retried_db_step", False) is True


def lease_seconds() -> float:
    # Settings are read at call time so tests can override them with the `settings` fixture.
    return float(settings.EVALCONSOLE_SAMPLE_LEASE_S)


def scenario_specs(scenarios: Sequence, min_valid: int, rate: int) -> list[ScenarioSpec]:
    return [ScenarioSpec(min_valid=min_valid, required_pass_rate=rate) for _ in scenarios]


# --------------------------------------------------------------------------- summaries


@dataclass(frozen=True)
class RunProgress:
    """A run's summary and sample counts, derived from its samples and check results."""

    summary: RunSummary
    done: int  # samples finished with an outcome
    open: int  # samples queued or running


def run_summary(run_id: int) -> RunProgress:
    """The RunProgress of one run from its samples and check results."""
    return run_summaries([run_id])[run_id]


def run_summaries(run_ids: Iterable[int]) -> dict[int, RunProgress]:
    """run_summary for several runs in three queries (test versions, samples, check results)."""
    run_ids = list(run_ids)
    versions = {
        pk: scenario_specs(scenarios or [], min_valid, rate)
        for pk, scenarios, min_valid, rate in Run.objects.filter(pk__in=run_ids).values_list(
            "pk",
            "test_version__scenarios",
            "test_version__min_valid_per_scenario",
            "test_version__required_pass_rate",
        )
    }
    per_sample: dict[int, dict] = {}
    for sample_id, cv_id, outcome in CheckResult.objects.filter(sample__run_id__in=run_ids).values_list(
        "sample_id", "check_version_id", "outcome"
    ):
        per_sample.setdefault(sample_id, {})[cv_id] = outcome
    records: dict[int, list[SampleRecord]] = {pk: [] for pk in versions}
    counts = {pk: [0, 0] for pk in versions}  # done, open
    for run_id, pk, scenario_index, status, outcome in Sample.objects.filter(run_id__in=run_ids).values_list(
        "run_id", "pk", "scenario_index", "status", "outcome"
    ):
        finished = status == Sample.Status.DONE and bool(outcome)
        counts[run_id][0] += finished
        counts[run_id][1] += status in OPEN
        records[run_id].append(
            SampleRecord(
                scenario_index=scenario_index,
                outcome=outcome if finished else None,
                checks=per_sample.get(pk, {}) if finished else {},
            )
        )
    return {
        run_id: RunProgress(
            summary=summarise_run(records[run_id], specs), done=counts[run_id][0], open=counts[run_id][1]
        )
        for run_id, specs in versions.items()
    }


def _refresh_runs(run_ids: Iterable[int], now: datetime) -> set[int]:
    """Write done/summary of these runs; complete those with nothing open. Returns the completed ids.

    The caller holds the runs' row locks and passes only runs it saw active. Two UPDATE statements
    through executemany (runs still going, runs completing) instead of one ORM update per run: a busy
    worker refreshes a dozen runs per write. Each row is still guarded by ``status IN (queued, running)``.
    """
    going: list[list[Any]] = []
    done: list[list[Any]] = []
    summary_field = Run._meta.get_field("summary")
    for run_id, progress in run_summaries(run_ids).items():
        summary = summary_field.get_db_prep_save(progress.summary.as_dict(), connection)
        if progress.open:
            going.append([progress.done, summary, run_id])
        else:
            done.append([progress.done, summary, str(progress.summary.result), run_id])
    qn = connection.ops.quote_name
    table, pk = qn(Run._meta.db_table), qn(Run._meta.pk.column)
    guard = f"{pk} = %s AND {qn('status')} IN ('{Run.Status.QUEUED}', '{Run.Status.RUNNING}')"
    with connection.cursor() as cursor:
        if going:
            cursor.executemany(
                f"UPDATE {table} SET {qn('done_samples')} = %s, {qn('summary')} = %s WHERE {guard}", going
            )
        if done:
            moment = Run._meta.get_field("finished_at").get_db_prep_save(now, connection)
            cursor.executemany(
                f"UPDATE {table} SET {qn('done_samples')} = %s, {qn('summary')} = %s, {qn('result')} = %s, "
                f"{qn('status')} = '{Run.Status.COMPLETED}', {qn('finished_at')} = %s, "
                f"{qn('started_at')} = COALESCE({qn('started_at')}, %s) WHERE {guard}",
                [[d, summary, result, moment, moment, run_id] for d, summary, result, run_id in done],
            )
    return {row[-1] for row in done}


def _locked_active(run_ids: Iterable[int]) -> list[int]:
    """Lock these runs' rows (by pk: the lock order everywhere) and return the ids still active."""
    rows = Run.objects.select_for_update().filter(pk__in=run_ids).order_by("pk").values_list("pk", "status")
    return [pk for pk, status in rows if status in ACTIVE]


def finalise_run(*, run: Run) -> bool:
    """Complete an active run with no open samples (exactly once: the update is conditional)."""
    with transaction.atomic():
        return run.pk in _refresh_runs(_locked_active([run.pk]), timezone.now())


# --------------------------------------------------------------------------- worker: claim


@dataclass(frozen=True)
class PlannedCheck:
    check_version_id: int
    kind: str
    config: dict
    required: bool
    name: str


@dataclass(frozen=True)
class RunPlan:
    """What executing a sample of a run needs; immutable once the run is launched."""

    run_id: int
    agent_id: int
    team_id: int
    scenarios: list
    checks: tuple[PlannedCheck, ...]
    # scenario index -> the scene version it plays (scene tests); each sample then gets a fresh world
    scenes: dict[int, int] = field(default_factory=dict)
    # Shared by the run's samples in this worker: identical judge calls (same model, rubric and
    # conversation) within a run are made once.
    eval_cache: dict = field(default_factory=dict, compare=False, hash=False, repr=False)


@dataclass(frozen=True)
class ClaimedSample:
    id: int
    run_id: int
    agent_id: int
    scenario_index: int
    sample_index: int
    claim: str
    executions: int
    previous_attempts: list
    windowed: bool = False  # the agent's AIMD window was below its cap when claimed


@dataclass
class Claim:
    samples: list[ClaimedSample] = field(default_factory=list)
    agents: dict[int, Agent] = field(default_factory=dict)  # rows read under the claim (fresh targets)
    plans: dict[int, RunPlan] = field(default_factory=dict)  # for runs not in `known_runs`
    queued_left: bool = False  # queued samples exist (claimable now or later)
    capped: bool = False  # an agent with claimable samples was at its cap


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _claimable(now: datetime) -> Q:
    # A queued sample with a future lease_expires_at is deferred (rate limited): not claimable yet.
    return Q(status=Sample.Status.QUEUED) & (Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lte=now))


def _in_flight(agent_id: int, now: datetime) -> int:
    return Sample.objects.filter(
        run__agent_id=agent_id, status=Sample.Status.RUNNING, lease_expires_at__gt=now
    ).count()


def load_plans(run_ids: Iterable[int]) -> dict[int, RunPlan]:
    run_ids = list(run_ids)
    if not run_ids:
        return {}
    checks: dict[int, list[PlannedCheck]] = {}
    for rc in (
        RunCheck.objects.filter(run_id__in=run_ids).select_related("check_version").order_by("position", "pk")
    ):
        cv = rc.check_version
        checks.setdefault(rc.run_id, []).append(
            PlannedCheck(
                check_version_id=cv.pk,
                kind=cv.kind,
                config=dict(cv.config),
                required=rc.required,
                name=cv.name,
            )
        )
    scenes: dict[int, dict[int, int]] = {}
    for run_id, index, version_id in RunScene.objects.filter(run_id__in=run_ids).values_list(
        "run_id", "scenario_index", "scene_version_id"
    ):
        scenes.setdefault(run_id, {})[index] = version_id
    plans = {}
    for run_id, agent_id, team_id, scenarios in Run.objects.filter(pk__in=run_ids).values_list(
        "pk", "agent_id", "agent__team_id", "test_version__scenarios"
    ):
        plans[run_id] = RunPlan(
            run_id=run_id,
            agent_id=agent_id,
            team_id=team_id,
            scenarios=list(scenarios or []),
            checks=tuple(checks.get(run_id, ())),
            scenes=scenes.get(run_id, {}),
        )
    return plans


def claim_samples(*, worker: str, capacity: int, known_runs: Iterable[int] = ()) -> Claim:
    """Claim up to ``capacity`` queued samples across all runs, holding each agent's in-flight cap.

    Per agent: lock the agent row (PostgreSQL; SQLite's IMMEDIATE transaction locks the database),
    count its running samples with an unexpired lease (every worker's), claim at most the free
    slots with ``UPDATE ... WHERE pk IN (...) AND status = 'queued'`` and re-read what this claim
    token actually got.
    """
    result = Claim()
    if capacity <= 0:
        return result
    now = timezone.now()
    lease_until = now + timedelta(seconds=lease_seconds())
    agent_ids = list(
        Sample.objects.filter(_claimable(now)).values_list("run__agent_id", flat=True).distinct().order_by()
    )
    if not agent_ids:
        result.queued_left = Sample.objects.filter(status=Sample.Status.QUEUED).exists()
        return result
    result.queued_left = True
    left = capacity
    claimed_runs: set[int] = set()
    for agent_id in agent_ids:
        if left <= 0:
            break
        if connection.vendor == "sqlite":
            # A cheap unlocked look first: on SQLite the transaction below locks the whole database.
            cap_row = (
                Agent.objects.filter(pk=agent_id).values_list("max_concurrency", "concurrency_window").first()
            )
            if cap_row is None or _in_flight(agent_id, now) >= limiter.allowed_in_flight(*cap_row):
                result.capped = True
                continue
        token = f"{worker}:{uuid.uuid4().hex[:12]}"
        with transaction.atomic():
            agent = Agent.objects.select_for_update().get(pk=agent_id)
            free = limiter.allowed_in_flight(agent.max_concurrency, agent.concurrency_window) - _in_flight(
                agent_id, now
            )
            take = min(free, left)
            if take <= 0:
                result.capped = result.capped or free <= 0
                continue
            ids = list(
                Sample.objects.filter(_claimable(now), run__agent_id=agent_id)
                .order_by("pk")
                .values_list("pk", flat=True)[:take]
            )
            if not ids:
                continue
            Sample.objects.filter(pk__in=ids, status=Sample.Status.QUEUED).update(
                status=Sample.Status.RUNNING,
                claimed_by=token,
                lease_expires_at=lease_until,
                executions=F("executions") + 1,
                started_at=now,
            )
            got = list(
                Sample.objects.filter(pk__in=ids, claimed_by=token, status=Sample.Status.RUNNING).values_list(
                    "pk", "run_id", "scenario_index", "sample_index", "executions", "attempts"
                )
            )
        if not got:
            continue
        result.agents[agent_id] = agent
        for pk, run_id, scenario_index, sample_index, executions, attempts in got:
            result.samples.append(
                ClaimedSample(
                    id=pk,
                    run_id=run_id,
                    agent_id=agent_id,
                    scenario_index=scenario_index,
                    sample_index=sample_index,
                    claim=token,
                    executions=executions,
                    previous_attempts=list(attempts or []),
                    windowed=agent.concurrency_window is not None,
                )
            )
            claimed_runs.add(run_id)
        left -= len(got)
    if claimed_runs:
        Run.objects.filter(pk__in=claimed_runs, status=Run.Status.QUEUED).update(
            status=Run.Status.RUNNING, started_at=now
        )
        result.plans = load_plans(claimed_runs - set(known_runs))
    return result


@retried_db_step
def renew_leases(samples: Iterable[ClaimedSample]) -> set[int]:
    """Extend the leases of these samples while their claim tokens still hold; returns the ids still held.

    A sample missing from the answer was cancelled or taken over (its lease had expired): its
    executor must stop and drop its result.

    One UPDATE however many samples (a drain renews all its calls every second):
    ``WHERE pk IN (ids) AND status = 'running' AND claimed_by IN (tokens)``. Only when it matches
    fewer rows than it was given does a SELECT say which ones are still held, each by its own token.
    Tokens are unique per claim, so a row is matched by another of the caller's tokens only if the
    caller claimed that sample again; the drain then has already cancelled the older call.
    """
    claims: dict[int, set[str]] = {}
    for sample in samples:
        claims.setdefault(sample.id, set()).add(sample.claim)
    if not claims:
        return set()
    tokens = sorted(set().union(*claims.values()))
    rows = Sample.objects.filter(pk__in=sorted(claims), status=Sample.Status.RUNNING, claimed_by__in=tokens)
    until = timezone.now() + timedelta(seconds=lease_seconds())
    if rows.update(lease_expires_at=until) == len(claims) and all(len(c) == 1 for c in claims.values()):
        return set(claims)
    return {pk for pk, claim in rows.values_list("pk", "claimed_by") if claim in claims[pk]}


@retried_db_step
def attach_world(*, sample_id: int, claim: str, world_id: str) -> bool:
    """Record the world a claimed scene sample plays in, before the agent is called, so cancelling
    the run ends it. A world the sample played in before (a retry after a lost lease) is ended."""
    with transaction.atomic():
        previous = Sample.objects.filter(pk=sample_id).values_list("world_id", flat=True).first()
        if previous and previous != world_id:
            World.objects.filter(pk=previous, ended_at__isnull=True).update(
                ended_at=timezone.now(), end_reason="stopped"
            )
        return bool(
            Sample.objects.filter(pk=sample_id, claimed_by=claim, status=Sample.Status.RUNNING).update(
                world_id=world_id
            )
        )


def end_worlds_of(samples) -> int:
    """End the live worlds of these samples (a cancelled run): their URLs answer 410 at once."""
    return World.objects.filter(sample__in=samples, ended_at__isnull=True).update(
        ended_at=timezone.now(), end_reason="stopped"
    )


# --------------------------------------------------------------------------- worker: record


@dataclass(frozen=True)
class CheckResultWrite:
    """One CheckResult of a finished sample: a check version's verdict, ready to be stored."""

    check_version_id: int
    required: bool
    outcome: str
    expected: str = ""
    actual: str = ""
    explanation: str = ""
    evidence: list = field(default_factory=list)
    details: dict = field(default_factory=dict)

    def columns(self) -> dict[str, Any]:
        """CheckResult field values (shallow: the JSON values are stored as they are)."""
        return {
            "check_version_id": self.check_version_id,
            "required": self.required,
            "outcome": self.outcome,
            "expected": self.expected,
            "actual": self.actual,
            "explanation": self.explanation,
            "evidence": self.evidence,
            "details": self.details,
        }


@dataclass(frozen=True)
class SampleWrite:
    """A finished (or rate-limit deferred) sample, ready to be written under its claim token."""

    sample_id: int
    run_id: int
    agent_id: int
    claim: str
    outcome: str = ""
    request: dict | None = None
    output: str = ""
    tool_calls: object = None
    trace: object = None
    transcript: list = field(default_factory=list)
    latency_ms: float | None = None
    attempts: list = field(default_factory=list)
    error: str = ""
    results: tuple[CheckResultWrite, ...] = ()
    requeue_at: datetime | None = None  # set: put the sample back in the queue until then (429s)
    saw_429: bool = False
    grow_window: bool = False  # a success while the agent's window was shrunk: grow it (AIMD)
    world_id: str | None = None  # the sample's world (scene tests)
    world_checks: list = field(default_factory=list)  # the scene's own checks judged there


@retried_db_step
def record_sample_results(items: Sequence[SampleWrite]) -> list[bool]:
    """Write finished samples in ONE transaction; returns, per item, whether it was written.

    Each sample is written only while it is ``running`` under the item's claim token: a stale
    executor (its sample cancelled, or re-run elsewhere after its lease expired) writes nothing.
    The rows are locked first (runs, then their samples), so the check and the write cannot be
    separated by another worker. Every run touched gets its done count and summary refreshed and
    is completed (exactly once) when none of its samples is open. Agent windows (AIMD) are updated
    afterwards, outside the transaction.
    """
    if not items:
        return []
    now = timezone.now()
    with transaction.atomic():
        # Lock order everywhere: runs (by pk), then their samples (cancel_run does the same).
        active = set(_locked_active({item.run_id for item in items}))
        held = dict(
            Sample.objects.select_for_update()
            .filter(pk__in=[item.sample_id for item in items], status=Sample.Status.RUNNING)
            .order_by("pk")
            .values_list("pk", "claimed_by")
        )
        written: list[bool] = []
        finished: list[SampleWrite] = []
        for item in items:
            ok = bool(item.claim) and held.pop(item.sample_id, None) == item.claim  # pop: once per batch
            written.append(ok)
            if not ok:
                continue
            if item.requeue_at is not None:
                Sample.objects.filter(pk=item.sample_id).update(
                    status=Sample.Status.QUEUED,
                    claimed_by="",
                    lease_expires_at=item.requeue_at,
                    attempts=item.attempts,
                    error=item.error,
                )
            else:
                finished.append(item)
        if finished:
            _write_finished(finished, now)
            _insert_results(finished, now)
            _refresh_runs(sorted({item.run_id for item in finished} & active), now)
    _adapt_windows(items, written)
    return written


_FINISHED_FIELDS = (
    "status",
    "outcome",
    "request",
    "output",
    "tool_calls",
    "trace",
    "transcript",
    "latency_ms",
    "attempts",
    "error",
    "lease_expires_at",
    "finished_at",
    "world",
    "world_checks",
)


def _write_finished(items: Sequence[SampleWrite], now: datetime) -> None:
    """One UPDATE per sample through executemany: the hot path of a busy worker.

    The rows are locked and checked by the caller; values go through each field's own database
    preparation (JSON on SQLite and PostgreSQL, aware datetimes), exactly as the ORM would.
    """
    qn = connection.ops.quote_name
    fields = [Sample._meta.get_field(name) for name in _FINISHED_FIELDS]
    sets = ", ".join(f"{qn(f.column)} = %s" for f in fields)
    sql = f"UPDATE {qn(Sample._meta.db_table)} SET {sets} WHERE {qn(Sample._meta.pk.column)} = %s"
    rows = []
    for item in items:
        values = {
            "status": Sample.Status.DONE,
            "outcome": str(item.outcome),
            "request": item.request,
            "output": item.output or "",
            "tool_calls": item.tool_calls,
            "trace": item.trace,
            "transcript": item.transcript,
            "latency_ms": item.latency_ms,
            "attempts": item.attempts,
            "error": item.error or "",
            "lease_expires_at": None,
            "finished_at": now,
            "world": item.world_id,
            "world_checks": item.world_checks,
        }
        rows.append([f.get_db_prep_save(values[f.name], connection) for f in fields] + [item.sample_id])
    with connection.cursor() as cursor:
        cursor.executemany(sql, rows)


_RESULT_FIELDS = (
    "sample",
    "check_version",
    "required",
    "outcome",
    "expected",
    "actual",
    "explanation",
    "evidence",
    "details",
    "created_at",
)


def _insert_results(items: Sequence[SampleWrite], now: datetime) -> None:
    """The CheckResults of finished samples: one INSERT per result through executemany.

    Django's bulk_create builds every row through a model instance and its insert compiler, which was
    a third of a busy worker's database thread; the values go through each field's own database
    preparation here exactly as bulk_create would. Columns not listed keep their database NULL
    (task, monitor, evaluation, observed_at: a sample's result has none of them).
    """
    qn = connection.ops.quote_name
    fields = [CheckResult._meta.get_field(name) for name in _RESULT_FIELDS]
    columns = ", ".join(qn(f.column) for f in fields)
    marks = ", ".join(["%s"] * len(fields))
    sql = f"INSERT INTO {qn(CheckResult._meta.db_table)} ({columns}) VALUES ({marks})"
    prepared_now = fields[-1].get_db_prep_save(now, connection)
    rows = []
    for item in items:
        for r in item.results:
            values = {**r.columns(), "sample_id": item.sample_id}
            row = [f.get_db_prep_save(values[f.attname], connection) for f in fields[:-1]]
            rows.append([*row, prepared_now])
    if rows:
        with connection.cursor() as cursor:
            cursor.executemany(sql, rows)


def _adapt_windows(items: Sequence[SampleWrite], written: Sequence[bool]) -> None:
    shrink: set[int] = set()
    grow: dict[int, int] = {}
    for item, ok in zip(items, written, strict=True):
        if not ok:
            continue
        if item.saw_429:
            shrink.add(item.agent_id)
        elif item.grow_window:
            grow[item.agent_id] = grow.get(item.agent_id, 0) + 1
    for agent_id in shrink:
        limiter.shrink_window(agent_id)
    for agent_id, n in grow.items():
        if agent_id not in shrink:
            limiter.grow_window(agent_id, n)


# --------------------------------------------------------------------------- recovery


@dataclass
class RecoveryReport:
    requeued: int = 0
    errored: int = 0
    finalised: int = 0
    claimable: bool = False

    def __str__(self) -> str:
        return (
            f"{self.requeued} sample(s) re-queued, {self.errored} given up, {self.finalised} run(s) finalised"
            + ("; work is queued" if self.claimable else "")
        )


@retried_db_step
def recover_runs(*, now: datetime | None = None) -> RecoveryReport:
    """Re-queue running samples whose lease expired (their worker died); finalise stuck runs.

    A sample already claimed EVALCONSOLE_MAX_SAMPLE_EXECUTIONS times is recorded as ``error``
    instead of re-run (it keeps killing workers). Finished samples are never touched.
    """
    now = now or timezone.now()
    report = RecoveryReport()
    max_exec = int(settings.EVALCONSOLE_MAX_SAMPLE_EXECUTIONS)
    expired = list(
        Sample.objects.filter(status=Sample.Status.RUNNING, lease_expires_at__lt=now).values_list(
            "pk", "run_id", "run__agent_id", "claimed_by", "executions", "attempts"
        )
    )
    give_up = [row for row in expired if row[4] >= max_exec]
    retry = [row[0] for row in expired if row[4] < max_exec]
    if retry:
        report.requeued = Sample.objects.filter(
            pk__in=retry, status=Sample.Status.RUNNING, lease_expires_at__lt=now
        ).update(status=Sample.Status.QUEUED, claimed_by="", lease_expires_at=None)
    if give_up:
        writes = []
        version_checks = {
            run_id: list(RunCheck.objects.filter(run_id=run_id).values_list("check_version_id", "required"))
            for run_id in {row[1] for row in give_up}
        }
        for pk, run_id, agent_id, claim, executions, attempts in give_up:
            message = (
                f"the worker running this sample stopped {executions} times before it finished; "
                "it is not retried again"
            )
            writes.append(
                SampleWrite(
                    sample_id=pk,
                    run_id=run_id,
                    agent_id=agent_id,
                    claim=claim,
                    outcome=Outcome.ERROR,
                    attempts=list(attempts or []),
                    error=message,
                    results=tuple(
                        error_result(cv, required, message) for cv, required in version_checks[run_id]
                    ),
                )
            )
        report.errored = sum(record_sample_results(writes))
    stuck = (
        Run.objects.filter(status__in=ACTIVE)
        .annotate(open_samples=Count("samples", filter=Q(samples__status__in=OPEN)))
        .filter(open_samples=0)
    )
    for run in stuck:
        report.finalised += finalise_run(run=run)
    report.claimable = Sample.objects.filter(_claimable(now)).exists()
    return report


def error_result(check_version_id: int, required: bool, reason: str) -> CheckResultWrite:
    """The CheckResult of a check that could not run because the sample itself failed."""
    reason = reason.rstrip(".")
    return CheckResultWrite(
        check_version_id=check_version_id,
        required=required,
        outcome=Outcome.ERROR,
        explanation=f"Not evaluated: {reason}.",
    )
