"""A world served on loopback: a declared other tool answered and traced, the clock, the call budget,
ended and unknown worlds, big bodies, and a snapshot carried on by another World object."""

import json

import httpx
import pytest

from worlds.engine import load_scene
from worlds.engine.budget import CALL_BUDGET
from worlds.engine.http import Request
from worlds.engine.world import World, WorldEnded

SCENE = """
scene: crm-lookup
task: Look the customer up.
clock: { start: "2026-03-02T09:00:00Z", per_call: 2s }
world:
  tools:
    crm:
      answers:
        "GET /crm/customers/*": { status: 200, body: { plan: pro } }
        "DELETE *": { status: 403, body: { error: no } }
checks:
  - id: looked_up
    trace: { called: "GET /crm/customers/*" }
"""


@pytest.fixture(scope="module")
def scene():
    return load_scene(SCENE, "crm.yaml")


def test_an_other_tool_answers_from_the_scene_and_every_call_is_traced(served):
    server, world = served
    base = world.for_agent(server.root)["tools"]["crm"]["base_url"]
    assert base == f"{server.root}/worlds/{world.id}/crm/"
    with httpx.Client() as client:
        found = client.get(base + "crm/customers/42", params={"fields": "plan"})
        other = client.post(base + "crm/notes", json={"text": "hi"})
        refused = client.delete(base + "crm/customers/42")
    assert (found.status_code, found.json()) == (200, {"plan": "pro"})
    assert (other.status_code, other.json()) == (200, {})
    assert (refused.status_code, refused.json()) == (403, {"error": "no"})
    entries = world.trace.to_list()
    assert [(e["seq"], e["method"], e["path"], e["status"]) for e in entries] == [
        (1, "GET", "/crm/customers/42", 200),
        (2, "POST", "/crm/notes", 200),
        (3, "DELETE", "/crm/customers/42", 403),
    ]
    assert entries[0]["query"] == {"fields": ["plan"]}
    assert entries[1]["request"] == {"text": "hi"}
    assert [e["at"] for e in entries] == [
        "2026-03-02T09:00:02Z",
        "2026-03-02T09:00:04Z",
        "2026-03-02T09:00:06Z",
    ]
    assert [e["worked"] for e in entries] == [True, True, False]
    assert [e.type for e in world.events] == ["call", "call", "call"]


def test_unknown_worlds_and_tools_are_404_and_an_ended_world_is_410(served):
    server, world = served
    with httpx.Client(base_url=server.root) as client:
        assert client.get("/worlds/nope/crm/x").status_code == 404
        assert client.get(f"/worlds/{world.id}/slack/api/auth.test").status_code == 404
        assert client.get("/elsewhere").status_code == 404
        world.end()
        gone = client.get(f"/worlds/{world.id}/crm/crm/customers/1")
    assert gone.status_code == 410
    assert len(world.trace) == 0, "calls to no tool, and after the end, are not the agent's tool calls"
    assert [e.type for e in world.events] == ["trial_ended"]
    with pytest.raises(WorldEnded):
        world.call("crm", Request.make("GET", "/x"))


def test_a_body_over_one_megabyte_is_413_and_the_world_stays_usable(served):
    server, world = served
    url = f"{server.root}/worlds/{world.id}/crm/crm/upload"
    with httpx.Client() as client:
        big = client.post(url, content=b"x" * (2 * 1024 * 1024))
        after = client.get(url)
    assert big.status_code == 413
    assert after.status_code == 200


def test_the_501st_call_is_traced_answers_429_and_ends_the_trial():
    world = World.build(load_scene(SCENE, "crm.yaml"))
    statuses = [
        world.call("crm", Request.make("GET", "/crm/customers/1")).status for _ in range(CALL_BUDGET + 1)
    ]
    assert statuses[-2:] == [200, 429]
    assert len(world.trace) == CALL_BUDGET + 1
    assert world.ended == "call_budget"
    assert world.clock.calls == CALL_BUDGET + 1
    with pytest.raises(WorldEnded):
        world.call("crm", Request.make("GET", "/crm/customers/1"))


def test_a_snapshot_carries_on_in_another_world_object_and_is_json():
    scene = load_scene(SCENE, "crm.yaml")
    first = World.build(scene)
    first.call("crm", Request.make("GET", "/crm/customers/1", "a=1"))
    stored = json.loads(json.dumps(first.snapshot()))
    second = World.restore(scene, stored)
    second.call(
        "crm",
        Request.make("POST", "/crm/notes", body=b'{"x": 1}', headers={"Content-Type": "application/json"}),
    )
    assert [e.seq for e in second.trace] == [1, 2]
    assert [e.at for e in second.trace] == [scene.start + scene.per_call, scene.start + 2 * scene.per_call]
    assert second.trace.entries[0].query == {"a": ["1"]}
    assert [e.n for e in second.events] == [1, 2]
    assert second.id == first.id and second.credentials == first.credentials


def test_a_snapshot_of_another_version_is_refused():
    scene = load_scene(SCENE, "crm.yaml")
    with pytest.raises(ValueError, match="snapshot version"):
        World.restore(scene, {**World.build(scene).snapshot(), "version": 99})
