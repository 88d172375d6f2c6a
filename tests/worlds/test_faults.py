"""Faults that live and resolve (WORLDS.md "Faults"): they start at ``at`` in simulated time, their
effects show through the tools, they resolve the first time ``resolved_when`` holds (a state check or a
milestone), ``on_resolve`` then applies, both moments are events, and ``fault_resolved`` judges them.
Engine only: calls go to the world as the HTTP layer hands them over."""

from __future__ import annotations

import json

import pytest

from worlds.engine import load_scene
from worlds.engine.evaluate import evaluate
from worlds.engine.http import Request
from worlds.engine.world import World

SCENE = """
scene: exports-fault
task: Fix production.
clock: { start: "2026-03-02T09:00:00Z", per_call: 1m }
world:
  slack:
    users:
      slack_bot: { name: orders-bot, bot: true }
      slack_ben: { name: ben }
    channels:
      slack_eng: { name: eng, members: [$slack_bot, $slack_ben] }
  github:
    users: { gh_bot: { login: orders-bot, bot: true } }
    repos:
      github_orders:
        name: acme/orders
        collaborators: { $gh_bot: write }
        commits:
          c_base: { message: init, files: { app.py: "v1" } }
          c_bad:  { parent: $c_base, message: "exports v2", files: { app.py: "v2" } }
        branches: { main: $c_bad }
        production: $c_bad
world_rules:
  faults:
    - id: exports_down
      at: FAULT_AT
      effects: { slack.message: { channel: $slack_eng, from: $slack_ben, text: "orders 5xx are up" } }
      resolved_when: { github.production: { repo: $github_orders, commit: $c_base } }
      on_resolve: { slack.message: { channel: $slack_eng, from: $slack_ben, text: "errors are gone" } }
"""
FIXED = "checks:\n  - { id: fixed, state: { fault_resolved: $exports_down } }\n"


def scene(at: str = "0s", extra_faults: str = "", checks: str = FIXED):
    """The scene with its fault at ``at``, more faults (list items) after it, and ``checks``."""
    return load_scene(SCENE.replace("FAULT_AT", at) + extra_faults + checks, "fault.yaml")


def slack(world: World, method: str, **args):
    body = json.dumps(args).encode()
    headers = {
        "Authorization": f"Bearer {world.credentials['slack']['token']}",
        "Content-Type": "application/json",
    }
    return world.call("slack", Request.make("POST", f"/api/{method}", headers=headers, body=body)).body


def github(world: World, method: str, path: str, body=None):
    headers = {
        "Authorization": f"token {world.credentials['github']['token']}",
        "Content-Type": "application/json",
    }
    data = json.dumps(body).encode() if body is not None else b""
    return world.call("github", Request.make(method, path, headers=headers, body=data))


def roll_back(world: World) -> None:
    """Deploy c_base to production with a success status: two calls."""
    deployment = github(
        world,
        "POST",
        "/repos/acme/orders/deployments",
        {"ref": world.ids["c_base"], "environment": "production", "required_contexts": []},
    )
    assert deployment.status == 201, deployment.body
    status = github(
        world,
        "POST",
        f"/repos/acme/orders/deployments/{deployment.body['id']}/statuses",
        {"state": "success"},
    )
    assert status.status == 201, status.body


def eng_texts(world: World) -> list[str]:
    history = slack(world, "conversations.history", channel=world.ids["slack_eng"])
    return [m["text"] for m in reversed(history["messages"])]


def fault_check(world: World) -> dict:
    return evaluate(world)["checks"][0]


def test_a_fault_at_the_start_shows_through_the_tools_on_the_first_call():
    world = World.build(scene())
    assert len(world.events) == 0, "nothing happens before the first call"
    assert eng_texts(world) == ["orders 5xx are up"], "the agent discovers the fault through Slack"
    started, message, call = list(world.events)[:3]
    assert (started.type, started.data["fault"], started.at.isoformat()) == (
        "fault_started",
        "exports_down",
        "2026-03-02T09:00:00+00:00",
    ), "the effects happen at exactly clock.start + at, before the call at +1m"
    assert message.type == "message" and message.at == started.at and message.data["seq"] is None
    assert call.type == "call" and call.data["seq"] == 1


def test_a_later_fault_starts_before_the_first_call_at_or_after_its_time():
    world = World.build(scene(at="2m30s"))
    assert eng_texts(world) == [] and eng_texts(world) == []  # calls at +1m and +2m
    assert eng_texts(world) == ["orders 5xx are up"]  # the call at +3m
    started = world.events.of_type("fault_started")[0]
    assert started.at.isoformat() == "2026-03-02T09:02:30+00:00"
    assert [e.type for e in world.events][-3:] == ["fault_started", "message", "call"]


def test_rolling_back_resolves_the_fault_at_the_call_that_made_it_hold_and_applies_on_resolve():
    world = World.build(scene())
    eng_texts(world)  # call 1
    roll_back(world)  # calls 2 and 3: the success status moves production back
    resolved = world.events.of_type("fault_resolved")
    assert len(resolved) == 1
    assert (resolved[0].data["seq"], resolved[0].at.isoformat()) == (3, "2026-03-02T09:03:00+00:00")
    assert eng_texts(world) == ["orders 5xx are up", "errors are gone"], "on_resolve applied"
    result = fault_check(world)
    assert result["status"] == "passed"
    assert result["evidence"] == [3], "the call that resolved it"
    started = world.events.of_type("fault_started")[0]
    assert result["events"] == [started.n, resolved[0].n]
    assert "resolved at 2026-03-02T09:03:00Z by call 3" in result["actual"]
    roll_back(world)
    assert len(world.events.of_type("fault_resolved")) == 1, "a fault resolves once"


def test_a_fault_left_active_fails_with_what_still_does_not_hold():
    world = World.build(scene())
    eng_texts(world)
    world.end()
    result = fault_check(world)
    assert result["status"] == "failed"
    assert result["explanation"].startswith(
        "Expected fault exports_down resolved by the end of the trial, but "
    )
    assert "started at 2026-03-02T09:00:00Z and was still active at 2026-03-02T09:01:00Z" in result["actual"]
    assert "github.production {repo: github_orders, commit: c_base} does not hold" in result["actual"]
    assert world.ids["c_bad"][:7] in result["actual"], "it says which commit production is on"
    assert evaluate(world)["outcome"] == "fail"


def test_a_fault_that_never_started_fails_saying_when_it_would_have():
    world = World.build(scene(at="10m"))
    eng_texts(world)
    world.end()
    result = fault_check(world)
    assert result["status"] == "failed"
    assert (
        "never started (it starts at 2026-03-02T09:10:00Z; the trial ended at 2026-03-02T09:01:00Z)"
        in (result["actual"])
    )
    assert not world.events.of_type("fault_started"), "steps due after the last call are never applied"


def test_a_world_ended_without_calls_still_applies_the_steps_due_at_the_start():
    world = World.build(scene())
    world.end()
    types = [e.type for e in world.events]
    assert types == ["fault_started", "message", "trial_ended"]
    assert fault_check(world)["status"] == "failed"


def test_a_milestone_predicate_resolves_at_the_call_and_may_come_before_the_fault_starts():
    called = """
    - id: paged
      at: 3m
      effects: {}
      resolved_when: { called: "POST /api/chat.postMessage" }
"""
    checks = "checks:\n  - { id: paged, state: { fault_resolved: $paged } }\n"
    world = World.build(scene(extra_faults=called, checks=checks))
    slack(world, "chat.postMessage", channel=world.ids["slack_eng"], text="looking")  # +1m, before +3m
    assert not world.events.of_type("fault_resolved")
    eng_texts(world)
    eng_texts(world)  # +3m: the fault starts, and its milestone already happened
    resolved = [e for e in world.events.of_type("fault_resolved") if e.data["fault"] == "paged"]
    assert len(resolved) == 1 and resolved[0].at.isoformat() == "2026-03-02T09:03:00+00:00"
    assert evaluate(world)["checks"][0]["status"] == "passed"


def test_fault_resolved_as_a_milestone_chains_faults():
    chained = """
    - id: follow_up
      at: 0s
      effects: {}
      resolved_when: { fault_resolved: $exports_down }
"""
    checks = "checks:\n  - { id: both, state: { fault_resolved: $follow_up } }\n"
    world = World.build(scene(extra_faults=chained, checks=checks))
    eng_texts(world)
    assert evaluate(world)["checks"][0]["status"] == "failed"
    roll_back(world)
    eng_texts(world)
    assert evaluate(world)["checks"][0]["status"] == "passed"


def test_a_restored_world_carries_on_its_faults():
    world = World.build(scene())
    eng_texts(world)
    snapshot = json.loads(json.dumps(world.snapshot()))
    again = World.restore(world.scene, snapshot)
    assert again.faults.state == world.faults.state
    roll_back(again)
    assert len(again.events.of_type("fault_started")) == 1, "a started fault does not start again"
    assert fault_check(again)["status"] == "passed"


def test_the_same_calls_give_byte_identical_results_and_events():
    def play():
        world = World.build(scene())
        eng_texts(world)
        roll_back(world)
        world.end()
        return (
            json.dumps(evaluate(world)),
            json.dumps(world.events.to_list()),
            json.dumps(world.final_state()),
        )

    assert play() == play()


def test_world_json_shows_each_fault_with_its_moments():
    world = World.build(scene())
    eng_texts(world)
    roll_back(world)
    assert world.final_state()["faults"] == [
        {
            "fault": "exports_down",
            "starts": "2026-03-02T09:00:00Z",
            "started": "2026-03-02T09:00:00Z",
            "resolved": "2026-03-02T09:03:00Z",
        }
    ]


@pytest.mark.parametrize("written", ["$exports_down", "$fault.exports_down"])
def test_a_library_fault_resolved_check_reads_the_scene_refs(written):
    world = World.build(scene())
    eng_texts(world)
    roll_back(world)
    assert world.state_check("fault_resolved", {"fault": written}, written=True).passed
    missing = world.state_check("fault_resolved", {"fault": "$no_such"}, written=True)
    assert not missing.passed and "unknown ref $no_such" in missing.actual
