"""A world's trace entries and tool-state pieces carry no index on the world alone (migration
worlds.0006): their unique indexes start with the world and serve every lookup by it, so a call's
inserts keep two indexes each instead of three (four on PostgreSQL, with the varchar_pattern_ops one).
Going back to 0005 and forward again keeps a stored world, which is then served as before."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.support.scenes import support_question
from tests.support.world_calls import slack_history, slack_post, stored_world
from worlds import services
from worlds.models import World, WorldEntry, WorldToolState

SCENE = support_question(
    "Where is my export?", scene="indexed", task="Answer in #support.", in_thread=False, read_first=False
)


def _indexes(model) -> dict[str, tuple[list[str], bool]]:
    """Every index of ``model``'s table, unique constraints included: name -> (columns, unique)."""
    with connection.cursor() as cursor:
        found = connection.introspection.get_constraints(cursor, model._meta.db_table)
    return {name: (c["columns"], bool(c["unique"])) for name, c in found.items() if c["index"] or c["unique"]}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("model", "unique"),
    [(WorldEntry, ["world_id", "kind", "seq"]), (WorldToolState, ["world_id", "tool", "path"])],
)
def test_lookups_by_world_use_the_unique_index_and_nothing_else_indexes_the_world(model, unique):
    indexes = _indexes(model)
    on_world = sorted((cols, uniq) for cols, uniq in indexes.values() if "world_id" in cols)
    assert on_world == [(unique, True)], indexes


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


@pytest.mark.django_db(transaction=True)
def test_the_indexes_come_back_going_back_and_a_stored_world_is_served_either_side():
    latest = MigrationExecutor(connection).loader.graph.leaf_nodes()
    try:
        row, engine = stored_world(SCENE)
        services.call_world(row.id, "slack", slack_post(engine, "before"))
        _migrate([("worlds", "0005_tool_state_pieces")])
        assert any(cols == ["world_id"] for cols, _ in _indexes(WorldEntry).values())
        assert any(cols == ["world_id"] for cols, _ in _indexes(WorldToolState).values())

        _migrate(latest)
        services.forget_live_worlds()  # a process started after the migration: restored from the rows
        assert services.call_world(row.id, "slack", slack_history(engine)).status == 200
        response = services.call_world(row.id, "slack", slack_post(engine, "after"))
        assert response.status == 200 and response.body["ok"] is True
        world = services.load_world(row.id)
        assert [e.seq for e in world.trace] == [1, 2, 3]
        texts = {
            v
            for m in World.objects.get(pk=row.id).stored_states()["slack"]["messages"]
            for v in m["versions"]
        }
        assert {"before", "after"} <= texts
    finally:
        _migrate(latest)
        services.forget_live_worlds()
