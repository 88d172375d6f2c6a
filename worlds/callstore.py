"""Store one agent call on a kept world in as few database round trips as the database allows.

``worlds.services`` answers a call on the engine world its process keeps, then stores what the call
changed: the world's small head (counters, end reason) under the condition that the row is still at
the calls counter the kept world started from and not ended, the call's trace entry and events, and
the tools whose state changed. Either all of it is stored or none (``store`` answers False when the
condition failed: another process advanced the world, or it ended).

- PostgreSQL: one pipeline, one network round trip. The head UPDATE and the entries' INSERT are one
  statement (a data-modifying CTE: the INSERT selects from the UPDATE's RETURNING, so a lost race
  inserts nothing), atomic by itself under autocommit: a read is that statement alone. A write adds,
  in the same round trip, BEGIN before it, an UPDATE of each changed tool state conditional on the
  ``stamp`` the head UPDATE just wrote, and COMMIT. Server-side parameters, prepared once per
  connection (settings.EVALCONSOLE_WORLDS_PREPARE; off behind a pooler that cannot keep them).
- SQLite: one ``BEGIN IMMEDIATE`` transaction on the raw connection (the sqlite3 module keeps the
  statements prepared): the head UPDATE, then the entries and states only when it matched.

Inside an atomic block of the caller (tests; a caller's own transaction) the statements run in a
savepoint instead. The statements go into Django's query log when it is on (DEBUG, or a test's
CaptureQueriesContext), and database errors come out as ``django.db`` errors, as from the ORM.

Nothing here checks the connection first (Django's CONN_HEALTH_CHECKS would cost a ``SELECT 1`` per
request): a connection that broke makes the statement fail, and the caller then asks, on a fresh
connection, whether the row holds its ``stamp`` (stored before the break) or not (answer it again).
"""

from __future__ import annotations

import json
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache

from django.conf import settings
from django.db import connection, transaction

from worlds.models import World, WorldEntry, WorldToolState

__all__ = ["CallWrite", "store", "stored"]


@dataclass
class CallWrite:
    """What one call changed, encoded. ``before`` is the calls counter the kept world started from."""

    world_id: str
    before: int
    calls: int
    stamp: int
    head: dict
    entries: list[tuple[str, int, dict]]  # (kind, seq, data)
    states: dict[str, dict] = field(default_factory=dict)  # tool -> its whole state, changed ones only
    ids: dict | None = None  # refs -> ids, when the call changed them
    ended_at: datetime | None = None  # the call ended the trial (the call budget)
    end_reason: str = ""


def _json(value) -> str:
    # As Django's JSONField encodes (ensure_ascii on: a lone surrogate stays an escape).
    return json.dumps(value)


def _q(name: str) -> str:
    return connection.ops.quote_name(name)


@cache
def _names() -> dict[str, str]:
    w, e, t = World._meta, WorldEntry._meta, WorldToolState._meta
    col = lambda model, name: _q(model.get_field(name).column)  # noqa: E731
    return {
        "world": _q(w.db_table),
        "entry": _q(e.db_table),
        "tool_state": _q(t.db_table),
        "id": col(w, "id"),
        "state": col(w, "state"),
        "ids": col(w, "ids"),
        "calls": col(w, "calls"),
        "stamp": col(w, "stamp"),
        "ended_at": col(w, "ended_at"),
        "end_reason": col(w, "end_reason"),
        "e_world": col(e, "world"),
        "e_kind": col(e, "kind"),
        "e_seq": col(e, "seq"),
        "e_data": col(e, "data"),
        "t_world": col(t, "world"),
        "t_tool": col(t, "tool"),
        "t_data": col(t, "data"),
    }


def _head_set(n: dict[str, str], *, ids: bool, ended: bool, mark: str, jsonb: str) -> str:
    sets = [f"{n['state']} = {mark}{jsonb}", f"{n['calls']} = {mark}", f"{n['stamp']} = {mark}"]
    if ids:
        sets.append(f"{n['ids']} = {mark}{jsonb}")
    if ended:
        sets += [f"{n['ended_at']} = {mark}", f"{n['end_reason']} = {mark}"]
    return (
        f"UPDATE {n['world']} SET {', '.join(sets)} "
        f"WHERE {n['id']} = {mark} AND {n['calls']} = {mark} AND {n['ended_at']} IS NULL"
    )


def _head_params(w: CallWrite, dt) -> list:
    params: list = [_json(w.head), w.calls, w.stamp]
    if w.ids is not None:
        params.append(_json(w.ids))
    if w.ended_at is not None:
        params += [dt(w.ended_at), w.end_reason]
    return params + [w.world_id, w.before]


# ----------------------------------------------------------------------------- PostgreSQL


@cache
def _pg_head_sql(ids: bool, ended: bool, entries: int) -> str:
    # The entries as VALUES rather than unnest() of arrays: psycopg escapes each string of a text array
    # with a regex, ~2 ms for a 10 KB body here; plain parameters go as they are.
    n = _names()
    values = ", ".join(["(%s, %s::integer, %s::json)"] * entries)
    head = _head_set(n, ids=ids, ended=ended, mark="%s", jsonb="::jsonb")
    return (
        f"WITH head AS ({head} RETURNING {n['id']}) "
        f"INSERT INTO {n['entry']} ({n['e_world']}, {n['e_kind']}, {n['e_seq']}, {n['e_data']}) "
        f"SELECT head.{n['id']}, e.kind, e.seq, e.data FROM head, (VALUES {values}) AS e(kind, seq, data)"
    )


@cache
def _pg_state_sql() -> str:
    n = _names()
    return (
        f"UPDATE {n['tool_state']} SET {n['t_data']} = %s::json "
        f"WHERE {n['t_world']} = %s AND {n['t_tool']} = %s AND EXISTS "
        f"(SELECT 1 FROM {n['world']} AS w WHERE w.{n['id']} = %s AND w.{n['stamp']} = %s)"
    )


def _store_pg(w: CallWrite) -> bool:
    import psycopg

    raw = connection.connection
    head_sql = _pg_head_sql(w.ids is not None, w.ended_at is not None, len(w.entries))
    head_params = _head_params(w, lambda v: v)
    for kind, seq, data in w.entries:
        head_params += [kind, seq, _json(data)]
    state_sql = _pg_state_sql()
    started = time.monotonic()
    states = [[_json(state), w.world_id, tool, w.world_id, w.stamp] for tool, state in w.states.items()]
    # One statement is atomic by itself. With more, an explicit transaction (BEGIN and COMMIT go in
    # the same round trip): should one fail on the client side before it is sent, the pipeline's
    # Sync would otherwise commit the statements before it.
    own = bool(states) and not connection.in_atomic_block
    prepare = True if settings.EVALCONSOLE_WORLDS_PREPARE else None  # None: the connection's own rule
    with raw.pipeline(), raw.transaction() if own else nullcontext(), psycopg.Cursor(raw) as head:
        head.execute(head_sql, head_params, prepare=prepare)
        for params in states:
            with psycopg.Cursor(raw) as cur:
                cur.execute(state_sql, params, prepare=prepare)
    _log(head_sql, started)
    for _ in w.states:
        _log(state_sql, started)
    return head.rowcount > 0  # a call always appends its trace entry and its call event


# ----------------------------------------------------------------------------- SQLite


@cache
def _sqlite_sql(ids: bool, ended: bool) -> tuple[str, str, str]:
    n = _names()
    return (
        _head_set(n, ids=ids, ended=ended, mark="?", jsonb=""),
        f"INSERT INTO {n['entry']} ({n['e_world']}, {n['e_kind']}, {n['e_seq']}, {n['e_data']}) "
        "VALUES (?, ?, ?, ?)",
        f"UPDATE {n['tool_state']} SET {n['t_data']} = ? WHERE {n['t_world']} = ? AND {n['t_tool']} = ?",
    )


def _store_sqlite(w: CallWrite) -> bool:
    raw = connection.connection
    head_sql, entry_sql, state_sql = _sqlite_sql(w.ids is not None, w.ended_at is not None)
    own = not connection.in_atomic_block
    started = time.monotonic()
    if own:
        raw.execute("BEGIN IMMEDIATE")
    try:
        won = raw.execute(head_sql, _head_params(w, connection.ops.adapt_datetimefield_value)).rowcount == 1
        _log(head_sql, started)
        if won:
            raw.executemany(entry_sql, [(w.world_id, k, s, _json(d)) for k, s, d in w.entries])
            _log(entry_sql, started)
            if w.states:
                raw.executemany(state_sql, [(_json(d), w.world_id, t) for t, d in w.states.items()])
                _log(state_sql, started)
        if own:
            raw.execute("COMMIT" if won else "ROLLBACK")
    except BaseException:
        if own and raw.in_transaction:
            raw.execute("ROLLBACK")
        raise
    return won


# ----------------------------------------------------------------------------- both


def _log(sql: str, started: float) -> None:
    if connection.queries_logged:
        connection.queries_log.append({"sql": sql, "time": f"{time.monotonic() - started:.3f}"})


def store(w: CallWrite) -> bool:
    """Store one call's writes, all or nothing: True when stored, False when the world's row is no
    longer at ``w.before`` (or has ended) and nothing was written. Raises django.db errors."""
    if not w.entries:
        raise ValueError("a call always has a trace entry")
    vendor = connection.vendor
    if vendor == "postgresql":
        run = _store_pg
    elif vendor == "sqlite":
        run = _store_sqlite
    else:  # pragma: no cover - the console runs on these two
        raise NotImplementedError(vendor)
    connection.ensure_connection()
    if connection.in_atomic_block:
        with transaction.atomic(), connection.wrap_database_errors:
            return run(w)
    with connection.wrap_database_errors:
        return run(w)


def stored(world_id: str, stamp: int) -> bool:
    """Whether the call written with ``stamp`` is stored (asked after its connection broke)."""
    return World.objects.filter(pk=world_id, stamp=stamp).exists()
