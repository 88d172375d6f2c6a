"""How a stored world is kept: in parts (the seed once, a row per tool state, the trace and events
appended), served by any process in turn (each keeps the engine worlds it served, used only while
the row's calls counter says no other process advanced the world), writing only what a call changed."""


import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.support.scenes import support_question
from tests.support.world_calls import slack_history, slack_post, stored_world
from worlds import callstore, pieces, services
from worlds.models import World, WorldEntry, WorldToolState

pytestmark = pytest.mark.django_db

SCENE = support_question(
    "Where is my export?", scene="storage", task="Answer in #support.", in_thread=False, read_first=False
)


@pytest.fixture
def world(monkeypatch):
    monkeypatch.setattr(pieces, "LEAF_BYTES", 64)  # this scene's small state is stored split too
    yield stored_world(SCENE)
    services.forget_live_worlds()


def _texts(world_id: str) -> set[str]:
    """Every message text in the stored Slack state (a message keeps its versions)."""
    state = World.objects.get(pk=world_id).stored_states()["slack"]
    messages = state["messages"]
    return {v for m in (messages.values() if isinstance(messages, dict) else messages) for v in m["versions"]}


def test_a_world_served_alternately_by_two_processes_keeps_one_trace(world):
    row, engine = world
    for i in range(6):
        if i % 2:
            services.forget_live_worlds()  # the next call lands on a process that never saw this world
        response = services.call_world(row.id, "slack", slack_post(engine, f"message {i}"))
        assert response.status == 200 and response.body["ok"] is True
    loaded = services.load_world(row.id)
    assert [e.seq for e in loaded.trace] == [1, 2, 3, 4, 5, 6]
    assert [e.request["text"] for e in loaded.trace] == [f"message {i}" for i in range(6)]
    assert [e.n for e in loaded.events] == list(range(1, len(loaded.events) + 1))
    assert all(f"message {i}" in _texts(row.id) for i in range(6))
    assert loaded.seed == engine.seed, "the seed is the world before its first call"
    row.refresh_from_db()
    assert row.calls == 6 and row.state["calls"] == 6


def test_a_kept_world_is_not_used_once_another_process_advanced_the_row(world):
    row, engine = world
    services.call_world(row.id, "slack", slack_post(engine, "from process A"))
    stale = services._LIVE[row.id]  # process A keeps the world at calls = 1
    services.forget_live_worlds()
    services.call_world(row.id, "slack", slack_post(engine, "from process B"))  # process B: calls = 2
    services.forget_live_worlds()
    services._keep_live(row.id, stale)  # back on process A, whose kept world is behind the row
    assert stale.calls == 1
    services.call_world(row.id, "slack", slack_post(engine, "from process A again"))
    loaded = services.load_world(row.id)
    assert [e.request["text"] for e in loaded.trace] == [
        "from process A",
        "from process B",
        "from process A again",
    ]
    assert {"from process A", "from process B", "from process A again"} <= _texts(row.id)
    assert services._LIVE[row.id] is not stale


def test_entries_are_appended_and_a_read_rewrites_no_state(world):
    row, engine = world
    services.call_world(row.id, "slack", slack_post(engine, "first"))
    before = {(e.kind, e.seq): (e.pk, e.data) for e in WorldEntry.objects.filter(world_id=row.id)}
    assert ("trace", 1) in before
    with CaptureQueriesContext(connection) as write:
        services.call_world(row.id, "slack", slack_post(engine, "second"))
    with CaptureQueriesContext(connection) as read:
        services.call_world(row.id, "slack", slack_history(engine))
    after = {(e.kind, e.seq): (e.pk, e.data) for e in WorldEntry.objects.filter(world_id=row.id)}
    assert {k: after[k] for k in before} == before, "earlier entries are never rewritten"
    assert {("trace", 2), ("trace", 3)} <= set(after) - set(before)
    for queries in (write, read):
        sql = [q["sql"] for q in queries.captured_queries]
        assert not any(s.startswith(("UPDATE", "DELETE")) and "worlds_worldentry" in s for s in sql), sql
        assert not any(s.startswith("UPDATE") and '"seed" = ' in s for s in sql), "the seed is written once"
        assert not any(s.startswith("UPDATE") and '"ids" = ' in s for s in sql), (
            "unchanged ids are not rewritten"
        )
    assert any("worlds_worldtoolstate" in q["sql"] for q in write.captured_queries), "a write stores state"
    assert not any("worlds_worldtoolstate" in q["sql"] for q in read.captured_queries), "a read stores none"


def test_a_call_that_fails_to_save_leaves_no_kept_world_ahead_of_the_row(world, monkeypatch):
    row, engine = world
    services.call_world(row.id, "slack", slack_post(engine, "saved"))

    def broken(*args, **kwargs):
        raise RuntimeError("the process died mid-save")

    monkeypatch.setattr(callstore, "_json", broken)  # storing the call fails (worlds.callstore)
    with pytest.raises(RuntimeError):
        services.call_world(row.id, "slack", slack_post(engine, "lost"))
    monkeypatch.undo()
    assert row.id not in services._LIVE
    services.call_world(row.id, "slack", slack_post(engine, "after"))
    loaded = services.load_world(row.id)
    assert [(e.seq, e.request["text"]) for e in loaded.trace] == [(1, "saved"), (2, "after")]
    assert "lost" not in _texts(row.id)


def test_an_ended_world_is_dropped_and_answers_410(world):
    row, engine = world
    services.call_world(row.id, "slack", slack_post(engine, "one"))
    ended = services.end_world(row.id)
    assert [e.seq for e in ended.trace] == [1] and ended.events.of_type("trial_ended")
    assert row.id not in services._LIVE
    with pytest.raises(services.WorldGone):
        services.call_world(row.id, "slack", slack_post(engine, "two"))
    assert services.load_world(row.id).ended == "reply"


def test_a_world_stored_whole_before_the_parts_is_carried_on(world):
    row, engine = world
    services.call_world(row.id, "slack", slack_post(engine, "old"))
    whole = services.load_world(row.id).snapshot()
    whole.pop("credentials")
    WorldEntry.objects.filter(world_id=row.id).delete()
    WorldToolState.objects.filter(world_id=row.id).delete()
    World.objects.filter(pk=row.id).update(state=whole, seed={})
    services.forget_live_worlds()
    services.call_world(row.id, "slack", slack_post(engine, "new"))
    loaded = services.load_world(row.id)
    assert [e.request["text"] for e in loaded.trace] == ["old", "new"]
    assert {"old", "new"} <= _texts(row.id)
    assert "trace" not in World.objects.get(pk=row.id).state


def test_a_kept_world_holds_no_history_and_refuses_to_be_read_whole(world):
    from worlds.engine.trace import PartialHistory

    row, engine = world
    services.call_world(row.id, "slack", slack_post(engine, "one"))
    services.forget_live_worlds()
    services.call_world(row.id, "slack", slack_post(engine, "two"))  # restored without its history
    kept = services._LIVE[row.id].world
    assert kept.trace.entries == [] and len(kept.trace) == 2
    with pytest.raises(PartialHistory):
        list(kept.trace)
    with pytest.raises(PartialHistory):
        kept.events.of_type("message")
    services.call_world(row.id, "slack", slack_post(engine, "three"))
    loaded = services.load_world(row.id)
    assert [e.seq for e in loaded.trace] == [1, 2, 3]
    assert [e.n for e in loaded.events] == list(range(1, len(loaded.events) + 1))


def test_a_process_keeps_a_bounded_number_of_worlds(world, settings):
    row, engine = world
    settings.EVALCONSOLE_LIVE_WORLDS = 1
    other, other_engine = services.start_world(version=row.scene_version)
    assert list(services._LIVE) == [other.id], "the least recently used world is dropped"
    services.call_world(row.id, "slack", slack_post(engine, "still served"))  # restored, then kept
    assert list(services._LIVE) == [row.id]
    settings.EVALCONSOLE_LIVE_WORLDS = 0
    services.forget_live_worlds()
    services.call_world(other.id, "slack", slack_post(other_engine, "no keeping"))
    assert not services._LIVE
    assert [e.request["text"] for e in services.load_world(row.id).trace] == ["still served"]
