"""Store one agent call on a kept world in one database round trip.

``worlds.services`` answers a call on the engine world its process keeps, then stores what the call
changed: the world's small head (counters, end reason) under the condition that the row is still at
the calls counter the kept world started from and not ended, the call's trace entry and events, and
the pieces of tool state it changed (worlds.pieces: rows to write, paths to delete). Either all of it
is stored or none (``store`` answers False when the condition failed: another process advanced the
world, or it ended).

- PostgreSQL: one statement, atomic by itself under autocommit, read or write alike. The head UPDATE
  is a data-modifying CTE the others select from (``WITH head AS (UPDATE … RETURNING id)``): the
  pieces' upsert and delete and the entries' INSERT each join ``head``, so a lost race writes
  nothing. Server-side parameters, prepared once per connection (settings.EVALCONSOLE_WORLDS_PREPARE;
  off behind a pooler that cannot keep them). One statement needs no BEGIN/COMMIT and no pipeline:
  the client sends it and waits once.
- SQLite: one ``BEGIN IMMEDIATE`` transaction on the raw connection (the sqlite3 module keeps the
  statements prepared): the head UPDATE, then the entries and pieces only when it matched.

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
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache, lru_cache
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connection, connections, transaction

from worlds.models import World, WorldEntry, WorldToolState

__all__ = ["CallWrite", "states", "store", "stored"]


@dataclass
class CallWrite:
    """What one call changed, encoded. ``before`` is the calls counter the kept world started from."""

    world_id: str
    before: int
    calls: int
    stamp: int
    head: dict
    entries: list[tuple[str, int, dict]]  # (kind, seq, data)
    pieces: list[tuple[str, str, str, Any]] = field(default_factory=list)  # (tool, path, shape, data)
    gone: list[tuple[str, str]] = field(default_factory=list)  # (tool, path) to delete
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
        "t_path": col(t, "path"),
        "t_shape": col(t, "shape"),
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


@lru_cache(maxsize=256)
def _pg_sql(ids: bool, ended: bool, entries: int, puts: int, gone: int) -> bytes:
    """The statement, its parameters numbered ($1, $2, …) for a raw cursor, encoded once: psycopg then
    neither parses it for ``%s`` each time (it caches that only for short statements with few
    parameters, which a write of many pieces is not) nor encodes and hashes a new text for its
    prepared-statement lookup."""
    return _numbered(_pg_marked(ids, ended, entries, puts, gone))


def _numbered(sql: str) -> bytes:
    """``%s`` marks → ``$1``, ``$2``, … (the statement holds no other ``%``)."""
    parts = sql.split("%s")
    return ("".join(f"{part}${i}" for i, part in enumerate(parts[:-1], 1)) + parts[-1]).encode()


def _pg_marked(ids: bool, ended: bool, entries: int, puts: int, gone: int) -> str:
    # The rows as VALUES rather than unnest() of arrays: psycopg escapes each string of a text array
    # with a regex, ~2 ms for a 10 KB body here; plain parameters go as they are.
    n = _names()
    head = _head_set(n, ids=ids, ended=ended, mark="%s", jsonb="::jsonb")
    parts = [f"WITH head AS ({head} RETURNING {n['id']})"]
    if puts:
        values = ", ".join(["(%s, %s, %s, %s::json)"] * puts)
        parts.append(
            f", put AS (INSERT INTO {n['tool_state']} ({n['t_world']}, {n['t_tool']}, {n['t_path']}, "
            f"{n['t_shape']}, {n['t_data']}) SELECT head.{n['id']}, p.tool, p.path, p.shape, p.data "
            f"FROM head, (VALUES {values}) AS p(tool, path, shape, data) "
            f"ON CONFLICT ({n['t_world']}, {n['t_tool']}, {n['t_path']}) "
            f"DO UPDATE SET {n['t_shape']} = EXCLUDED.{n['t_shape']}, {n['t_data']} = EXCLUDED.{n['t_data']})"
        )
    if gone:
        values = ", ".join(["(%s, %s)"] * gone)
        parts.append(
            f", gone AS (DELETE FROM {n['tool_state']} AS t USING head, (VALUES {values}) AS g(tool, path) "
            f"WHERE t.{n['t_world']} = head.{n['id']} AND t.{n['t_tool']} = g.tool "
            f"AND t.{n['t_path']} = g.path)"
        )
    values = ", ".join(["(%s, %s::integer, %s::json)"] * entries)
    parts.append(
        f" INSERT INTO {n['entry']} ({n['e_world']}, {n['e_kind']}, {n['e_seq']}, {n['e_data']}) "
        f"SELECT head.{n['id']}, e.kind, e.seq, e.data FROM head, (VALUES {values}) AS e(kind, seq, data)"
    )
    return "".join(parts)


def _store_pg(db, w: CallWrite) -> bool:
    import psycopg

    raw = db.connection
    sql = _pg_sql(w.ids is not None, w.ended_at is not None, len(w.entries), len(w.pieces), len(w.gone))
    params = _head_params(w, lambda v: v)
    for tool, path, shape, data in w.pieces:
        params += [tool, path, shape, _json(data)]
    for tool, path in w.gone:
        params += [tool, path]
    for kind, seq, data in w.entries:
        params += [kind, seq, _json(data)]
    prepare = None  # the connection's own rule
    if settings.EVALCONSOLE_WORLDS_PREPARE:
        prepare = True
        if raw.prepare_threshold is None:
            # Django turns preparing off on the connection (None), and psycopg then ignores prepare=True.
            # Its own cursors bind on the client and never prepare, so this enables it for ours only.
            raw.prepare_threshold = 1 << 30
    started = time.monotonic()
    with psycopg.RawCursor(raw) as cur:
        cur.execute(sql, params, prepare=prepare)
        won = cur.rowcount > 0  # a call always appends its trace entry and its call event
    if db.queries_logged:
        _log(db, sql.decode(), started)
    return won


# ----------------------------------------------------------------------------- SQLite


@cache
def _sqlite_sql(ids: bool, ended: bool) -> tuple[str, str, str, str]:
    n = _names()
    return (
        _head_set(n, ids=ids, ended=ended, mark="?", jsonb=""),
        f"INSERT INTO {n['entry']} ({n['e_world']}, {n['e_kind']}, {n['e_seq']}, {n['e_data']}) "
        "VALUES (?, ?, ?, ?)",
        f"INSERT INTO {n['tool_state']} ({n['t_world']}, {n['t_tool']}, {n['t_path']}, {n['t_shape']}, "
        f"{n['t_data']}) VALUES (?, ?, ?, ?, ?) ON CONFLICT ({n['t_world']}, {n['t_tool']}, {n['t_path']}) "
        f"DO UPDATE SET {n['t_shape']} = excluded.{n['t_shape']}, {n['t_data']} = excluded.{n['t_data']}",
        f"DELETE FROM {n['tool_state']} WHERE {n['t_world']} = ? AND {n['t_tool']} = ? AND {n['t_path']} = ?",
    )


def _store_sqlite(db, w: CallWrite) -> bool:
    raw = db.connection
    head_sql, entry_sql, put_sql, gone_sql = _sqlite_sql(w.ids is not None, w.ended_at is not None)
    own = not db.in_atomic_block
    started = time.monotonic()
    if own:
        raw.execute("BEGIN IMMEDIATE")
    try:
        won = raw.execute(head_sql, _head_params(w, db.ops.adapt_datetimefield_value)).rowcount == 1
        _log(db, head_sql, started)
        if won:
            raw.executemany(entry_sql, [(w.world_id, k, s, _json(d)) for k, s, d in w.entries])
            _log(db, entry_sql, started)
            if w.pieces:
                raw.executemany(put_sql, [(w.world_id, t, p, sh, _json(d)) for t, p, sh, d in w.pieces])
                _log(db, put_sql, started)
            if w.gone:
                raw.executemany(gone_sql, [(w.world_id, t, p) for t, p in w.gone])
                _log(db, gone_sql, started)
        if own:
            raw.execute("COMMIT" if won else "ROLLBACK")
    except BaseException:
        if own and raw.in_transaction:
            raw.execute("ROLLBACK")
        raise
    return won


# ----------------------------------------------------------------------------- both


def _log(db, sql: str, started: float) -> None:
    if db.queries_logged:
        db.queries_log.append({"sql": sql, "time": f"{time.monotonic() - started:.3f}"})


def store(w: CallWrite) -> bool:
    """Store one call's writes, all or nothing: True when stored, False when the world's row is no
    longer at ``w.before`` (or has ended) and nothing was written. Raises django.db errors."""
    if not w.entries:
        raise ValueError("a call always has a trace entry")
    # The default connection itself, looked up once: each attribute read through the ``connection``
    # proxy looks the connection up again in the thread's connection handler.
    db = connections[DEFAULT_DB_ALIAS]
    vendor = db.vendor
    if vendor == "postgresql":
        run = _store_pg
    elif vendor == "sqlite":
        run = _store_sqlite
    else:  # pragma: no cover - the console runs on these two
        raise NotImplementedError(vendor)
    db.ensure_connection()
    if db.in_atomic_block:
        with transaction.atomic(), db.wrap_database_errors:
            return run(db, w)
    with db.wrap_database_errors:
        return run(db, w)


def stored(world_id: str, stamp: int) -> bool:
    """Whether the call written with ``stamp`` is stored (asked after its connection broke)."""
    return World.objects.filter(pk=world_id, stamp=stamp).exists()


def states(world_id: str) -> dict[str, list[tuple[list, str, Any]]]:
    """A world's stored pieces of tool state by tool: (path, shape, data) for worlds.pieces.assemble,
    in the tools' order. The rows' JSON texts are joined into one document and parsed at once (per
    row through the ORM, the decoding and converters cost several times the parse)."""
    n = _names()
    data = f"{n['t_data']}::text" if connection.vendor == "postgresql" else n["t_data"]
    sql = (
        f"SELECT {n['t_tool']}, {n['t_path']}, {n['t_shape']}, {data} FROM {n['tool_state']} "
        f"WHERE {n['t_world']} = %s ORDER BY {n['t_tool']}, {n['t_path']}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [world_id])
        rows = cursor.fetchall()
    dumps = json.dumps
    text = ",".join(f"[{dumps(tool)},{path},{dumps(shape)},{value}]" for tool, path, shape, value in rows)
    out: dict[str, list[tuple[list, str, Any]]] = {}
    for tool, path, shape, value in json.loads(f"[{text}]"):
        out.setdefault(tool, []).append((path, shape, value))
    return out
