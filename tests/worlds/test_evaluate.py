"""evaluate(world): a scene's checks on a world, in scene order, with the trial's outcome (pure)."""

from __future__ import annotations

import json

import pytest

from worlds.engine.evaluate import evaluate, trial_outcome
from worlds.engine.http import Request
from worlds.engine.scene import load_scene
from worlds.engine.world import World

SCENE = """\
scene: mixed
task: Look up customer 42.
world:
  slack:
    users:
      slack_bot: { name: bot, bot: true }
      slack_laura: { name: laura }
    channels:
      slack_support: { name: support, members: [$slack_bot, $slack_laura] }
  tools:
    crm: { answers: { "GET /crm/missing": { status: 404 } } }
people:
  laura:
    slack: $slack_laura
    facts:
      workspace: { says: "acme-eu-2", asked_by: [workspace], match: [acme-eu-2] }
checks:
  - id: looked_up
    trace: { called: "GET /crm/customers/*" }
  - id: answered
    state: { slack.message: { channel: $slack_support, from: $slack_bot } }
  - id: asked_laura
    revealed: [laura.workspace]
  - id: helpful
    judge: "The agent was helpful."
pass: [looked_up, asked_laura]
"""


def _world(calls=(("GET", "/crm/customers/42"),)):
    world = World.build(load_scene(SCENE, "mixed.yaml"))
    for method, path in calls:
        world.call("crm", Request.make(method, path))
    world.end()
    return world


def test_checks_in_scene_order_with_every_field():
    result = evaluate(_world())
    assert [c["id"] for c in result["checks"]] == ["looked_up", "answered", "asked_laura", "helpful"]
    looked, answered, asked, helpful = result["checks"]
    assert looked["status"] == "passed" and looked["evidence"] == [1] and looked["events"] == [1]
    assert answered["status"] == "failed" and not answered["required"]  # nobody answered in Slack
    assert answered["expected"] and answered["actual"] and answered["explanation"]
    assert (asked["status"], asked["passed"]) == ("failed", False), "nobody asked laura anything"
    assert "was not revealed (laura was never asked for it)" in asked["actual"]
    assert helpful["status"] == "skipped" and "judge" in helpful["explanation"].lower()
    assert result["outcome"] == "fail"


def test_a_failed_call_never_satisfies_called():
    scene_text = SCENE.replace('"GET /crm/customers/*"', '"GET /crm/missing"')
    world = World.build(load_scene(scene_text, "s.yaml"))
    world.call("crm", Request.make("GET", "/crm/missing"))
    assert evaluate(world)["checks"][0]["status"] == "failed"


def test_the_judge_is_used_when_given_and_its_failure_is_an_error():
    world = _world()
    result = evaluate(world, judge=lambda rubric, material: (True, "it was helpful"))
    helpful = result["checks"][3]
    assert helpful["status"] == "passed" and helpful["actual"] == "it was helpful"

    def broken(rubric, material):
        raise TimeoutError("model timed out")

    assert evaluate(world, judge=broken)["checks"][3]["status"] == "error"


def test_the_call_budget_adds_a_failing_required_result():
    world = World.build(load_scene(SCENE, "mixed.yaml"))
    for i in range(501):
        world.call("crm", Request.make("GET", f"/crm/customers/{i}"))
    assert world.ended == "call_budget"
    result = evaluate(world)
    budget = result["checks"][-1]
    assert budget == {
        "id": "call_budget",
        "required": True,
        "passed": False,
        "status": "failed",
        "expected": "at most 500 calls",
        "actual": "501 calls",
        "explanation": "the agent made more than 500 calls",
        "evidence": [501],
        "events": [],
    }
    assert result["outcome"] == "fail"


@pytest.mark.parametrize(
    "statuses, outcome",
    [
        ([], "pass"),
        (["passed"], "pass"),
        (["passed", "skipped"], "indeterminate"),
        (["skipped", "error"], "error"),
        (["error", "failed", "skipped"], "fail"),
    ],
)
def test_trial_outcome_is_the_worst_required(statuses, outcome):
    checks = [{"required": True, "status": s} for s in statuses] + [{"required": False, "status": "failed"}]
    assert trial_outcome(checks) == outcome


def test_same_calls_same_bytes():
    calls = (("GET", "/crm/customers/42"), ("POST", "/crm/notes"))
    a, b = (json.dumps(evaluate(_world(calls))) for _ in range(2))
    assert a == b and "credential" not in a
