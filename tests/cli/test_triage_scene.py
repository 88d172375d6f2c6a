"""The people demo scene (worlds/scenes/support-triage.yaml) played by the demo agent over real HTTP:
every process check passes; the sloppy mode tells the customer the root cause and fails `never`,
citing the message; `scene explain` shows the trial's timeline."""

from __future__ import annotations

from pathlib import Path

from evalconsole import cli

REPO = Path(__file__).resolve().parents[2]
SCENE = REPO / "worlds" / "scenes" / "support-triage.yaml"


def run(run_scene, url: str, out: Path) -> tuple[int, dict, list[dict]]:
    return run_scene(SCENE, out, url, "checks", "events")


def test_the_demo_agent_asks_the_right_people_and_passes(run_scene, agent, tmp_path):
    code, checks, events = run(run_scene, agent.url, tmp_path)
    assert code == 0, checks
    assert {c["id"]: c["status"] for c in checks["checks"]} == dict.fromkeys(
        [
            "asked_laura",
            "ben_got_the_details",
            "laura_got_the_workaround",
            "priority_decided",
            "answered_in_her_thread",
            "no_root_cause_to_customer",
            "priority_before_label",
            "answered_fast",
            "fix_today",
        ],
        "passed",
    )
    decided = [(e["person"], e["decision"], e["option"]) for e in events if e["type"] == "decided"]
    assert decided == [("ben", "fix_now", "now"), ("mike", "severity", "p1")]
    assert all(e["seq"] is None for e in events if e["type"] == "message" and e.get("by")), (
        "people make no calls"
    )


def test_telling_the_customer_the_root_cause_fails_never_citing_the_message(
    capsys, run_scene, agent, tmp_path
):
    code, checks, events = run(run_scene, agent.url + "sloppy", tmp_path)
    assert code == 1
    failed = [c for c in checks["checks"] if c["status"] != "passed"]
    assert [c["id"] for c in failed] == ["no_root_cause_to_customer"]
    check = failed[0]
    told = next(e for e in events if e["n"] == check["events"][0])
    assert told["type"] == "message" and "Exports v2 drops jobs" in told["text"] and told["to"] == ["laura"]
    assert check["evidence"] == [told["seq"]]
    assert '"Thanks! The cause: Exports v2 drops jobs for beta workspa..." by orders-bot' in check["actual"]
    assert cli.main(["scene", "explain", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "FAILED no_root_cause_to_customer" in out
    assert "laura learned ben.root_cause (from agent, event" in out
    assert "mike decided severity: p1" in out
