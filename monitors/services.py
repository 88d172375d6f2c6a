"""Live tasks, monitors and one-off evaluations: every write, and the reads pages and API share.

Ingestion is the hot path (a production service posts batches of up to EVALCONSOLE_MAX_TASK_BATCH
tasks): it validates in Python, reads the already-known external ids in one query, samples in Python
and inserts the new rows with one bulk insert. Evaluation of the sampled tasks is enqueued after
commit as ONE background job per ingested batch (`monitors.tasks.evaluate_monitor_batch`), so
ingestion never waits for a check to run.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from functools import partial
from operator import itemgetter
from typing import Any

from django.conf import settings
from django.db import connections, router, transaction
from django.db.models import CharField, Count, F, Func, Q, QuerySet, TextField, Value
from django.db.models.functions import Cast, TruncDay, TruncHour
from django.utils import timezone

from agents.models import Agent
from checks.evaluation import evaluate_version, evidence_from, make_context, result_fields
from checks.kinds import Outcome
from checks.models import Check, CheckVersion
from checks.services import resolve_checks
from core.errors import ValidationFailed
from core.jsontext import json_text_problem
from monitors.models import Evaluation, Monitor, Task
from runs.models import VERDICT_FIELDS, CheckResult
from teams import access

log = logging.getLogger(__name__)

MESSAGE_ROLES = frozenset({"system", "user", "assistant", "tool"})
TASK_FIELDS = (
    "external_id",
    "messages",
    "output",
    "tool_calls",
    "trace",
    "metadata",
    "latency_ms",
    "completed_at",
)
# The agent protocol's spelling of a field (an evalconsole/1 reply posts as a task as it is).
FIELD_ALIASES = {"toolCalls": "tool_calls"}
_FIELD_HINTS = {
    "externalId": "external_id",
    "completedAt": "completed_at",
    "latencyMs": "latency_ms",
    "id": "external_id",
    "transcript": "messages",
}
MAX_REPORTED_ERRORS = 20
TASK_JSON_DEPTH = 64  # live traces nest deeper than what pages and the API accept
SAMPLE_BUCKETS = 10_000  # a sample rate in percent with 2 decimals is a whole number of buckets
BUCKETS = {"hour": TruncHour, "day": TruncDay}


# ---------------------------------------------------------------- sampling


def sample_bucket(monitor_id: int, external_id: str) -> int:
    """A stable number in 0..9999 for (monitor, task): the same task always gets the same decision.

    Hashing the monitor id too keeps two monitors of one agent from picking the very same tasks.
    """
    digest = hashlib.blake2b(f"{monitor_id}:{external_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % SAMPLE_BUCKETS


def rate_threshold(sample_rate: Decimal | float | int | str) -> int:
    """Buckets below this number are sampled: 10 % -> 1000, 0.25 % -> 25, 100 % -> 10000."""
    return int(Decimal(str(sample_rate)) * 100)


def is_sampled(monitor_id: int, external_id: str, sample_rate: Decimal | float | int | str) -> bool:
    return sample_bucket(monitor_id, external_id) < rate_threshold(sample_rate)


# ---------------------------------------------------------------- ingestion


@dataclass(frozen=True)
class IngestResult:
    created: int
    existing: int
    ids: list[int]  # one task id per posted item, in the posted order
    sampled: int = 0  # new tasks picked by at least one monitor


class _Errors:
    """Collects `items.<i>.<field>` messages; stops collecting after MAX_REPORTED_ERRORS."""

    def __init__(self) -> None:
        self.errors: dict[str, str] = {}
        self.count = 0  # every problem found, reported or not

    def add(self, index: int, field_name: str | None, message: str) -> None:
        self.count += 1
        if len(self.errors) < MAX_REPORTED_ERRORS:
            key = f"items.{index}" + (f".{field_name}" if field_name else "")
            self.errors.setdefault(key, message)

    def raise_if_any(self) -> None:
        if self.errors:
            raise ValidationFailed(self.errors)


def _parse_completed_at(value: object) -> datetime | None:
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str) and value.strip():
        try:
            parsed = datetime.fromisoformat(value.strip())
        except ValueError:
            return None
    else:
        return None
    # A time without an offset is read as UTC (documented in the API schema).
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed


def _clean_messages(raw: object, index: int, errors: _Errors) -> list[dict] | None:
    if raw is None:
        return []
    if not isinstance(raw, list):
        errors.add(index, "messages", "must be a list of {role, content} objects")
        return None
    clean = []
    for m_index, message in enumerate(raw):
        where = f"messages.{m_index}"
        if not isinstance(message, dict):
            errors.add(index, where, "must be an object with role and content")
            return None
        role = message.get("role")
        if role not in MESSAGE_ROLES:
            errors.add(index, f"{where}.role", f"must be one of {', '.join(sorted(MESSAGE_ROLES))}")
            return None
        content = message.get("content")
        if content is None:
            message = {**message, "content": ""}
        elif not isinstance(content, str):
            errors.add(index, f"{where}.content", "must be text")
            return None
        clean.append(message)
    return clean


class JSONText(str):
    """A value already serialised to JSON text (inserted into a JSON column without dumping again)."""


def _json_text(value: object, index: int, name: str, errors: _Errors) -> JSONText | None:
    """`value` as JSON text (ASCII, like Django's JSONField), or None (SQL NULL) for None.

    ASCII output escapes NUL as \\u0000 and surrogates as \\udXXX, so one substring test screens
    for text no database stores; only suspects are walked (a surrogate pair, e.g. an emoji, is fine).
    """
    if value is None:
        return None
    text = json.dumps(value)
    if "\\u0000" in text or "\\ud" in text:
        problem = json_text_problem(value, max_depth=TASK_JSON_DEPTH)
        if problem:
            errors.add(index, name, problem)
            return None
    return JSONText(text)


def validate_task_items(items: object, *, max_batch: int | None = None) -> list[dict[str, Any]]:
    """Check a posted batch in plain Python; return clean field dicts or raise ValidationFailed.

    Error keys name the item and the field, e.g. ``items.3.completed_at``; at most
    MAX_REPORTED_ERRORS are reported so a bad batch of 1,000 gives a readable answer.
    """
    limit = max_batch or settings.EVALCONSOLE_MAX_TASK_BATCH
    if isinstance(items, Mapping):
        items = [items]
    if not isinstance(items, list | tuple):
        raise ValidationFailed("send one task object or a list of task objects", field="items")
    if not items:
        raise ValidationFailed("the batch is empty", field="items")
    if len(items) > limit:
        raise ValidationFailed(f"{len(items)} tasks is over the limit of {limit} per request", field="items")
    errors = _Errors()
    seen: dict[str, int] = {}
    clean: list[dict[str, Any]] = []
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            errors.add(index, None, "must be a task object")
            continue
        known_errors = errors.count
        unknown = [key for key in item if key not in TASK_FIELDS and key not in FIELD_ALIASES]
        if unknown:
            key = unknown[0]
            hint = f" (did you mean {_FIELD_HINTS[key]!r}?)" if key in _FIELD_HINTS else ""
            errors.add(index, str(key), f"unknown field{hint}")
        external_id = item.get("external_id")
        if isinstance(external_id, int) and not isinstance(external_id, bool):
            external_id = str(external_id)
        if not isinstance(external_id, str) or not external_id.strip():
            errors.add(index, "external_id", "required: a non-empty string that identifies the task")
        elif len(external_id) > 200:
            errors.add(index, "external_id", "at most 200 characters")
        elif external_id in seen:
            errors.add(index, "external_id", f"{external_id!r} also appears in item {seen[external_id]}")
        else:
            seen[external_id] = index
        completed_at = _parse_completed_at(item.get("completed_at"))
        if completed_at is None:
            errors.add(index, "completed_at", "required: an ISO 8601 date-time, e.g. 2025-01-31T12:00:00Z")
        messages = _clean_messages(item.get("messages"), index, errors)
        output = item.get("output", "")
        if output is None:
            output = ""
        elif not isinstance(output, str):
            errors.add(index, "output", "must be text")
        # toolCalls/trace are stored exactly as reported (null = unknown, [] = none); the check kinds
        # validate their items and answer `indeterminate` for malformed ones. Only the outer shape
        # is checked here, because anything but a list or null is certainly a client mistake.
        sent_as = {name: name for name in FIELD_ALIASES.values()}
        for alias, name in FIELD_ALIASES.items():
            if alias in item:
                if name in item:
                    errors.add(index, name, f"send {alias} or {name}, not both (they are the same field)")
                else:
                    item, sent_as[name] = {**item, name: item[alias]}, alias
        tool_calls, trace = item.get("tool_calls"), item.get("trace")
        if tool_calls is not None and not isinstance(tool_calls, list):
            errors.add(index, sent_as["tool_calls"], "must be a list of tool calls or null")
        if trace is not None and not isinstance(trace, list):
            errors.add(index, "trace", "must be a list of trace entries or null")
        metadata = item.get("metadata")
        if metadata is None:
            metadata = {}
        elif not isinstance(metadata, dict):
            errors.add(index, "metadata", "must be an object")
        latency = item.get("latency_ms")
        if latency is not None and (
            isinstance(latency, bool)
            or not isinstance(latency, int | float)
            or not math.isfinite(latency)
            or latency < 0
        ):
            errors.add(index, "latency_ms", "must be a number of milliseconds (0 or more) or null")
        for name, text in (("external_id", external_id), ("output", output)):
            problem = json_text_problem(text, max_depth=TASK_JSON_DEPTH) if isinstance(text, str) else None
            if problem:
                errors.add(index, name, problem)
        if errors.count > known_errors:
            continue  # (later items are still checked, so one answer lists the batch's problems)
        # The JSON columns are serialised here, once: the text is screened for what no database
        # stores (NUL, lone surrogates) and then inserted as is (see _insert_rows).
        texts = {}
        for name, value in (
            ("messages", messages),
            ("tool_calls", tool_calls),
            ("trace", trace),
            ("metadata", metadata),
        ):
            texts[name] = _json_text(value, index, name, errors)
        if errors.count:
            continue  # nothing of this batch will be stored
        clean.append(
            {
                "external_id": external_id,
                "output": output,
                "latency_ms": latency,
                "completed_at": completed_at,
                **texts,
            }
        )
    errors.raise_if_any()
    return clean


def ingest_tasks(*, agent: Agent, by, items: object) -> IngestResult:
    """Store completed tasks of `agent`, idempotent by external_id, and sample them for its monitors.

    `items` is one task object or a list of up to EVALCONSOLE_MAX_TASK_BATCH. Tasks whose external id
    is already stored are left unchanged and counted in `existing`. New tasks picked by an active
    monitor are evaluated in the background after commit. Raises PermissionDenied (below member) or
    ValidationFailed naming `items.<index>.<field>`.
    """
    access.require(by, access.CREATE, Task, team=agent.team)
    if agent.archived_at is not None:
        raise ValidationFailed(f"{agent} is archived; tasks are no longer accepted", field="agent")
    clean = validate_task_items(items)
    external_ids = [c["external_id"] for c in clean]
    known = dict(
        Task.objects.filter(agent=agent, external_id__in=external_ids).values_list("external_id", "id")
    )
    monitors = [
        (pk, rate_threshold(rate))
        for pk, rate in Monitor.objects.filter(agent=agent, active=True).values_list("id", "sample_rate")
    ]
    new = [c for c in clean if c["external_id"] not in known]
    picks_of: dict[str, list[int]] = {}
    for c in new:
        picks = [pk for pk, threshold in monitors if sample_bucket(pk, c["external_id"]) < threshold]
        picks_of[c["external_id"]] = picks
        c["sampled"] = bool(picks)
    inserted = _insert_new_tasks(agent.pk, new) if new else {}
    # Rows another request stored between our read and our insert were skipped by ON CONFLICT DO
    # NOTHING: they count as existing, and that request (not this one) has them evaluated.
    raced = [c["external_id"] for c in new if c["external_id"] not in inserted]
    if raced:
        known.update(Task.objects.filter(agent=agent, external_id__in=raced).values_list("external_id", "id"))
    _enqueue_monitor_evaluations(agent, [(task_id, picks_of[x]) for x, task_id in inserted.items()])
    return IngestResult(
        created=len(inserted),
        existing=len(clean) - len(inserted),
        ids=[inserted.get(x) or known[x] for x in external_ids],
        sampled=sum(1 for x in inserted if picks_of[x]),
    )


def _write_connection(model):
    connection = connections[router.db_for_write(model)]
    if connection.vendor not in ("postgresql", "sqlite"):  # pragma: no cover - settings allow only these
        raise NotImplementedError(f"unsupported database {connection.vendor}")
    return connection


def _insert_rows(
    model,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    conflict: Sequence[str] = (),
    returning: Sequence[str] = (),
) -> list[tuple]:
    """Insert plain Python rows with ON CONFLICT [(conflict)] DO NOTHING [RETURNING ...]; one transaction.

    Raw SQL on the hot paths (ingestion, background evaluation): building model instances and letting
    the ORM compile every value cost about half the time of a 1,000-task batch. ON CONFLICT DO NOTHING
    is what bulk_create(ignore_conflicts=True) sends; RETURNING tells which rows were really inserted.
    JSON columns take Python values or JSONText (None = SQL NULL), datetime columns aware datetimes.

    PostgreSQL: one statement with one array parameter per column (`SELECT ... FROM unnest(...)`),
    sent with server-side binding, so the SQL text stays short whatever the batch size (Django's
    client-side-binding cursor would parse and quote 12,000 placeholders). SQLite: multi-row VALUES.
    """
    if not rows:
        return []
    connection = _write_connection(model)
    by_column = {f.column: f for f in model._meta.concrete_fields}
    fields = [by_column[c] for c in columns]
    is_json = [f.get_internal_type() == "JSONField" for f in fields]
    qn = connection.ops.quote_name
    target = f"INSERT INTO {qn(model._meta.db_table)} ({', '.join(qn(c) for c in columns)}) "
    tail = " ON CONFLICT " + (f"({', '.join(qn(c) for c in conflict)}) " if conflict else "") + "DO NOTHING"
    if returning:
        tail += " RETURNING " + ", ".join(qn(c) for c in returning)
    dumps = json.dumps
    fetched: list[tuple] = []
    if connection.vendor == "postgresql":
        import psycopg

        arrays: list[list] = [[] for _ in columns]
        for row in rows:
            for i, value in enumerate(row):
                if is_json[i] and value is not None and not isinstance(value, JSONText):
                    value = dumps(value)
                arrays[i].append(value)
        casts = ["text[]" if is_json[i] else f"{f.db_type(connection)}[]" for i, f in enumerate(fields)]
        names = [f"c{i}" for i in range(len(columns))]
        select = ", ".join(f"{n}::jsonb" if is_json[i] else n for i, n in enumerate(names))
        sql = (
            target
            + f"SELECT {select} FROM unnest({', '.join(f'%b::{c}' for c in casts)}) AS u({', '.join(names)})"
            + tail
        )
        with transaction.atomic(using=connection.alias):
            connection.ensure_connection()
            with psycopg.Cursor(connection.connection) as cursor:  # server-side binding
                cursor.execute(sql, arrays)
                if returning:
                    fetched = cursor.fetchall()
        return fetched
    adapt_dt = connection.ops.adapt_datetimefield_value
    is_dt = [f.get_internal_type() == "DateTimeField" for f in fields]
    ncols = len(columns)
    per_statement = max(1, min(1000, (connection.features.max_query_params or 999) // ncols))
    row_sql = "(" + ", ".join(["%s"] * ncols) + ")"
    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        for start in range(0, len(rows), per_statement):
            chunk = rows[start : start + per_statement]
            params = [
                None
                if v is None
                else (v if isinstance(v, JSONText) else dumps(v))
                if is_json[i]
                else adapt_dt(v)
                if is_dt[i]
                else v
                for row in chunk
                for i, v in enumerate(row)
            ]
            cursor.execute(target + "VALUES " + ", ".join([row_sql] * len(chunk)) + tail, params)
            if returning:
                fetched.extend(cursor.fetchall())
    return fetched


_TASK_COLUMNS = ("agent_id", *TASK_FIELDS, "ingested_at", "sampled", "has_failures")
_task_values = itemgetter(*TASK_FIELDS)


def _insert_new_tasks(agent_id: int, rows: list[dict[str, Any]]) -> dict[str, int]:
    """Insert validated tasks; return {external_id: id} of the rows really inserted (a row another
    request stored meanwhile is skipped by ON CONFLICT (agent, external_id) DO NOTHING)."""
    now = timezone.now()
    values = [
        (agent_id, *_task_values(row), now, row["sampled"], False)
        for row in rows
    ]
    fetched = _insert_rows(
        Task, _TASK_COLUMNS, values, conflict=("agent_id", "external_id"), returning=("id", "external_id")
    )
    return {external_id: pk for pk, external_id in fetched}


def _enqueue_monitor_evaluations(agent: Agent, picked: Iterable[tuple[int, list[int]]]) -> None:
    """One background job per ingested batch: [(monitor_id, [task ids])], sent after commit."""
    by_monitor: dict[int, list[int]] = {}
    for task_id, picks in picked:
        for monitor_id in picks:
            by_monitor.setdefault(monitor_id, []).append(task_id)
    if by_monitor:
        payload = sorted(by_monitor.items())
        transaction.on_commit(partial(_send_monitor_batch, agent.pk, payload))


def _send_monitor_batch(agent_id: int, payload: list[tuple[int, list[int]]]) -> None:
    from django_q.tasks import async_task

    async_task("monitors.tasks.evaluate_monitor_batch", payload, group=f"monitor-agent-{agent_id}")


# ---------------------------------------------------------------- evaluating tasks


_EVIDENCE_FIELDS = ("id", "agent_id", *(name for name in TASK_FIELDS if name != "external_id"))


def _evaluate_tasks(
    tasks: Iterable[Task], versions: Sequence[CheckVersion], *, team_id: int
) -> list[tuple[int, int, dict[str, Any], datetime]]:
    """(task id, version id, CheckResult fields, observed_at) for every (task, version)."""
    ctx = make_context(team_id=team_id, cache={})
    results = []
    for task in tasks:
        evidence = evidence_from(
            output=task.output,
            messages=task.messages or (),
            tool_calls=task.tool_calls,
            trace=task.trace,
            latency_ms=task.latency_ms,
            metadata=task.metadata,
        )
        for version in versions:
            verdict = evaluate_version(version.kind, version.config, evidence, ctx)
            results.append((task.pk, version.pk, result_fields(verdict), task.completed_at))
    return results


_RESULT_COLUMNS = (
    "check_version_id",
    "task_id",
    "monitor_id",
    "evaluation_id",
    "required",
    *VERDICT_FIELDS,
    "details",
    "observed_at",
    "created_at",
)


def _save_results(
    results: list[tuple[int, int, dict[str, Any], datetime]],
    *,
    monitor_id: int | None = None,
    evaluation_id: int | None = None,
) -> int:
    """Store results of a monitor or an evaluation; return how many were computed.

    ON CONFLICT DO NOTHING + the unique (monitor|evaluation, task, version) constraints make redelivered
    background jobs harmless: a result already recorded stays as it is and is not counted twice.
    """
    now = timezone.now()
    values = [
        (
            version_id,
            task_id,
            monitor_id,
            evaluation_id,
            True,
            f["outcome"],
            f["expected"],
            f["actual"],
            f["explanation"],
            f["evidence"],
            f["details"],
            observed_at,
            now,
        )
        for task_id, version_id, f, observed_at in results
    ]
    _insert_rows(CheckResult, _RESULT_COLUMNS, values)
    failed = {task_id for task_id, _, f, _ in results if f["outcome"] == Outcome.FAIL}
    if failed:
        Task.objects.filter(pk__in=failed, has_failures=False).update(has_failures=True)
    return len(results)


def monitor_versions(monitor: Monitor) -> list[CheckVersion]:
    """The current versions of a monitor's (non-archived) checks, in check order."""
    checks = (
        Check.objects.filter(monitors=monitor, archived_at__isnull=True, current_version__isnull=False)
        .select_related("current_version")
        .order_by("name", "id")
    )
    return [c.current_version for c in checks]


def evaluate_monitor_tasks(*, monitor_id: int, task_ids: Sequence[int]) -> int:
    """Evaluate tasks a monitor sampled with its checks' current versions; return results written."""
    monitor = Monitor.objects.select_related("agent").filter(pk=monitor_id, active=True).first()
    if monitor is None:
        return 0
    versions = monitor_versions(monitor)
    if not versions:
        return 0
    tasks = Task.objects.filter(pk__in=list(task_ids), agent_id=monitor.agent_id).only(*_EVIDENCE_FIELDS)
    results = _evaluate_tasks(tasks, versions, team_id=monitor.agent.team_id)
    return _save_results(results, monitor_id=monitor.pk)


# ---------------------------------------------------------------- monitors


def _clean_rate(value: object) -> Decimal:
    if isinstance(value, bool):
        raise ValidationFailed("must be a percentage between 0 and 100", field="sample_rate")
    try:
        rate = Decimal(str(value).strip().rstrip("%"))
    except (InvalidOperation, ValueError):
        raise ValidationFailed("must be a percentage between 0 and 100", field="sample_rate") from None
    if not rate.is_finite() or not Decimal(0) <= rate <= Decimal(100):
        raise ValidationFailed("must be a percentage between 0 and 100", field="sample_rate")
    if rate != rate.quantize(Decimal("0.01")):
        raise ValidationFailed("at most two decimal places (e.g. 12.5 or 0.25)", field="sample_rate")
    return rate.quantize(Decimal("0.01"))


def _clean_monitor_name(name: object) -> str:
    name = (name or "").strip() if isinstance(name, str | type(None)) else ""
    if not name:
        raise ValidationFailed("a monitor needs a name", field="name")
    if len(name) > 200:
        raise ValidationFailed("at most 200 characters", field="name")
    return name


def _resolve_monitor_checks(agent: Agent, checks: object) -> list[Check]:
    if not checks:  # a monitor without checks would sample tasks and evaluate nothing
        raise ValidationFailed("choose at least one check to run on the sampled tasks", field="checks")
    return [
        c
        for c, _ in resolve_checks(
            agent=agent, checks=list(checks or []), limit=settings.EVALCONSOLE_MAX_CHECKS
        )
    ]


def _clean_monitor(agent: Agent, values: Mapping[str, object]) -> dict[str, object]:
    """The cleaned `name`, `sample_rate` and `checks` (those present in `values`).

    Raises ValidationFailed naming every bad field at once (name, sample_rate, checks, checks.<i>.check)."""
    cleaners = {"name": _clean_monitor_name, "sample_rate": _clean_rate}
    cleaned: dict[str, object] = {}
    errors: dict[str, str] = {}
    for key, clean in cleaners.items():
        if key in values:
            try:
                cleaned[key] = clean(values[key])
            except ValidationFailed as exc:
                errors.update(exc.errors)
    if "checks" in values:
        try:
            cleaned["checks"] = _resolve_monitor_checks(agent, values["checks"])
        except ValidationFailed as exc:
            errors.update(exc.errors)
    if errors:
        raise ValidationFailed(errors)
    return cleaned


def create_monitor(
    *, agent: Agent, by, name: str, checks: Sequence = (), sample_rate: object = 10, active: bool = True
) -> Monitor:
    """A dashboard of `agent` running `checks` (at least one) on `sample_rate` percent of its new tasks.

    Members and up. Raises ValidationFailed naming every bad field at once."""
    access.require(by, access.CREATE, Monitor, team=agent.team)
    cleaned = _clean_monitor(agent, {"name": name, "sample_rate": sample_rate, "checks": checks})
    with transaction.atomic():
        monitor = Monitor.objects.create(
            agent=agent,
            name=cleaned["name"],
            sample_rate=cleaned["sample_rate"],
            active=bool(active),
            created_by=by,
        )
        monitor.checks.set(cleaned["checks"])
    return monitor


def update_monitor(*, monitor: Monitor, by, **changes: object) -> Monitor:
    """Change name, checks, sample_rate or active. Only tasks ingested afterwards see a new rate."""
    access.require(by, access.CHANGE, monitor, team=monitor.agent.team)
    unknown = set(changes) - {"name", "checks", "sample_rate", "active"}
    if unknown:
        raise ValidationFailed({key: "unknown field" for key in sorted(unknown)})
    cleaned = _clean_monitor(monitor.agent, changes)
    fields = []
    if "name" in cleaned:
        monitor.name = cleaned["name"]
        fields.append("name")
    if "sample_rate" in cleaned:
        monitor.sample_rate = cleaned["sample_rate"]
        fields.append("sample_rate")
    if "active" in changes:
        monitor.active = bool(changes["active"])
        fields.append("active")
    attached = cleaned.get("checks")
    with transaction.atomic():
        if fields:
            monitor.save(update_fields=fields)
        if attached is not None:
            monitor.checks.set(attached)
    return monitor


def delete_monitor(*, monitor: Monitor, by) -> None:
    """Delete a dashboard and its results (tasks stay). Admins only, like every deletion."""
    access.require(by, access.ARCHIVE, monitor, team=monitor.agent.team)
    monitor.delete()


# ---------------------------------------------------------------- task filters (pages, API, evaluations)


@dataclass(frozen=True)
class TaskFilters:
    agent: int | None = None
    completed_after: datetime | None = None
    completed_before: datetime | None = None
    q: str = ""
    has_failures: bool | None = None

    def as_params(self) -> dict[str, str]:
        """Query-string form (for links and the 'select all matching' form)."""
        params = {}
        if self.agent:
            params["agent"] = str(self.agent)
        if self.completed_after:
            params["completed_after"] = self.completed_after.isoformat()
        if self.completed_before:
            params["completed_before"] = self.completed_before.isoformat()
        if self.q:
            params["q"] = self.q
        if self.has_failures is not None:
            params["has_failures"] = "true" if self.has_failures else "false"
        return params


def parse_task_filters(params: Mapping[str, object]) -> TaskFilters:
    """Read filters from query parameters or a JSON object; raise ValidationFailed naming the field."""
    errors: dict[str, str] = {}
    agent = params.get("agent") or None
    if agent is not None:
        try:
            agent = int(str(agent))
        except ValueError:
            errors["agent"] = "must be an agent id"
    dates = {}
    for name in ("completed_after", "completed_before"):
        raw = params.get(name) or None
        dates[name] = None
        if raw is not None:
            parsed = _parse_completed_at(raw)
            if parsed is None:
                errors[name] = "must be an ISO 8601 date or date-time"
            dates[name] = parsed
    q = params.get("q") or ""
    if not isinstance(q, str) or len(q) > 200:
        errors["q"] = "must be text of at most 200 characters"
    raw_failures = params.get("has_failures")
    has_failures = None
    if raw_failures not in (None, ""):
        text = str(raw_failures).strip().lower()
        if text in {"1", "true", "yes", "on"}:
            has_failures = True
        elif text in {"0", "false", "no", "off"}:
            has_failures = False
        else:
            errors["has_failures"] = "must be true or false"
    if errors:
        raise ValidationFailed(errors)
    return TaskFilters(
        agent=agent, q=q.strip() if isinstance(q, str) else "", has_failures=has_failures, **dates
    )


def filter_tasks(qs: QuerySet[Task], filters: TaskFilters) -> QuerySet[Task]:
    if filters.agent:
        qs = qs.filter(agent_id=filters.agent)
    if filters.completed_after:
        qs = qs.filter(completed_at__gte=filters.completed_after)
    if filters.completed_before:
        qs = qs.filter(completed_at__lt=filters.completed_before)
    if filters.has_failures is not None:
        qs = qs.filter(has_failures=filters.has_failures)
    if filters.q:
        # Substring of the external id, the output or the metadata's JSON text, case-insensitive.
        qs = qs.annotate(metadata_text=Cast("metadata", TextField())).filter(
            Q(external_id__icontains=filters.q)
            | Q(output__icontains=filters.q)
            | Q(metadata_text__icontains=filters.q)
        )
    return qs


# ?sort= of the task list (an allow-list): value -> ordering; ties are newest first, so pages are stable.
TASK_SORTS = {
    "-completed_at": ("-completed_at", "-id"),
    "completed_at": ("completed_at", "id"),
    "external_id": ("external_id", "-completed_at", "-id"),
    "-external_id": ("-external_id", "-completed_at", "-id"),
    "agent": ("agent__name", "-completed_at", "-id"),
    "-agent": ("-agent__name", "-completed_at", "-id"),
}
DEFAULT_TASK_SORT = "-completed_at"


def sort_tasks(qs: QuerySet[Task], sort: str) -> QuerySet[Task]:
    """Order by a TASK_SORTS value; anything else (validated by the caller) reads as newest first."""
    return qs.order_by(*TASK_SORTS.get(sort, TASK_SORTS[DEFAULT_TASK_SORT]))


# ---------------------------------------------------------------- one-off evaluations


def _max_evaluation_tasks() -> int:
    return settings.EVALCONSOLE_MAX_EVALUATION_TASKS


def launch_evaluation(
    *,
    agent: Agent,
    by,
    check_ids: Sequence,
    task_ids: Sequence | None = None,
    filters: TaskFilters | Mapping | None = None,
    name: str = "",
) -> Evaluation:
    """Evaluate the current versions of `check_ids` (frozen now) on completed tasks of `agent`.

    Tasks are `task_ids`, or every task matching `filters` ("select all matching"). Raises
    ValidationFailed naming `tasks`, `tasks.<i>`, `checks`, `checks.<i>.check` or `name`.
    """
    access.require(by, access.CREATE, Evaluation, team=agent.team)
    name = (name or "").strip()
    if len(name) > 200:
        raise ValidationFailed("at most 200 characters", field="name")
    if not check_ids:
        raise ValidationFailed("choose at least one check", field="checks")
    attached = [
        c
        for c, _ in resolve_checks(agent=agent, checks=list(check_ids), limit=settings.EVALCONSOLE_MAX_CHECKS)
    ]
    limit = _max_evaluation_tasks()
    if task_ids is not None:
        ids: list[int] = []
        for index, raw in enumerate(task_ids):
            try:
                ids.append(int(raw))
            except (TypeError, ValueError):
                raise ValidationFailed("must be a task id", field=f"tasks.{index}") from None
        ids = list(dict.fromkeys(ids))
        if len(ids) > limit:
            raise ValidationFailed(
                f"{len(ids)} tasks is over the limit of {limit} per evaluation", field="tasks"
            )
        found = set(Task.objects.filter(agent=agent, pk__in=ids).values_list("pk", flat=True))
        for index, task_id in enumerate(ids):
            if task_id not in found:
                raise ValidationFailed(f"task {task_id} is not a task of {agent}", field=f"tasks.{index}")
    elif filters is not None:
        if not isinstance(filters, TaskFilters):
            filters = parse_task_filters(filters)
        ids = list(
            filter_tasks(Task.objects.filter(agent=agent), filters).values_list("pk", flat=True)[: limit + 1]
        )
        if len(ids) > limit:
            raise ValidationFailed(
                f"more than {limit} tasks match; narrow the filters (limit per evaluation)", field="tasks"
            )
    else:
        ids = []
    if not ids:
        raise ValidationFailed("choose at least one task", field="tasks")
    versions = [c.current_version for c in attached]
    with transaction.atomic():
        evaluation = Evaluation.objects.create(agent=agent, name=name, created_by=by)
        evaluation.check_versions.set(versions)
        through = Evaluation.tasks.through
        through.objects.bulk_create(
            [through(evaluation_id=evaluation.pk, task_id=t) for t in ids], batch_size=1000
        )
        transaction.on_commit(partial(_send_evaluation, evaluation.pk))
    return evaluation


def _send_evaluation(evaluation_id: int) -> None:
    from django_q.tasks import async_task

    async_task("monitors.tasks.run_evaluation", evaluation_id, group=f"evaluation-{evaluation_id}")


EVALUATION_CHUNK = 200


def run_evaluation(*, evaluation_id: int) -> int:
    """Evaluate every (task, frozen version) of an evaluation; safe to run again after a crash."""
    claimed = (
        Evaluation.objects.filter(pk=evaluation_id)
        .exclude(status=Evaluation.Status.COMPLETED)
        .update(status=Evaluation.Status.RUNNING)
    )
    if not claimed:
        return 0
    evaluation = Evaluation.objects.select_related("agent").get(pk=evaluation_id)
    versions = list(evaluation.check_versions.order_by("parent__name", "parent_id"))
    # Tasks already fully evaluated (a redelivered job) are skipped: no judge call is made twice.
    done = set(
        CheckResult.objects.filter(evaluation=evaluation)
        .values("task_id")
        .annotate(n=Count("id"))
        .filter(n__gte=len(versions))
        .values_list("task_id", flat=True)
    )
    task_ids = [t for t in evaluation.tasks.order_by("pk").values_list("pk", flat=True) if t not in done]
    written = 0
    for start in range(0, len(task_ids), EVALUATION_CHUNK):
        chunk = task_ids[start : start + EVALUATION_CHUNK]
        tasks = Task.objects.filter(pk__in=chunk).only(*_EVIDENCE_FIELDS)
        written += _save_results(
            _evaluate_tasks(tasks, versions, team_id=evaluation.agent.team_id), evaluation_id=evaluation.pk
        )
    Evaluation.objects.filter(pk=evaluation_id).update(
        status=Evaluation.Status.COMPLETED, finished_at=timezone.now()
    )
    return written


@dataclass
class GridRow:
    task: Task
    cells: list[CheckResult | None]


@dataclass
class EvaluationGrid:
    versions: list[CheckVersion]
    rows: list[GridRow]
    counts: dict[int, dict[str, int]] = field(default_factory=dict)  # version id -> outcome -> n
    done: int = 0  # results recorded so far
    total: int = 0  # tasks x versions


def evaluation_grid(evaluation: Evaluation, task_ids: Sequence[int] | None = None) -> EvaluationGrid:
    """The task x check grid for `task_ids` (a page of the evaluation's tasks), plus totals per check.

    Four queries whatever the size: versions, tasks of the page, their results, counts per version.
    """
    versions = list(evaluation.check_versions.select_related("parent").order_by("parent__name", "parent_id"))
    tasks_qs = evaluation.tasks.only("id", "external_id", "completed_at", "agent_id").order_by(
        "-completed_at", "-id"
    )
    if task_ids is not None:
        tasks_qs = tasks_qs.filter(pk__in=list(task_ids))
    tasks = list(tasks_qs)
    results = CheckResult.objects.filter(evaluation=evaluation, task_id__in=[t.pk for t in tasks]).only(
        "id", "task_id", "check_version_id", "outcome", "expected", "actual", "explanation"
    )
    by_cell = {(r.task_id, r.check_version_id): r for r in results}
    rows = [GridRow(task=t, cells=[by_cell.get((t.pk, v.pk)) for v in versions]) for t in tasks]
    counts: dict[int, dict[str, int]] = {v.pk: {o.value: 0 for o in Outcome} for v in versions}
    for row in (
        CheckResult.objects.filter(evaluation=evaluation)
        .values("check_version_id", "outcome")
        .annotate(n=Count("id"))
        .order_by()
    ):
        counts.setdefault(row["check_version_id"], {o.value: 0 for o in Outcome})[row["outcome"]] = row["n"]
    done = sum(sum(c.values()) for c in counts.values())
    return EvaluationGrid(versions=versions, rows=rows, counts=counts, done=done)


# ---------------------------------------------------------------- monitor dashboards


@dataclass
class Series:
    version_id: int
    check_id: int
    name: str
    number: int
    current: bool
    points: dict[datetime, dict[str, int]] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.name} v{self.number}"

    @property
    def totals(self) -> dict[str, int]:
        out = {o.value: 0 for o in Outcome}
        for counts in self.points.values():
            for key in out:
                out[key] += counts[key]
        return out


@dataclass
class Dashboard:
    bucket: str
    since: datetime
    until: datetime
    buckets: list[datetime]
    series: list[Series]
    volume: dict[datetime, dict[str, int]]  # bucket -> {"tasks": ingested, "evaluated": sampled+evaluated}

    @property
    def total_tasks(self) -> int:
        return sum(v["tasks"] for v in self.volume.values())

    @property
    def total_evaluated(self) -> int:
        return sum(v["evaluated"] for v in self.volume.values())

    def chart_data(self) -> dict[str, Any]:
        """uPlot's columnar data: x in epoch seconds, one pass-rate % series per check version."""
        xs = [int(b.timestamp()) for b in self.buckets]
        series = []
        for s in self.series:
            values = []
            for b in self.buckets:
                c = s.points.get(b)
                determinate = (c["pass"] + c["fail"]) if c else 0
                values.append(round(c["pass"] * 100 / determinate, 1) if determinate else None)
            series.append({"label": s.label, "values": values, "current": s.current})
        return {"x": xs, "series": series, "bucket": self.bucket}


def _bucket_expr(column: str, bucket: str):
    """The start of the UTC hour/day of `column`, computed by the database.

    PostgreSQL: date_trunc (TruncHour/TruncDay in UTC). SQLite: its native strftime(), because
    Django's TruncHour there is a Python function called once per row (seconds on 100,000 rows).
    Stored SQLite datetimes are UTC text, so the buckets are the same on both.
    """
    if connections[router.db_for_read(CheckResult)].vendor == "sqlite":
        fmt = "%Y-%m-%d %H:00:00" if bucket == "hour" else "%Y-%m-%d 00:00:00"
        return Func(Value(fmt), F(column), function="strftime", output_field=CharField())
    return BUCKETS[bucket](column, tzinfo=UTC)


def _bucket_key(value: datetime | str | None) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, str):
        return datetime.fromisoformat(value).replace(tzinfo=UTC)
    # SQLite returns naive datetimes for Trunc* in some configurations; normalise to aware UTC.
    return value.replace(tzinfo=UTC) if timezone.is_naive(value) else value.astimezone(UTC)


def monitor_dashboard(
    monitor: Monitor,
    *,
    bucket: str = "hour",
    days: int = 2,
    now: datetime | None = None,
    checks: Sequence[Check] | None = None,
) -> Dashboard:
    """Counts per bucket and check version from DB aggregates (hour/day truncation + Count(filter)).

    Five queries whatever the number of tasks (four when the caller passes the monitor's `checks`):
    results per (bucket, version), the monitor's checks, the versions seen, tasks ingested per bucket
    and tasks evaluated per bucket. Only bucket rows reach Python, never result or task rows.
    """
    if bucket not in BUCKETS:
        raise ValidationFailed("must be hour or day", field="bucket")
    until = now or timezone.now()
    since = until - timedelta(days=days)
    rows = list(
        CheckResult.objects.filter(monitor=monitor, observed_at__gte=since, observed_at__lte=until)
        .annotate(bucket=_bucket_expr("observed_at", bucket))
        .values("bucket", "check_version_id")
        .annotate(
            n_pass=Count("id", filter=Q(outcome=Outcome.PASS)),
            n_fail=Count("id", filter=Q(outcome=Outcome.FAIL)),
            n_indeterminate=Count("id", filter=Q(outcome=Outcome.INDETERMINATE)),
            n_error=Count("id", filter=Q(outcome=Outcome.ERROR)),
        )
        .order_by("bucket", "check_version_id")
    )
    version_ids = {r["check_version_id"] for r in rows}
    if checks is None:  # the monitor's checks, unless the caller already read them
        checks = Check.objects.filter(monitors=monitor).only("id", "current_version_id")
    current_ids = {c.current_version_id for c in checks if c.current_version_id}
    # The monitor's current versions appear even before they have results.
    versions = (
        CheckVersion.objects.filter(Q(pk__in=version_ids) | Q(pk__in=current_ids))
        .only("id", "parent_id", "name", "number")
        .order_by("parent_id", "number")
        if (version_ids or current_ids)
        else []
    )
    series = {
        v.pk: Series(
            version_id=v.pk, check_id=v.parent_id, name=v.name, number=v.number, current=v.pk in current_ids
        )
        for v in versions
    }
    buckets: set[datetime] = set()
    for r in rows:
        key = _bucket_key(r["bucket"])
        buckets.add(key)
        series[r["check_version_id"]].points[key] = {
            "pass": r["n_pass"],
            "fail": r["n_fail"],
            "indeterminate": r["n_indeterminate"],
            "error": r["n_error"],
        }
    volume: dict[datetime, dict[str, int]] = {}
    for r in (
        Task.objects.filter(agent_id=monitor.agent_id, completed_at__gte=since, completed_at__lte=until)
        .annotate(bucket=_bucket_expr("completed_at", bucket))
        .values("bucket")
        .annotate(n=Count("id"))
        .order_by("bucket")
    ):
        key = _bucket_key(r["bucket"])
        buckets.add(key)
        volume[key] = {"tasks": r["n"], "evaluated": 0}
    for r in (
        CheckResult.objects.filter(monitor=monitor, observed_at__gte=since, observed_at__lte=until)
        .annotate(bucket=_bucket_expr("observed_at", bucket))
        .values("bucket")
        .annotate(n=Count("task_id", distinct=True))
        .order_by("bucket")
    ):
        key = _bucket_key(r["bucket"])
        volume.setdefault(key, {"tasks": 0, "evaluated": 0})["evaluated"] = r["n"]
    ordered = sorted(buckets)
    for key in ordered:
        volume.setdefault(key, {"tasks": 0, "evaluated": 0})
    return Dashboard(
        bucket=bucket,
        since=since,
        until=until,
        buckets=ordered,
        series=sorted(series.values(), key=lambda s: (s.name.lower(), s.check_id, s.number)),
        volume=volume,
    )


def latest_failures(monitor: Monitor, limit: int = 20) -> QuerySet[CheckResult]:
    return (
        CheckResult.objects.filter(monitor=monitor, outcome=Outcome.FAIL)
        .select_related("task", "check_version")
        .only(
            "id",
            "outcome",
            "expected",
            "actual",
            "explanation",
            "observed_at",
            "task__id",
            "task__external_id",
            "task__agent_id",
            "check_version__id",
            "check_version__name",
            "check_version__number",
        )
        .order_by("-observed_at", "-id")[:limit]
    )


# ---------------------------------------------------------------- retention


def delete_old_tasks(
    *, days: int | None = None, batch_size: int = 1000, now: datetime | None = None, on_batch=None
) -> int:
    """Delete tasks completed more than `days` ago (default EVALCONSOLE_TASK_RETENTION_DAYS).

    Works in batches of `batch_size` ids, each in its own short transaction, so the database is never
    locked for long and a crash leaves a consistent state. Their results go with them (CASCADE).
    """
    days = settings.EVALCONSOLE_TASK_RETENTION_DAYS if days is None else days
    if days < 1:
        raise ValidationFailed("must be at least 1 day", field="days")
    if batch_size < 1:
        raise ValidationFailed("must be at least 1", field="batch_size")
    cutoff = (now or timezone.now()) - timedelta(days=days)
    deleted = 0
    while True:
        ids = list(
            Task.objects.filter(completed_at__lt=cutoff)
            .order_by("pk")
            .values_list("pk", flat=True)[:batch_size]
        )
        if not ids:
            return deleted
        with transaction.atomic():
            CheckResult.objects.filter(task_id__in=ids).delete()
            Evaluation.tasks.through.objects.filter(task_id__in=ids).delete()
            count, _ = Task.objects.filter(pk__in=ids).delete()
        deleted += len(ids)
        if on_batch is not None:
            on_batch(deleted)
