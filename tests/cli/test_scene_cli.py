"""`evalconsole scene ...` with real worlds and a real scripted agent over HTTP
(tests/support/world_agent.py).
Exit codes: 0 pass, 1 fail, 2 indeterminate or error, 3 the command's own error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import httpx
import pytest

from evalconsole import cli
from tests.support.raw_server import free_port
from tests.support.world_agent import WorldAgent

REPO = Path(__file__).resolve().parents[2]

SCENES = Path(__file__).parent / "scenes"
SCENE = (SCENES / "crm-lookup.yaml").read_text()

BAD = """\
scene: bad-scene
task: x
world:
  slack:
    users:
      slack_bot: { name: bot, bot: true }
    channels:
      slack_support: { name: support, members: [$slack_bot] }
  tools:
    crm: {}
checks:
  - id: c0
    state: { slack.message: { channel: $slak_support } }
  - id: c1
    state: { slack.message: { channel: $user.slack_bot } }
  - id: c2
    within: { event: { called: "GET /crm/x" }, limit: 5 minutes }
  - id: c3
    trace: { called: "GET /crm/x" }
    colour: red
""" + "".join(f'  - {{ id: x{i}, trace: {{ called: "GET /crm/{i}" }} }}\n' for i in range(17))


@pytest.fixture
def scene_file(tmp_path):
    path = tmp_path / "scene.yaml"
    path.write_text(SCENE)
    return path


def scene(capsys, *args):
    code = cli.main(["scene", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def test_validate_ok(capsys, scene_file):
    code, out, err = scene(capsys, "validate", scene_file)
    assert code == 0, err
    assert out.count("\n") == 1 and "ok: scene crm-lookup, 3 check(s), 2 required" in out


def test_validate_lists_every_problem_on_its_line(capsys, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(BAD)
    code, out, err = scene(capsys, "validate", path)
    assert code == 3
    lines = err.splitlines()
    problems = [line.removeprefix(f"{path}:") for line in lines[:-1]]
    assert len(problems) == 5, err
    assert problems[0] == "11: checks: at most 20 checks per scene, not 21"
    assert problems[1] == "13: checks[0].state.slack.message.channel: unknown ref $slak_support"
    assert problems[2].startswith("15: checks[1].state.slack.message.channel: ") and "user" in problems[2]
    assert problems[3].startswith("17: checks[2].within.limit: '5 minutes' is not a duration")
    assert problems[4].startswith("20: checks[3].colour: unknown check kind or field")
    assert lines[-1] == f"evalconsole scene: {path}: 5 problem(s); the scene was not run"


def _checks(out: Path, trial: int = 1) -> dict:
    return json.loads((out / "crm-lookup" / f"trial-{trial}" / "checks.json").read_text())


def test_run_pass_writes_the_results(capsys, scene_file, tmp_path):
    out = tmp_path / "results"
    with WorldAgent("crm_lookup") as agent:
        code, stdout, err = scene(capsys, "run", scene_file, "--agent", agent.url, "--out", out)
    assert code == 0, stdout + err
    request = agent.requests[0]
    assert request["protocol"] == "evalconsole/1"
    assert request["scenario"]["input"] == request["scenario"]["messages"][0]["content"]
    assert set(request["scenario"]["world"]) == {"id", "now", "tools"}
    folder = out / "crm-lookup" / "trial-1"
    assert sorted(p.name for p in folder.iterdir()) == [
        "checks.json",
        "events.json",
        "trace.json",
        "world.json",
    ]
    result = _checks(out)
    assert list(result) == ["scene", "trial", "outcome", "checks"]
    assert (result["scene"], result["trial"], result["outcome"]) == ("crm-lookup", 1, "pass")
    keys = ["id", "required", "passed", "status", "expected", "actual", "explanation", "evidence", "events"]
    assert [list(c) for c in result["checks"]] == [keys] * 3
    looked, no_writes, process = result["checks"]
    assert (looked["status"], looked["evidence"], looked["required"]) == ("passed", [1], True)
    assert (no_writes["status"], no_writes["passed"]) == ("passed", True)
    assert process["status"] == "skipped" and not process["required"] and not process["passed"]
    assert process["explanation"].startswith("no judge is configured")
    text = (folder / "checks.json").read_text()
    assert request["scenario"]["world"]["id"] not in text
    trace = json.loads((folder / "trace.json").read_text())
    assert [(e["seq"], e["method"], e["path"], e["status"]) for e in trace] == [
        (1, "GET", "/crm/customers/42", 200)
    ]
    assert "PASSED   looked_up" in stdout and "scene crm-lookup: pass (1/1 trials passed)" in stdout


def test_a_write_fails_no_crm_writes_and_explain_cites_the_call(capsys, scene_file, tmp_path):
    out = tmp_path / "results"
    with WorldAgent("crm_write") as agent:
        code, stdout, err = scene(
            capsys, "run", scene_file, "--agent", agent.url, "--out", out, "--trials", 2
        )
    assert code == 1, stdout + err
    for trial in (1, 2):
        result = _checks(out, trial)
        assert result["outcome"] == "fail"
        failed = result["checks"][1]
        assert (failed["id"], failed["status"], failed["evidence"]) == ("no_crm_writes", "failed", [2])
    code, stdout, err = scene(capsys, "explain", out)
    assert code == 0, err
    assert "crm-lookup trial 1: fail (1 failed check(s))" in stdout
    assert "FAILED no_crm_writes" in stdout
    assert "#2 2026-03-02T09:00:02Z crm POST /crm/customers/42/notes → 200" in stdout
    assert "looked_up" not in stdout


def test_an_agent_that_does_nothing_fails_called(capsys, scene_file, tmp_path):
    with WorldAgent("nothing") as agent:
        code, stdout, _ = scene(capsys, "run", scene_file, "--agent", agent.url, "--out", tmp_path, "--json")
    assert code == 1
    data = json.loads(stdout)
    assert data["result"] == "fail" and data["exit_code"] == 1
    assert [c["status"] for c in data["trials"][0]["checks"]] == ["failed", "passed", "skipped"]


@pytest.mark.parametrize(
    "thresholds, plans, code, result",
    [
        ("pass_rate: 50\n", ["crm_lookup", "crm_write"], 0, "pass"),
        ("", ["crm_lookup", "crm_write"], 1, "fail"),
        ("min_valid: 2\n", ["crm_lookup", "error"], 2, "indeterminate"),
        ("", ["error"], 2, "error"),
    ],
)
def test_the_run_result_follows_the_scene_thresholds(capsys, tmp_path, thresholds, plans, code, result):
    path = tmp_path / "scene.yaml"
    path.write_text(SCENE.replace("checks:\n", f"trials: 2\n{thresholds}checks:\n", 1))
    with WorldAgent(plans) as agent:
        got, stdout, err = scene(capsys, "run", path, "--agent", agent.url, "--out", tmp_path, "--json")
    assert got == code, stdout + err
    assert json.loads(stdout)["result"] == result
    assert [r["trial"] for r in json.loads(stdout)["trials"]] == [1, 2]


def test_an_agent_error_is_exit_2(capsys, scene_file, tmp_path):
    with WorldAgent("error") as agent:
        code, _, err = scene(capsys, "run", scene_file, "--agent", agent.url, "--out", tmp_path)
    assert code == 2
    assert "HTTP 500" in err
    assert _checks(tmp_path)["outcome"] == "error"


def test_an_agent_timeout_is_exit_2_and_the_world_is_still_judged(capsys, scene_file, tmp_path):
    with WorldAgent("slow") as agent:
        code, _, err = scene(
            capsys, "run", scene_file, "--agent", agent.url, "--out", tmp_path, "--timeout", 1
        )
    assert code == 2 and "did not answer within 1s" in err
    result = _checks(tmp_path)
    assert result["outcome"] == "error"
    assert result["checks"][0]["status"] == "passed"  # the lookup made before the timeout is in the trace
    events = json.loads((tmp_path / "crm-lookup" / "trial-1" / "events.json").read_text())
    assert events[-1]["type"] == "trial_ended" and events[-1]["reason"] == "timeout"


def test_check_needs_a_token(capsys, scene_file, monkeypatch):
    monkeypatch.delenv("EVALCONSOLE_SCENE_TOKEN", raising=False)
    code, _, err = scene(capsys, "check", scene_file, "--world", "http://127.0.0.1:1")
    assert code == 3 and "no state token" in err


def test_an_unreachable_agent_is_exit_3(capsys, scene_file, tmp_path):
    code, _, err = scene(
        capsys, "run", scene_file, "--agent", f"http://127.0.0.1:{free_port()}/", "--out", tmp_path
    )
    assert code == 3 and "unreachable" in err


def test_a_bad_scene_is_never_run(capsys, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(BAD)
    code, _, err = scene(capsys, "run", path, "--agent", "http://127.0.0.1:1/", "--out", tmp_path)
    assert code == 3 and "the scene was not run" in err


def test_junit_report(capsys, scene_file, tmp_path):
    report = tmp_path / "r.xml"
    with WorldAgent("crm_write") as agent:
        code, _, _ = scene(
            capsys, "run", scene_file, "--agent", agent.url, "--out", tmp_path, "--junit", report
        )
    assert code == 1
    suite = ET.parse(report).getroot().find("testsuite")
    assert (suite.get("name"), suite.get("tests"), suite.get("failures"), suite.get("skipped")) == (
        "crm-lookup",
        "3",
        "1",
        "1",
    )
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert cases["no_crm_writes"].find("failure") is not None
    assert cases["looked_up"].find("failure") is None


def test_the_call_budget_fails_the_trial(capsys, scene_file, tmp_path):
    with WorldAgent("crm_spam") as agent:
        code, _, _ = scene(capsys, "run", scene_file, "--agent", agent.url, "--out", tmp_path)
    assert code == 1
    result = _checks(tmp_path)
    budget = result["checks"][-1]
    assert (budget["id"], budget["required"], budget["status"]) == ("call_budget", True, "failed")
    assert budget["explanation"] == "the agent made more than 500 calls"
    assert budget["evidence"] == [501]
    trace = json.loads((tmp_path / "crm-lookup" / "trial-1" / "trace.json").read_text())
    assert len(trace) == 501 and trace[-1]["status"] == 429


def test_two_runs_give_byte_identical_checks_json(capsys, scene_file, tmp_path):
    outs = [tmp_path / "a", tmp_path / "b"]
    for out in outs:
        with WorldAgent("crm_write") as agent:
            scene(capsys, "run", scene_file, "--agent", agent.url, "--out", out)
    a, b = ((o / "crm-lookup" / "trial-1" / "checks.json").read_bytes() for o in outs)
    assert a == b


def test_up_and_check(scene_file):
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    up = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "evalconsole.cli",
            "scene",
            "up",
            str(scene_file),
            "--port",
            str(port),
            "--token",
            "sekret",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        lines = []
        deadline = time.monotonic() + 30
        while not any(line.startswith("}") for line in lines) and time.monotonic() < deadline:
            line = up.stdout.readline()
            if not line:
                break
            lines.append(line)
        text = "".join(lines)
        request = json.loads(text[text.index("{\n") :])
        assert request["protocol"] == "evalconsole/1"
        base = request["scenario"]["world"]["tools"]["crm"]["base_url"]
        assert f"  crm: {base}" in text and "token: sekret" in text
        root = f"http://127.0.0.1:{port}"
        assert httpx.get(root + "/scene/state").status_code == 401

        def check() -> subprocess.CompletedProcess:
            return subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "evalconsole.cli",
                    "scene",
                    "check",
                    str(scene_file),
                    "--world",
                    root,
                    "--token",
                    "sekret",
                    "--json",
                ],
                capture_output=True,
                text=True,
                env=env,
                timeout=60,
            )

        first = check()
        assert first.returncode == 1, first.stderr
        assert json.loads(first.stdout)["checks"][0]["status"] == "failed"
        assert httpx.get(base + "crm/customers/42").status_code == 200
        second = check()
        assert second.returncode == 0, second.stdout + second.stderr
        assert json.loads(second.stdout)["checks"][0]["evidence"] == [1]
        reset = httpx.post(root + "/scene/reset", headers={"Authorization": "Bearer sekret"})
        assert reset.status_code == 200
        assert check().returncode == 1
        assert httpx.get(base + "crm/customers/42").status_code == 200  # same id and URL after a reset
    finally:
        up.terminate()
        up.wait(timeout=10)


def test_the_agent_request_carries_the_world_at_the_advertised_root(scene_file):
    from evalconsole.scene_cli import agent_request
    from worlds.engine.scene import load_scene
    from worlds.engine.world import World

    loaded = load_scene(scene_file.read_text(), str(scene_file))
    world = World.build(loaded)
    request = agent_request(loaded, world, "http://host.docker.internal:8900", trial=2)
    assert request["sample"] == "trial-2"
    assert request["scenario"]["name"] == "crm-lookup"
    assert request["scenario"]["world"] == {
        "id": world.id,
        "now": "2026-03-02T09:00:00Z",
        "tools": {"crm": {"base_url": f"http://host.docker.internal:8900/worlds/{world.id}/crm/"}},
    }
