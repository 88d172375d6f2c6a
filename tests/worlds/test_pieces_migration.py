"""Migration worlds.0005 (tool states in pieces) keeps every stored world: a tool state stored as one
row before it is that state after it (the piece at ``[]``), and the world's next calls carry on and
split it. Going back works while no state is split, and refuses (keeping every row) once one is."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.support.scenes import support_question
from tests.support.world_calls import slack_history, slack_post, stored_world
from worlds import pieces, services
from worlds.models import World

SCENE = support_question(
    "Where is my export?", scene="migrated", task="Answer in #support.", in_thread=False, read_first=False
)

BEFORE = [("worlds", "0004_payload_json")]


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def _latest():
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


@pytest.mark.django_db(transaction=True)
def test_tool_states_stored_whole_are_kept_and_split_by_the_next_write(monkeypatch):
    monkeypatch.setattr(pieces, "LEAF_BYTES", 64)
    try:
        row, engine = stored_world(SCENE)  # every tool stored whole: one row at the root
        services.call_world(row.id, "slack", slack_history(engine))  # a read: still whole
        before = World.objects.get(pk=row.id).stored_states()
        old_apps = _migrate(BEFORE)
        old = old_apps.get_model("worlds", "WorldToolState").objects.filter(world_id=row.id)
        assert {s.tool: s.data for s in old} == before, "as the rows were before worlds.0005"

        _migrate(_latest())
        services.forget_live_worlds()  # a process started after the migration
        stored = World.objects.get(pk=row.id)
        assert stored.stored_states() == before
        assert set(stored.tool_states.values_list("path", "shape")) == {(pieces.ROOT, pieces.LEAF)}
        response = services.call_world(row.id, "slack", slack_post(engine, "after the migration"))
        assert response.status == 200 and response.body["ok"] is True
        stored = World.objects.get(pk=row.id)
        texts = {v for m in stored.stored_states()["slack"]["messages"] for v in m["versions"]}
        assert "after the migration" in texts
        assert stored.tool_states.filter(tool="slack").count() > 1, "the changed state is stored split"
        assert [e.seq for e in services.load_world(row.id).trace] == [1, 2]

        with pytest.raises(RuntimeError, match="stored in pieces"):
            _migrate(BEFORE)
        kept = World.objects.get(pk=row.id)
        assert kept.stored_states() == stored.stored_states(), "refusing kept every piece"
    finally:
        _migrate(_latest())
        services.forget_live_worlds()
