"""The fast path of a call to a stored world (worlds.callstore): all of a call's writes or none, a lost
race or an ended world writes nothing, a broken connection neither loses nor doubles a call, and only
the tools a call could have changed are compared with what is stored."""

import json
import marshal
from pathlib import Path

import pytest
from django.db import OperationalError, connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tests.support.world_calls import slack_history, slack_post, stored_world
from worlds import callstore, pieces, services
from worlds.engine import load_scene
from worlds.engine.http import Request
from worlds.engine.world import World as EngineWorld
from worlds.models import World, WorldEntry

SCENES = Path(__file__).parent / "scenes"
SCENE = (SCENES / "store.yaml").read_text()


@pytest.fixture
def world(monkeypatch):
    monkeypatch.setattr(pieces, "LEAF_BYTES", 64)  # this scene's small state is stored split too
    yield stored_world(SCENE)
    services.forget_live_worlds()


def _stored(world_id: str) -> tuple[int, list[tuple[str, int]], list[str]]:
    """(calls, the entries' (kind, seq), the texts in the stored Slack state)."""
    calls = World.objects.get(pk=world_id).calls
    rows = WorldEntry.objects.filter(world_id=world_id).order_by("kind", "seq")
    entries = list(rows.values_list("kind", "seq"))
    messages = World.objects.get(pk=world_id).stored_states()["slack"]["messages"]
    listed = messages.values() if isinstance(messages, dict) else messages
    texts = sorted(v for m in listed for v in m["versions"])
    return calls, entries, texts


def _trace_texts(world_id: str) -> list:
    return [(e.seq, (e.request or {}).get("text")) for e in services.load_world(world_id).trace]


@pytest.mark.django_db
def test_a_statement_that_fails_mid_call_stores_none_of_the_call(world, monkeypatch):
    row, engine = world
    services.call_world(row.id, "slack", slack_post(engine, "saved"))
    before = _stored(row.id)
    if connection.vendor == "postgresql":
        # The statement fails while it runs, on the pieces' rows, after its head UPDATE matched.
        real_pg = callstore._pg_marked
        failing = "p.data::text::integer::text::json FROM head"
        broken = lambda *a: callstore._numbered(real_pg(*a).replace("p.data FROM head", failing))  # noqa: E731
        monkeypatch.setattr(callstore, "_pg_sql", broken)
        expected = "invalid input syntax for type integer"
    else:  # the pieces' upsert fails after the head and the entries were written
        real = callstore._sqlite_sql
        broken_sql = 'INSERT INTO "no_such_table" VALUES (?, ?, ?, ?, ?)'
        monkeypatch.setattr(callstore, "_sqlite_sql", lambda *a: (*real(*a)[:2], broken_sql, real(*a)[3]))
        expected = "no_such_table"
    with pytest.raises(Exception, match=expected):
        services.call_world(row.id, "slack", slack_post(engine, "lost"))
    monkeypatch.undo()
    assert row.id not in services._LIVE
    assert _stored(row.id) == before, "neither the head, the entries nor the state of the failed call"
    services.call_world(row.id, "slack", slack_post(engine, "after"))
    assert _trace_texts(row.id) == [(1, "saved"), (2, "after")]


@pytest.mark.django_db(transaction=True)
def test_a_call_that_fails_before_its_last_statement_is_sent_stores_none_of_it(world, monkeypatch):
    """Outside any transaction of the caller (as the view runs): a statement the driver refuses before
    sending it (PostgreSQL: a parameter it cannot adapt; SQLite: the wrong number of parameters for
    the pieces' statement) must not leave the statements before it stored."""
    row, engine = world
    services.call_world(row.id, "slack", slack_post(engine, "saved"))
    before = _stored(row.id)
    if connection.vendor == "postgresql":  # one parameter psycopg cannot send
        monkeypatch.setattr(callstore, "_json", lambda value: object())
    else:
        real = callstore._sqlite_sql
        wrong = 'INSERT INTO "worlds_worldtoolstate" ("world_id", "tool", "path") VALUES (?, ?, ?)'
        monkeypatch.setattr(callstore, "_sqlite_sql", lambda *a: (*real(*a)[:2], wrong, real(*a)[3]))
    with pytest.raises(Exception, match="(?i)placeholders|bindings|parameters|cannot adapt"):
        services.call_world(row.id, "slack", slack_post(engine, "lost"))
    monkeypatch.undo()
    assert _stored(row.id) == before
    services.call_world(row.id, "slack", slack_post(engine, "after"))
    assert _trace_texts(row.id) == [(1, "saved"), (2, "after")]


@pytest.mark.django_db
def test_a_kept_world_writes_nothing_to_a_world_another_process_ended(world):
    row, engine = world
    services.call_world(row.id, "slack", slack_post(engine, "one"))
    assert row.id in services._LIVE
    World.objects.filter(pk=row.id).update(ended_at=timezone.now(), end_reason="reply")  # another process
    before = _stored(row.id)
    with pytest.raises(services.WorldGone):
        services.call_world(row.id, "slack", slack_post(engine, "too late"))
    assert _stored(row.id) == before
    assert row.id not in services._LIVE


@pytest.mark.django_db
def test_a_lost_race_writes_nothing_and_the_call_is_answered_on_the_row(world):
    row, engine = world
    services.call_world(row.id, "slack", slack_post(engine, "A1"))
    stale = services._LIVE[row.id]
    services.forget_live_worlds()
    services.call_world(row.id, "slack", slack_post(engine, "B2"))  # another process moved the row on
    services._keep_live(row.id, stale)
    with CaptureQueriesContext(connection) as queries:
        services.call_world(row.id, "slack", slack_post(engine, "A3"))
    sql = [q["sql"] for q in queries.captured_queries]
    assert any(s.startswith("SELECT") and "worlds_worldtoolstate" in s for s in sql), "answered on the row"
    assert _trace_texts(row.id) == [(1, "A1"), (2, "B2"), (3, "A3")]
    assert World.objects.get(pk=row.id).calls == 3


@pytest.mark.django_db
def test_a_read_is_one_statement_on_postgresql_and_rewrites_no_ids(world):
    row, engine = world
    services.call_world(row.id, "slack", slack_post(engine, "first"))
    with CaptureQueriesContext(connection) as read:
        services.call_world(row.id, "slack", slack_history(engine))
    sql = [q["sql"] for q in read.captured_queries if not q["sql"].startswith(("SAVEPOINT", "RELEASE"))]
    assert not any('"ids" =' in s or "worlds_worldtoolstate" in s for s in sql), sql
    if connection.vendor == "postgresql":
        assert len(sql) == 1 and sql[0].startswith("WITH head AS (UPDATE"), sql
    else:
        assert [s.split()[0] for s in sql] == ["UPDATE", "INSERT"], sql


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("stored_first", [True, False], ids=["after-commit", "before-commit"])
def test_a_connection_that_breaks_while_storing_a_call_neither_loses_nor_doubles_it(
    world, monkeypatch, stored_first
):
    row, engine = world
    services.call_world(row.id, "slack", slack_post(engine, "one"))
    real = callstore.store

    def breaks(write):
        if stored_first:
            real(write)
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(callstore, "store", breaks)
    response = services.call_world(row.id, "slack", slack_post(engine, "two"))
    monkeypatch.undo()
    assert response.status == 200 and response.body["ok"] is True
    services.call_world(row.id, "slack", slack_post(engine, "three"))
    assert _trace_texts(row.id) == [(1, "one"), (2, "two"), (3, "three")]
    assert World.objects.get(pk=row.id).calls == 3


def test_a_call_touches_only_the_tools_whose_state_it_may_change():
    """The console compares only ``world.touched`` with what it stored: every tool whose state a
    call changed must be in it (a tool's state is reached only through World.simulator)."""
    scene = load_scene((SCENES / "example.yaml").read_text(), "example.yaml")
    world = EngineWorld.build(scene)
    slack = {"Authorization": f"Bearer {world.credentials['slack']['token']}"}
    gh = {"Authorization": f"token {world.credentials['github']['token']}"}
    support = world.ids["slack_support"]
    calls = [
        ("slack", "POST", "/api/chat.postMessage", slack, {"channel": support, "text": "hello <@U1>"}),
        ("slack", "GET", f"/api/conversations.history?channel={support}", slack, None),
        ("slack", "POST", "/api/conversations.open", slack, {"users": world.ids["slack_mike"]}),
        ("github", "POST", "/repos/acme/orders/issues", gh, {"title": "Exports", "labels": ["bug"]}),
        ("github", "POST", "/repos/acme/orders/issues/13/comments", gh, {"body": "On it @ben"}),
        ("github", "GET", "/repos/acme/orders/issues", gh, None),
        ("github", "PUT", "/repos/acme/orders/pulls/12/merge", gh, {}),
        ("crm", "GET", "/crm/customers/42", {}, None),
        ("slack", "POST", "/api/chat.postMessage", {}, {"channel": support, "text": "no token"}),
    ]
    for tool, method, target, headers, body in calls:
        path, _, query = target.partition("?")
        before = {t: marshal.dumps(s, 0) for t, s in world.states.items()}
        ids_before = dict(world.ids)
        world.touched.clear()
        data = json.dumps(body).encode() if body is not None else b""
        headers = {**headers, "Content-Type": "application/json"}
        world.call(tool, Request.make(method, path, query, headers, data))
        changed = {t for t, s in world.states.items() if marshal.dumps(s, 0) != before[t]}
        assert changed <= world.touched, (target, changed, world.touched)
        # A call its tool answers as a read (Simulator.reads) leaves the tool untouched; any other, or
        # one the tool refused before reading (no token), touches it.
        read = (
            method == "GET"
            or target.startswith("/api/conversations.history")
            or not headers.get("Authorization")
        )
        assert tool not in world.states or (tool in world.touched) is not read, target
        assert world.ids == ids_before or tool in world.touched


def _scenes():
    from bench.worlds.bench_worlds import scene_text

    yield load_scene((SCENES / "example.yaml").read_text(), "example.yaml")
    yield load_scene(scene_text(), "bench.json")


@pytest.mark.parametrize("scene", list(_scenes()), ids=["example", "bench-200"])
def test_a_world_built_from_the_scenes_first_build_equals_one_built_afresh(scene):
    """World.build copies what the simulators built for the scene's first world: the states, ids,
    seed and clock must be those of a world built afresh, and no two worlds share a state."""
    first, second = EngineWorld.build(scene), EngineWorld.build(scene)
    fresh = EngineWorld.build(scene, cached=False)
    for world in (first, second):
        head, expected = world.head(), fresh.head()
        assert head.pop("id") != expected.pop("id")
        assert head == expected
        assert world.states == fresh.states and world.seed == fresh.seed and world.ids == fresh.ids
        assert world.credentials != fresh.credentials
    second.states["slack"]["channels"].clear()
    assert first.states == fresh.states and second.seed == fresh.seed, "every world has its own copy"


@pytest.mark.django_db(transaction=True)
def test_calls_racing_from_two_threads_are_each_stored_once_in_order(world):
    """Two threads (two database connections) calling one world at once: one usually holds the kept
    world while the other finds none and answers on the row under the lock, so the fast statement's
    condition and the locked path race for real. Every call is stored once, numbered without gaps."""
    import threading

    from django.db import connections

    if connection.vendor == "sqlite" and connection.settings_dict["NAME"].startswith(("file:", ":memory:")):
        pytest.skip("an in-memory SQLite test database locks per table, not as a file does")
    row, engine = world
    errors: list[BaseException] = []
    start = threading.Barrier(2)
    paths = {"kept": 0, "lost": 0, "locked": 0}
    real_store, real_locked = services._store_call, services._call_locked

    def store(*args):
        won = real_store(*args)
        paths["kept" if won else "lost"] += 1
        return won

    def locked(*args):
        paths["locked"] += 1
        return real_locked(*args)

    def caller(name: str) -> None:
        try:
            start.wait()
            for i in range(15):
                response = services.call_world(row.id, "slack", slack_post(engine, f"{name}{i}"))
                assert response.status == 200 and response.body["ok"] is True
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=caller, args=(n,)) for n in "AB"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(services, "_store_call", store)
        patch.setattr(services, "_call_locked", locked)
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    assert not errors, errors
    assert paths["kept"] and paths["locked"], paths  # both paths served calls
    assert paths["kept"] + paths["locked"] == 30, paths  # a lost store is answered again, locked
    trace = _trace_texts(row.id)
    assert [seq for seq, _ in trace] == list(range(1, 31))
    assert sorted(text for _, text in trace) == sorted(f"{n}{i}" for n in "AB" for i in range(15))
    for name in "AB":  # each thread's calls in its own order
        assert [t for _, t in trace if t.startswith(name)] == [f"{name}{i}" for i in range(15)]
    assert World.objects.get(pk=row.id).calls == 30
    calls, entries, texts = _stored(row.id)
    assert len(texts) == len(set(texts))
    assert {f"{n}{i}" for n in "AB" for i in range(15)} <= set(texts)
