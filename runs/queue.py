"""The worker's storage protocol: how background workers claim, run and record samples.

Workers (runs/execution.py) call the sync functions below from a database thread:

    claim_samples()         queued -> running, with a lease and a claim token, per-agent cap held;
                            optionally samples claimed ahead (started_at NULL: held, not yet called)
    start_ahead()           a sample claimed ahead starts in the slot of a call that just ended
    release_ahead()         samples claimed ahead that will not be started go back to the queue
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

import json
import logging
import os
import socket
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connection, connections, models, transaction
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
    "refresh_runs",
    "renew_leases",
    "release_ahead",
    "retried_db_step",
    "run_summaries",
    "run_summary",
    "scenario_specs",
    "start_ahead",
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


class _Tables:
    """Quoted table names for the hot path's SQL (claims, writes, summaries), which skips the ORM: on a
    busy worker building each ORM query cost as much CPU as the agent call it served. ``_Tables()`` is
    worked out once per database vendor (names and quoting do not change in a process)."""

    _made: dict[str, _Tables] = {}

    def __new__(cls) -> _Tables:
        vendor = connection.vendor
        tables = cls._made.get(vendor)
        if tables is None:
            tables = cls._made[vendor] = super().__new__(cls)
            tables._fill()
        return tables

    def _fill(self) -> None:
        qn = connection.ops.quote_name
        self.sample = qn(Sample._meta.db_table)
        self.run = qn(Run._meta.db_table)
        self.agent = qn(Agent._meta.db_table)
        self.result = qn(CheckResult._meta.db_table)
        self.run_check = qn(RunCheck._meta.db_table)
        self.run_scene = qn(RunScene._meta.db_table)
        self.check_version = qn(RunCheck._meta.get_field("check_version").related_model._meta.db_table)
        self.test_version = qn(Run._meta.get_field("test_version").related_model._meta.db_table)
        features = connection.features
        self.for_update = " FOR UPDATE" if features.has_select_for_update else ""
        # The agent's lock in a claim: claims of an agent wait for each other, but inserts that only
        # reference the agent (a launch's runs: their foreign-key check) do not wait for the claim.
        self.for_no_key_update = (
            " FOR NO KEY UPDATE" if features.has_select_for_no_key_update else self.for_update
        )


def _connection() -> Any:
    """The connection object itself: ``django.db.connection`` is a proxy that looks it up (through
    asgiref's Local) on every attribute, and preparing a batch's values reads it thousands of times."""
    return connections[DEFAULT_DB_ALIAS]


def _fetch(sql: str, params: Sequence[Any] = ()) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _marks(values: Sequence[Any]) -> str:
    return ", ".join(["%s"] * len(values))


def _json(value: Any) -> Any:
    """A JSON column read with a plain cursor (text on SQLite, and on PostgreSQL as Django reads jsonb)."""
    return json.loads(value) if isinstance(value, str) else value


_PLAIN_JSON = frozenset((dict, list, str, int, float, bool))


def _preparer(field: models.Field, db: Any) -> Callable[[Any], Any]:
    """``field.get_db_prep_save(value, db)`` for the values the hot path writes, the common cases taken
    straight to the same adapter: a JSON column's plain dict, list or scalar goes to the backend's
    ``adapt_json_value`` (what JSONField's chain of calls ends in), a text column's str, a boolean
    column's bool and a float column's float are stored as they are (what to_python gives back), None is
    NULL. Anything else takes the field's own way. Same values, without five calls per value (a busy
    worker prepares ~30 values a sample; tests/runs/test_queue_prepare.py compares the two)."""
    save = field.get_db_prep_save
    kind = type(field)
    if (
        kind.get_db_prep_save is models.JSONField.get_db_prep_save
        and kind.get_db_prep_value is models.JSONField.get_db_prep_value
        and kind.get_prep_value is models.Field.get_prep_value
    ):
        adapt, encoder = db.ops.adapt_json_value, field.encoder

        def prepare_json(value: Any) -> Any:
            if value is None:
                return None
            return adapt(value, encoder) if type(value) in _PLAIN_JSON else save(value, db)

        return prepare_json
    if kind in (models.CharField, models.TextField):  # to_python keeps a str (an enum member too) as it is
        return lambda value: value if value is None or isinstance(value, str) else save(value, db)
    if kind in (models.BooleanField, models.FloatField):  # to_python: bool(value), float(value)
        same = bool if kind is models.BooleanField else float
        return lambda value: value if value is None or type(value) is same else save(value, db)
    return lambda value: save(value, db)


def _moment(value: datetime) -> Any:
    return connection.ops.adapt_datetimefield_value(value)


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
    run_ids = sorted(set(run_ids))
    if not run_ids:
        return {}
    t, ids = _Tables(), _marks(run_ids)
    versions = {
        pk: scenario_specs(_json(scenarios) or [], min_valid, rate)
        for pk, scenarios, min_valid, rate in _fetch(
            f"SELECT r.id, v.scenarios, v.min_valid_per_scenario, v.required_pass_rate FROM {t.run} r "
            f"JOIN {t.test_version} v ON v.id = r.test_version_id WHERE r.id IN ({ids})",
            run_ids,
        )
    }
    per_sample: dict[int, dict] = {}
    for sample_id, cv_id, outcome in _fetch(
        f"SELECT c.sample_id, c.check_version_id, c.outcome FROM {t.result} c "
        f"JOIN {t.sample} s ON s.id = c.sample_id WHERE s.run_id IN ({ids})",
        run_ids,
    ):
        per_sample.setdefault(sample_id, {})[cv_id] = outcome
    records: dict[int, list[SampleRecord]] = {pk: [] for pk in versions}
    counts = {pk: [0, 0] for pk in versions}  # done, open
    for run_id, pk, scenario_index, status, outcome in _fetch(
        f"SELECT run_id, id, scenario_index, status, outcome FROM {t.sample} WHERE run_id IN ({ids})", run_ids
    ):
        if run_id not in records:
            continue
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
    run_ids = sorted(set(run_ids))
    if not run_ids:
        return []
    t = _Tables()
    rows = _fetch(
        f"SELECT id, status FROM {t.run} WHERE id IN ({_marks(run_ids)}) ORDER BY id{t.for_update}", run_ids
    )
    return [pk for pk, status in rows if status in ACTIVE]


def finalise_run(*, run: Run) -> bool:
    """Complete an active run with no open samples (exactly once: the update is conditional)."""
    return run.pk in refresh_runs([run.pk])


@retried_db_step
def refresh_runs(run_ids: Iterable[int]) -> set[int]:
    """Recount the done samples and summaries of these runs (those still active) and complete those with
    nothing open, in one transaction; returns the ids completed."""
    with transaction.atomic():
        return _refresh_runs(_locked_active(run_ids), timezone.now())


def _advance_runs(finished: Sequence[SampleWrite], touched: Sequence[int], summaries: set[int], now) -> None:
    """After a write: complete (with a full recount) the touched runs that have nothing open, recount the
    runs in ``summaries``, and add the written samples to the other runs' done counts (exact: a sample
    becomes done once, under its claim), leaving their summaries to a later recount."""
    t = _Tables()
    still_open = (
        dict(
            _fetch(
                f"SELECT run_id, COUNT(*) FROM {t.sample} WHERE run_id IN ({_marks(touched)}) "
                f"AND status IN ('{Sample.Status.QUEUED}', '{Sample.Status.RUNNING}') GROUP BY run_id",
                list(touched),
            )
        )
        if touched
        else {}
    )
    recount = sorted({pk for pk in touched if not still_open.get(pk)} | summaries)
    counts: dict[int, int] = {}
    for item in finished:
        if item.run_id not in recount:
            counts[item.run_id] = counts.get(item.run_id, 0) + 1
    if counts:
        qn = connection.ops.quote_name
        table, pk, done = qn(Run._meta.db_table), qn(Run._meta.pk.column), qn("done_samples")
        with connection.cursor() as cursor:
            cursor.executemany(
                f"UPDATE {table} SET {done} = {done} + %s WHERE {pk} = %s",
                [[n, run_id] for run_id, n in sorted(counts.items())],
            )
    if recount:
        _refresh_runs(recount, now)


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
    ahead: bool = False  # claimed ahead: held under its lease, not started (start_ahead starts it)


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
    """The agent's slots in use: its running samples with a live lease, except those claimed ahead and not
    started yet (started_at NULL: no call, and one starts only in the slot of a call that ended)."""
    t = _Tables()
    return _fetch(
        f"SELECT COUNT(*) FROM {t.sample} s JOIN {t.run} r ON r.id = s.run_id "
        f"WHERE r.agent_id = %s AND s.status = '{Sample.Status.RUNNING}' AND s.lease_expires_at > %s "
        "AND s.started_at IS NOT NULL",
        [agent_id, _moment(now)],
    )[0][0]


def load_plans(run_ids: Iterable[int]) -> dict[int, RunPlan]:
    run_ids = sorted(set(run_ids))
    if not run_ids:
        return {}
    t, ids = _Tables(), _marks(run_ids)
    checks: dict[int, list[PlannedCheck]] = {}
    for run_id, cv_id, kind, config, required, name in _fetch(
        f"SELECT rc.run_id, v.id, v.kind, v.config, rc.required, v.name FROM {t.run_check} rc "
        f"JOIN {t.check_version} v ON v.id = rc.check_version_id WHERE rc.run_id IN ({ids}) "
        "ORDER BY rc.position, rc.id",
        run_ids,
    ):
        checks.setdefault(run_id, []).append(
            PlannedCheck(
                check_version_id=cv_id,
                kind=kind,
                config=dict(_json(config)),
                required=bool(required),
                name=name,
            )
        )
    scenes: dict[int, dict[int, int]] = {}
    for run_id, index, version_id in _fetch(
        f"SELECT run_id, scenario_index, scene_version_id FROM {t.run_scene} WHERE run_id IN ({ids})", run_ids
    ):
        scenes.setdefault(run_id, {})[index] = version_id
    plans = {}
    for run_id, agent_id, team_id, scenarios in _fetch(
        f"SELECT r.id, r.agent_id, a.team_id, v.scenarios FROM {t.run} r "
        f"JOIN {t.agent} a ON a.id = r.agent_id JOIN {t.test_version} v ON v.id = r.test_version_id "
        f"WHERE r.id IN ({ids})",
        run_ids,
    ):
        plans[run_id] = RunPlan(
            run_id=run_id,
            agent_id=agent_id,
            team_id=team_id,
            scenarios=list(_json(scenarios) or []),
            checks=tuple(checks.get(run_id, ())),
            scenes=scenes.get(run_id, {}),
        )
    return plans


# What a claim reads of an agent row (its cap, and what agents.targets.target_for needs to call it).
_AGENT_FIELDS = (
    "id",
    "max_concurrency",
    "concurrency_window",
    "protocol",
    "endpoint_url",
    "model_name",
    "headers_encrypted",
    "timeout_s",
    "retries",
)


def _locked_agent(agent_id: int) -> Agent:
    """The agent row, locked (FOR NO KEY UPDATE on PostgreSQL; SQLite's IMMEDIATE transaction holds the
    database): the fields a claim uses, read with a plain cursor (an ORM query cost ~1 ms of CPU here);
    the others are deferred. Raises Agent.DoesNotExist as ``.get()`` does."""
    t = _Tables()
    fields = [f for f in Agent._meta.concrete_fields if f.name in _AGENT_FIELDS]  # from_db's order
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    rows = _fetch(f"SELECT {columns} FROM {t.agent} WHERE id = %s{t.for_no_key_update}", [agent_id])
    if not rows:
        raise Agent.DoesNotExist(f"Agent {agent_id} does not exist")
    return Agent.from_db(DEFAULT_DB_ALIAS, [f.attname for f in fields], rows[0])


def claim_samples(
    *,
    worker: str,
    capacity: int,
    known_runs: Iterable[int] = (),
    ahead: Mapping[int, int] | None = None,
    ahead_max: int = 0,
) -> Claim:
    """Claim up to ``capacity`` queued samples across all runs, holding each agent's in-flight cap.

    Per agent: lock the agent row (PostgreSQL; SQLite's IMMEDIATE transaction locks the database),
    count its running samples with an unexpired lease (every worker's) and claim at most the free
    slots, oldest first, with ``UPDATE ... WHERE id IN (the first claimable ids) AND status = 'queued'
    RETURNING ...``: what this claim token actually got.

    ``ahead`` (agent id -> how many): also claim that many samples ahead per agent, ``ahead_max`` in all
    (the drain asks for one per call it has in flight to the agent, once those calls went out). A sample
    claimed ahead is ``running`` under the claim token and its lease like any other (renewed, recovered
    when its worker dies, cancelled with its run) but not started: ``started_at`` NULL, no execution
    counted, no slot of the agent's cap. Its worker starts it (``start_ahead``) in the slot of one of its
    own calls to that agent that ended, before that call's result is written, so a freed slot calls again
    without waiting for the database; it never holds more ahead than it has calls to the agent. An agent
    in an AIMD window (429s) gets none.
    """
    result = Claim()
    ahead = dict(ahead or {})
    if capacity <= 0 and not (ahead_max > 0 and any(n > 0 for n in ahead.values())):
        return result
    now = timezone.now()
    at, lease_until = _moment(now), _moment(now + timedelta(seconds=lease_seconds()))
    t = _Tables()
    # A queued sample with a future lease_expires_at is deferred (rate limited): not claimable yet.
    claimable = (
        f"s.status = '{Sample.Status.QUEUED}' AND (s.lease_expires_at IS NULL OR s.lease_expires_at <= %s)"
    )
    agent_ids = [
        row[0]
        for row in _fetch(
            f"SELECT DISTINCT r.agent_id FROM {t.sample} s JOIN {t.run} r ON r.id = s.run_id "
            f"WHERE {claimable}",
            [at],
        )
    ]
    if not agent_ids:
        result.queued_left = bool(
            _fetch(f"SELECT 1 FROM {t.sample} WHERE status = '{Sample.Status.QUEUED}' LIMIT 1")
        )
        return result
    result.queued_left = True
    left, ahead_left = max(0, capacity), max(0, ahead_max)
    claimed_runs: set[int] = set()
    pick = (
        f"WHERE id IN (SELECT s.id FROM {t.sample} s JOIN {t.run} r ON r.id = s.run_id "
        f"WHERE r.agent_id = %s AND {claimable} ORDER BY s.id LIMIT %s) "
        f"AND status = '{Sample.Status.QUEUED}' "
        "RETURNING id, run_id, scenario_index, sample_index, executions, attempts"
    )
    for agent_id in agent_ids:
        if left <= 0 and ahead_left <= 0:
            break
        if left <= 0 and not ahead.get(agent_id):
            continue
        if connection.vendor == "sqlite":
            # A cheap unlocked look first: on SQLite the transaction below locks the whole database.
            cap_row = _fetch(
                f"SELECT max_concurrency, concurrency_window FROM {t.agent} WHERE id = %s", [agent_id]
            )
            if not cap_row:
                continue
            capped = _in_flight(agent_id, now) >= limiter.allowed_in_flight(*cap_row[0])
            result.capped = result.capped or capped
            if capped and not (ahead.get(agent_id) and ahead_left and cap_row[0][1] is None):
                continue
        token = f"{worker}:{uuid.uuid4().hex[:12]}"
        with transaction.atomic():
            agent = _locked_agent(agent_id)
            free = limiter.allowed_in_flight(agent.max_concurrency, agent.concurrency_window) - _in_flight(
                agent_id, now
            )
            take = min(free, left)
            result.capped = result.capped or free <= 0
            got = []
            if take > 0:
                got = sorted(
                    _fetch(
                        f"UPDATE {t.sample} SET status = '{Sample.Status.RUNNING}', claimed_by = %s, "
                        f"lease_expires_at = %s, executions = executions + 1, started_at = %s {pick}",
                        [token, lease_until, at, agent_id, at, take],
                    )
                )
            more = 0 if agent.concurrency_window is not None else min(ahead.get(agent_id, 0), ahead_left)
            held = []
            if more > 0:
                held = sorted(
                    _fetch(
                        f"UPDATE {t.sample} SET status = '{Sample.Status.RUNNING}', claimed_by = %s, "
                        f"lease_expires_at = %s, started_at = NULL {pick}",
                        [token, lease_until, agent_id, at, more],
                    )
                )
        if not got and not held:
            continue
        result.agents[agent_id] = agent
        for rows, is_ahead in ((got, False), (held, True)):
            for pk, run_id, scenario_index, sample_index, executions, attempts in rows:
                result.samples.append(
                    ClaimedSample(
                        id=pk,
                        run_id=run_id,
                        agent_id=agent_id,
                        scenario_index=scenario_index,
                        sample_index=sample_index,
                        claim=token,
                        executions=executions,
                        previous_attempts=list(_json(attempts) or []),
                        windowed=agent.concurrency_window is not None,
                        ahead=is_ahead,
                    )
                )
                claimed_runs.add(run_id)
        left -= len(got)
        ahead_left -= len(held)
    if claimed_runs:
        runs = sorted(claimed_runs)
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {t.run} SET status = '{Run.Status.RUNNING}', started_at = %s "
                f"WHERE id IN ({_marks(runs)}) AND status = '{Run.Status.QUEUED}'",
                [at, *runs],
            )
        result.plans = load_plans(claimed_runs - set(known_runs))
    return result


def _held_by(samples: Iterable[ClaimedSample]) -> tuple[dict[int, str], list[str]]:
    claims = {sample.id: sample.claim for sample in samples}
    return claims, sorted(set(claims.values()))


@retried_db_step
def start_ahead(samples: Sequence[ClaimedSample]) -> dict[int, int]:
    """Start samples claimed ahead, each in the slot of a call to its agent that ended in this worker (its
    result not written yet, so the agent's count already holds the slot): one UPDATE that sets
    ``started_at``, counts the execution and renews the lease, only where the claim still holds (a
    cancelled run's sample, or one taken over, is not started). Returns {sample id: executions}.
    """
    if not samples:
        return {}
    claims, tokens = _held_by(samples)
    now = timezone.now()
    t, ids = _Tables(), sorted(claims)
    rows = _fetch(
        f"UPDATE {t.sample} SET started_at = %s, executions = executions + 1, lease_expires_at = %s "
        f"WHERE id IN ({_marks(ids)}) AND status = '{Sample.Status.RUNNING}' AND started_at IS NULL "
        f"AND claimed_by IN ({_marks(tokens)}) RETURNING id, claimed_by, executions",
        [_moment(now), _moment(now + timedelta(seconds=lease_seconds())), *ids, *tokens],
    )
    return {pk: executions for pk, claim, executions in rows if claims.get(pk) == claim}


@retried_db_step
def release_ahead(samples: Sequence[ClaimedSample]) -> int:
    """Put samples claimed ahead and never started back in the queue (a drain that ends, or holds more
    ahead than it has calls); returns how many went back. Started or no-longer-held ones are untouched."""
    if not samples:
        return 0
    claims, tokens = _held_by(samples)
    t, ids = _Tables(), sorted(claims)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {t.sample} SET status = '{Sample.Status.QUEUED}', claimed_by = '', "
            "lease_expires_at = NULL "
            f"WHERE id IN ({_marks(ids)}) AND status = '{Sample.Status.RUNNING}' AND started_at IS NULL "
            f"AND claimed_by IN ({_marks(tokens)})",
            [*ids, *tokens],
        )
        return cursor.rowcount


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


@dataclass(slots=True)  # not frozen: a busy worker builds thousands a second, and frozen init costs double
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


@dataclass(slots=True)  # not frozen (see CheckResultWrite); treated as a value all the same
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
def record_sample_results(items: Sequence[SampleWrite], summaries: Iterable[int] | None = None) -> list[bool]:
    """Write finished samples in ONE transaction; returns, per item, whether it was written.

    Each sample is written only while it is ``running`` under the item's claim token: a stale
    executor (its sample cancelled, or re-run elsewhere after its lease expired) writes nothing.
    The rows are locked first (runs, then their samples), so the check and the write cannot be
    separated by another worker. Every run touched gets its done count and summary refreshed and
    is completed (exactly once) when none of its samples is open. Agent windows (AIMD) are updated
    afterwards, outside the transaction.

    ``summaries`` (the drain's way): recount only the runs named there and the runs this write
    completes; the other runs touched get their done counts (exact) and keep their summaries until a
    later recount (the drain recounts the runs it wrote at most every half second: a run's summary
    while it is going is the result so far, a moment late; when it completes it is exact).
    """
    if not items:
        return []
    now = timezone.now()
    recount = set(summaries) if summaries is not None else None
    with transaction.atomic():
        # Lock order everywhere: runs (by pk), then their samples (cancel_run does the same).
        active = set(_locked_active({item.run_id for item in items} | (recount or set())))
        t, sample_ids = _Tables(), sorted({item.sample_id for item in items})
        held = dict(
            _fetch(
                f"SELECT id, claimed_by FROM {t.sample} WHERE id IN ({_marks(sample_ids)}) "
                f"AND status = '{Sample.Status.RUNNING}' ORDER BY id{t.for_update}",
                sample_ids,
            )
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
            touched = sorted({item.run_id for item in finished} & active)
            if recount is None:
                _refresh_runs(touched, now)
            else:
                _advance_runs(finished, touched, recount & active, now)
        elif recount:
            _refresh_runs(sorted(recount & active), now)
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
    db = _connection()
    sql = f"UPDATE {qn(Sample._meta.db_table)} SET {sets} WHERE {qn(Sample._meta.pk.column)} = %s"
    prep = {f.name: _preparer(f, db) for f in fields}
    # The same for every row: prepared once.
    status, lease, finished = (
        prep["status"](Sample.Status.DONE),
        prep["lease_expires_at"](None),
        prep["finished_at"](now),
    )
    request, output, tool_calls, trace = prep["request"], prep["output"], prep["tool_calls"], prep["trace"]
    transcript, latency, attempts, error = (
        prep["transcript"],
        prep["latency_ms"],
        prep["attempts"],
        prep["error"],
    )
    outcome, world, world_checks = prep["outcome"], prep["world"], prep["world_checks"]
    rows = [
        [
            status,
            outcome(str(item.outcome)),
            request(item.request),
            output(item.output or ""),
            tool_calls(item.tool_calls),
            trace(item.trace),
            transcript(item.transcript),
            latency(item.latency_ms),
            attempts(item.attempts),
            error(item.error or ""),
            lease,
            finished,
            world(item.world_id),
            world_checks(item.world_checks),
            item.sample_id,
        ]
        for item in items
    ]
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
    db = _connection()
    prepared_now = fields[-1].get_db_prep_save(now, db)
    (sample, version, required, outcome, expected, actual, explanation, evidence, details) = (
        _preparer(f, db) for f in fields[:-1]
    )
    rows = [
        [
            sample(item.sample_id),
            version(r.check_version_id),
            required(r.required),
            outcome(r.outcome),
            expected(r.expected),
            actual(r.actual),
            explanation(r.explanation),
            evidence(r.evidence),
            details(r.details),
            prepared_now,
        ]
        for item in items
        for r in item.results
    ]
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
