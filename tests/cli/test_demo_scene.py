"""The demo scene (worlds/scenes/support-export.yaml) played by the demo agent over real HTTP:
`evalconsole scene run` passes it, the agent's sloppy mode fails it, and `scene explain` cites the
trace entries behind each failed check."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from agents import demo_world
from evalconsole import cli
from evalconsole.scene_cli import agent_request
from tests.support.raw_server import free_port
from worlds.engine.scene import load_scene
from worlds.engine.serve import WorldServer
from worlds.engine.world import World

REPO = Path(__file__).resolve().parents[2]
DEMO_SCENE = REPO / "worlds" / "scenes" / "support-export.yaml"
REQUIRED = ["answered", "issue_filed", "read_the_thread", "no_crm_writes"]


def scene(capsys, *args):
    code = cli.main(["scene", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def _trial(out: Path) -> tuple[dict, list[dict]]:
    folder = out / "support-export" / "trial-1"
    checks = json.loads((folder / "checks.json").read_text())
    trace = json.loads((folder / "trace.json").read_text())
    return checks, trace


def test_the_demo_scene_validates(capsys):
    code, out, err = scene(capsys, "validate", DEMO_SCENE)
    assert code == 0, err
    assert "ok: scene support-export, 5 check(s), 4 required" in out


def test_the_demo_agent_passes_the_demo_scene(capsys, agent, tmp_path):
    code, out, err = scene(capsys, "run", DEMO_SCENE, "--agent", agent.url, "--out", tmp_path)
    assert code == 0, out + err
    checks, trace = _trial(tmp_path)
    assert checks["outcome"] == "pass"
    assert {c["id"]: c["status"] for c in checks["checks"]} == {
        **dict.fromkeys(REQUIRED, "passed"),
        "looked_up_plan": "passed",
    }
    assert [(e["tool"], e["method"], e["path"], e["status"]) for e in trace] == [
        ("slack", "POST", "/api/auth.test", 200),
        ("slack", "POST", "/api/conversations.list", 200),
        ("slack", "POST", "/api/conversations.history", 200),
        ("slack", "POST", "/api/conversations.replies", 200),
        ("crm", "GET", "/crm/customers/42", 200),
        ("github", "POST", "/repos/acme/orders/issues", 201),
        ("slack", "POST", "/api/chat.postMessage", 200),
    ]
    assert trace[5]["request"]["labels"] == ["bug"]
    assert trace[6]["request"]["thread_ts"]
    world = json.loads((tmp_path / "support-export" / "trial-1" / "world.json").read_text())
    reply = world["tools"]["slack"]["channels"]["support"]["messages"][-1]
    assert reply["from"] == "orders-bot" and "https://github.com/acme/orders/issues/14" in reply["text"]
    # The agent's "now" is the world's: the issue body carries the simulated time, never the wall clock.
    issue = trace[5]["response"]
    assert "2026-03-02 08:50 UTC" in issue["body"] and "2026-03-02T09:00:00Z" in issue["body"]
    assert "scene support-export: pass (1/1 trials passed)" in out


def test_the_sloppy_agent_fails_and_explain_cites_the_trace(capsys, agent, tmp_path):
    code, out, err = scene(capsys, "run", DEMO_SCENE, "--agent", agent.url + "sloppy", "--out", tmp_path)
    assert code == 1, out + err
    checks, trace = _trial(tmp_path)
    assert checks["outcome"] == "fail"
    status = {c["id"]: c["status"] for c in checks["checks"]}
    assert status == {
        "answered": "failed",
        "issue_filed": "failed",
        "read_the_thread": "passed",
        "no_crm_writes": "failed",
        "looked_up_plan": "passed",
    }
    by_id = {c["id"]: c for c in checks["checks"]}
    post = next(e for e in trace if e["path"] == "/api/chat.postMessage")
    note = next(e for e in trace if e["method"] == "POST" and e["tool"] == "crm")
    assert "thread_ts" not in post["request"]
    assert by_id["answered"]["evidence"] == [post["seq"]]  # its top-level answer, the closest miss
    assert "top-level message" in by_id["answered"]["actual"]
    assert by_id["no_crm_writes"]["evidence"] == [note["seq"]]
    filed = next(e for e in trace if e["path"] == "/repos/acme/orders/issues")
    assert (
        "closest: #14" in by_id["issue_filed"]["actual"]
        and "it has no label bug" in by_id["issue_filed"]["actual"]
    )
    assert by_id["issue_filed"]["evidence"] == [filed["seq"]], "the unlabelled issue it filed"

    code, out, err = scene(capsys, "explain", tmp_path)
    assert code == 0, err
    assert "support-export trial 1: fail (3 failed check(s))" in out
    for failed in ("answered", "issue_filed", "no_crm_writes"):
        assert f"FAILED {failed}: " in out
    assert "read_the_thread" not in out and "looked_up_plan" not in out
    assert f"#{post['seq']} {post['at']} slack POST /api/chat.postMessage → 200" in out
    assert f"#{note['seq']} {note['at']} crm POST /crm/customers/42/notes → 200" in out
    assert f"#{filed['seq']} {filed['at']} github POST /repos/acme/orders/issues → 201" in out


@pytest.mark.parametrize(
    "scenario, path, sloppy",
    [
        ({"name": "support-export"}, "/", False),
        ({"name": "support-export"}, "/sloppy", True),
        ({"name": "support-export"}, "/agents/sloppy/?x=1", True),
        ({"name": "support-export-sloppy"}, "/", True),
        ({"name": "x", "metadata": {"demo_mode": "sloppy"}}, "/", True),
        ({"name": "x", "metadata": {"demo_mode": "careful"}}, "/sloppier", False),
    ],
)
def test_sloppy_mode_is_chosen_by_path_scenario_name_or_metadata(scenario, path, sloppy):
    assert demo_world.wants_sloppy({"scenario": scenario}, path) is sloppy


def test_without_a_slack_and_github_world_the_agent_answers_as_before(agent):
    assert demo_world.world_tools({"scenario": {"input": "hi"}}) is None
    assert demo_world.world_tools({"scenario": {"world": {"tools": {"crm": {"base_url": "x"}}}}}) is None


def test_the_readme_excerpt_is_a_scene_the_demo_agent_passes(capsys, agent, tmp_path):
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("## Scenes and worlds") :]
    excerpt = section[section.index("```yaml\n") + 8 :]
    path = tmp_path / "excerpt.yaml"
    path.write_text(excerpt[: excerpt.index("```")])
    code, out, err = scene(capsys, "run", path, "--agent", agent.url, "--out", tmp_path)
    assert code == 0, out + err
    code, out, err = scene(capsys, "run", path, "--agent", agent.url + "sloppy", "--out", tmp_path)
    assert code == 1, out + err


def test_the_reply_reports_the_calls_the_world_recorded(agent):
    loaded = load_scene(DEMO_SCENE.read_text(), str(DEMO_SCENE))
    with WorldServer() as server:
        world = server.add(World.build(loaded))
        reply = httpx.post(
            agent.url, json=agent_request(loaded, world, server.root, trial=1), timeout=60
        ).json()
    recorded = [(e["tool"], e["method"], e["path"], e["status"]) for e in world.trace.to_list()]
    assert [(e["tool"], e["method"], e["path"], e["status"]) for e in reply["trace"]] == recorded
    assert [c["name"] for c in reply["toolCalls"]][:4] == [
        "slack.auth.test",
        "slack.conversations.list",
        "slack.conversations.history",
        "slack.conversations.replies",
    ]
    assert reply["output"].startswith("Done: read the question in #support")
    assert "filed acme/orders#14 (bug): https://github.com/acme/orders/issues/14" in reply["output"]
    assert reply["messages"][-1] == {"role": "assistant", "content": reply["output"]}


def test_an_unreachable_world_is_said_in_the_output(agent):
    gone = f"http://127.0.0.1:{free_port()}/worlds/x"
    tools = {
        "slack": {"base_url": f"{gone}/slack/api/", "token": "t"},
        "github": {"base_url": f"{gone}/github/"},
    }
    body = {"protocol": "evalconsole/1", "scenario": {"name": "support-export", "world": {"tools": tools}}}
    reply = httpx.post(agent.url, json=body, timeout=60)
    assert reply.status_code == 200
    assert reply.json()["output"].startswith("Stopped: slack is unreachable")
    assert reply.json()["toolCalls"] == []
