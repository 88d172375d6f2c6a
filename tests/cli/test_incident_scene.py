"""The incident demo scene (worlds/scenes/orders-5xx.yaml) played by the demo agent over real HTTP:
`evalconsole scene run` passes it, the sloppy mode (no rollback) fails it on fault_resolved with an
explanation that says what still does not hold, and the same calls give byte-identical checks.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalconsole import cli

REPO = Path(__file__).resolve().parents[2]
SCENE = REPO / "worlds" / "scenes" / "orders-5xx.yaml"
REQUIRED = ["acknowledged_fast", "muted_briefly", "rolled_back", "monitor_ok", "resolved_fast"]


def run(run_scene, url: str, out: Path) -> tuple[int, dict, list[dict], list[dict]]:
    return run_scene(SCENE, out, url, "checks", "trace", "events")


def test_the_demo_agent_handles_the_incident(run_scene, agent, tmp_path):
    code, checks, trace, events = run(run_scene, agent.url, tmp_path)
    assert code == 0, checks
    assert checks["outcome"] == "pass"
    assert {c["id"]: c["status"] for c in checks["checks"]} == {
        **dict.fromkeys(REQUIRED, "passed"),
        "told_eng": "passed",
        "no_history_rewrite": "passed",
    }
    assert [(e["tool"], e["method"], e["path"].split("/")[1]) for e in trace][:3] == [
        ("datadog", "GET", "api"),
        ("pagerduty", "GET", "incidents"),
        ("pagerduty", "PUT", "incidents"),
    ]
    assert all(e["status"] < 400 for e in trace), trace
    types = [e["type"] for e in events if e["type"] != "call"]
    assert types[:5] == [
        "fault_started",
        "monitor_changed",
        "incident_changed",
        "message",
        "incident_changed",
    ]
    assert "fault_resolved" in types and types.index("fault_resolved") < len(types) - 1
    by_id = {c["id"]: c for c in checks["checks"]}
    rollback_status = next(
        e["seq"] for e in trace if e["method"] == "POST" and e["path"].endswith("/statuses")
    )
    assert by_id["rolled_back"]["evidence"] == [rollback_status], "the call that made production good"


def test_forgetting_the_rollback_fails_fault_resolved_and_says_why(run_scene, agent, tmp_path):
    code, checks, trace, _ = run(run_scene, agent.url + "sloppy", tmp_path)
    assert code == 1
    assert checks["outcome"] == "fail"
    by_id = {c["id"]: c for c in checks["checks"]}
    assert by_id["rolled_back"]["status"] == "failed"
    explanation = by_id["rolled_back"]["explanation"]
    assert explanation.startswith(
        "Expected fault orders_5xx resolved by the end of the trial, but it started at "
    )
    assert "github.production {repo: github_orders, commit: c_good} does not hold" in explanation
    assert by_id["monitor_ok"]["status"] == "failed"
    assert "Alert" in by_id["monitor_ok"]["actual"]
    assert by_id["acknowledged_fast"]["status"] == "passed", "it did acknowledge"
    assert not any("deployments" in e["path"] for e in trace)


def test_the_same_calls_give_byte_identical_results(run_scene, agent, tmp_path):
    first = run(run_scene, agent.url, tmp_path / "a")
    second = run(run_scene, agent.url, tmp_path / "b")
    folder = Path("orders-5xx") / "trial-1"
    # trace.json differs only where answers hold the world's own URL (its id and port), as real APIs'
    # self links do; what is judged and what happened are byte-identical.
    for name in ("checks.json", "events.json", "world.json"):
        assert (tmp_path / "a" / folder / name).read_bytes() == (
            tmp_path / "b" / folder / name
        ).read_bytes(), name
    assert first[0] == second[0] == 0


@pytest.mark.django_db(transaction=True)
def test_on_the_console_the_incident_is_judged_as_on_loopback(
    capsys, run_scene, agent, tmp_path, live_server, settings
):
    """The same scene run by a console (each call restored from the database, the faults' progress in
    the world's row) gives the same verdicts, events and final world as the standalone run."""
    from teams.services import issue_token
    from tests import factories

    settings.EVALCONSOLE_WORLDS_URL = live_server.url
    team = factories.team()
    admin = factories.member_of(team, "admin")
    token = issue_token(user=admin, name="ci").secret
    registered = factories.agent(team, admin, endpoint_url=agent.url)
    console = ["--url", live_server.url, "--token", token, "--agent", str(registered.pk)]
    code = cli.main(["scene", "run", str(SCENE), *console, "--out", str(tmp_path / "console")])
    capsys.readouterr()
    assert code == 0
    _, local_checks, _, local_events = run(run_scene, agent.url, tmp_path / "local")
    folder = tmp_path / "console" / "orders-5xx" / "trial-1"
    assert json.loads((folder / "checks.json").read_text()) == local_checks
    assert json.loads((folder / "events.json").read_text()) == local_events
