"""`evalconsole scene run` evaluates a scene's judge checks with the console's judge settings read
from the environment, through the console's judge client, against a real loopback OpenAI-compatible
server (tests/support/fake_openai.py): pass, fail, no key (skipped), a failing model (HTTP 500, a
reply that is not JSON) and a bad setting. checks.json and the exit codes (0 pass, 1 fail, 2
indeterminate or error, 3 the command's own error) are what CI sees."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalconsole import cli
from tests.support.fake_openai import FakeOpenAI
from tests.support.scenes import broken_export
from tests.support.world_agent import WorldAgent

KEY = "sk-scene-judge-key"

SCENES = Path(__file__).parent / "scenes"
CRM = (SCENES / "crm-judged.yaml").read_text()

SLACK = broken_export(
    scene="slack-judged",
    judge_model="scene-model",
    checks='  - id: kind\n    judge: "The answer is kind."\n',
)


@pytest.fixture
def judge_env(monkeypatch):
    for name in list(os.environ):
        if name.startswith("EVALCONSOLE_JUDGE_"):
            monkeypatch.delenv(name)
    with FakeOpenAI(mode="pass", reason="It looked the plan up.") as fake:

        def use(**extra: str) -> FakeOpenAI:
            monkeypatch.setenv("EVALCONSOLE_JUDGE_API_KEY", KEY)
            monkeypatch.setenv("EVALCONSOLE_JUDGE_BASE_URL", fake.base_url)
            monkeypatch.setenv("EVALCONSOLE_JUDGE_MODEL", "judge-mini")
            monkeypatch.setenv("EVALCONSOLE_JUDGE_RETRIES", "0")
            monkeypatch.setenv("EVALCONSOLE_JUDGE_TIMEOUT_S", "5")
            for name, value in extra.items():
                monkeypatch.setenv(name, value)
            return fake

        yield use


def run(capsys, tmp_path: Path, source: str, plan: str = "crm_lookup") -> tuple[int, dict, str, str]:
    path = tmp_path / "scene.yaml"
    path.write_text(source)
    out = tmp_path / "out"
    with WorldAgent(plan) as agent:
        code = cli.main(["scene", "run", str(path), "--agent", agent.url, "--out", str(out)])
    stdout, stderr = capsys.readouterr()
    name = source.split("\n", 1)[0].split(": ", 1)[1]
    checks = json.loads((out / name / "trial-1" / "checks.json").read_text())
    return code, checks, stdout, stderr


def by_id(checks: dict) -> dict[str, dict]:
    return {c["id"]: c for c in checks["checks"]}


def test_a_passing_judge_passes_the_check_and_the_trial(capsys, tmp_path, judge_env):
    fake = judge_env()
    code, checks, stdout, stderr = run(capsys, tmp_path, CRM)
    assert code == 0, stdout + stderr
    judged = by_id(checks)["said_plan"]
    assert (judged["status"], judged["passed"], judged["required"]) == ("passed", True, True)
    assert judged["explanation"] == "It looked the plan up."
    assert checks["outcome"] == "pass"
    assert "PASSED   said_plan" in stdout
    body = fake.last_body
    assert body["model"] == "judge-mini"
    prompt = json.dumps(body["messages"])
    assert "The agent looked up the customer's plan." in prompt
    assert "/crm/customers/42" in prompt and "GET" in prompt, "the agent's calls"
    assert "looked_up" not in prompt, "never the other checks"
    assert fake.headers[-1]["authorization"] == f"Bearer {KEY}"
    assert KEY not in prompt


def test_a_failing_judge_fails_the_trial_exit_1(capsys, tmp_path, judge_env):
    judge_env().mode = "fail"
    code, checks, stdout, _ = run(capsys, tmp_path, CRM)
    assert code == 1
    assert by_id(checks)["said_plan"]["status"] == "failed"
    assert checks["outcome"] == "fail"
    assert "FAILED   said_plan" in stdout


def test_without_a_judge_key_the_check_is_skipped_exit_2(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("EVALCONSOLE_JUDGE_API_KEY", raising=False)
    code, checks, _, stderr = run(capsys, tmp_path, CRM)
    assert code == 2
    judged = by_id(checks)["said_plan"]
    assert (judged["status"], judged["passed"]) == ("skipped", False)
    assert judged["explanation"].startswith("no judge is configured")
    assert checks["outcome"] == "indeterminate"
    assert "no judge key (EVALCONSOLE_JUDGE_API_KEY): judge checks are skipped" in stderr


@pytest.mark.parametrize("mode, said", [("500", "HTTP 500"), ("garbage", "")])
def test_a_failing_model_call_is_an_error_check_and_an_error_trial_exit_2(
    capsys, tmp_path, judge_env, mode, said
):
    judge_env().mode = mode
    code, checks, stdout, _ = run(capsys, tmp_path, CRM)
    assert code == 2, stdout
    judged = by_id(checks)["said_plan"]
    assert (judged["status"], judged["passed"]) == ("error", False)
    assert judged["actual"].startswith("the judge's model call failed")
    assert said in judged["actual"]
    assert by_id(checks)["looked_up"]["status"] == "passed"
    assert checks["outcome"] == "error"
    assert "ERROR    said_plan" in stdout


def test_a_failing_model_with_a_failed_required_check_stays_a_failure_exit_1(capsys, tmp_path, judge_env):
    judge_env().mode = "500"
    code, checks, _, _ = run(capsys, tmp_path, CRM, plan="nothing")
    assert code == 1
    assert by_id(checks)["said_plan"]["status"] == "error"
    assert by_id(checks)["looked_up"]["status"] == "failed"
    assert checks["outcome"] == "fail"


def test_the_judge_sees_the_final_slack_messages_not_the_seed_and_the_scenes_model(
    capsys, tmp_path, judge_env
):
    fake = judge_env()
    code, checks, stdout, stderr = run(capsys, tmp_path, SLACK, plan="slack_answer")
    assert code == 0, stdout + stderr
    body = fake.last_body
    assert body["model"] == "scene-model", "the scene's judge: {model} wins"
    prompt = "\n".join(m["content"] for m in body["messages"])
    material = json.loads(prompt[prompt.index('{"calls"'): prompt.rindex("}") + 1])
    assert material["slack_messages"] == [
        {"conversation": "support", "from": "orders-bot", "text": "Exports are back.", "in_thread": True}
    ]
    assert [c["path"] for c in material["calls"]][-1] == "/api/chat.postMessage"
    assert "xoxb-" not in prompt and "token" not in json.dumps(material["calls"][-1]["request"])


@pytest.mark.parametrize(
    "setting, said",
    [
        ({"EVALCONSOLE_JUDGE_RETRIES": "lots"}, "EVALCONSOLE_JUDGE_RETRIES takes a number, not 'lots'"),
        ({"EVALCONSOLE_JUDGE_TIMEOUT_S": "-1"}, "EVALCONSOLE_JUDGE_TIMEOUT_S takes a number of at least"),
        ({"EVALCONSOLE_JUDGE_BASE_URL": "judge.local"}, "EVALCONSOLE_JUDGE_BASE_URL must be an http(s) URL"),
    ],
)
def test_a_bad_judge_setting_is_the_commands_own_error_naming_it(capsys, tmp_path, judge_env, setting, said):
    judge_env(**setting)
    path = tmp_path / "scene.yaml"
    path.write_text(CRM)
    code = cli.main(["scene", "run", str(path), "--agent", "http://127.0.0.1:9/", "--out", str(tmp_path)])
    assert code == 3
    assert said in capsys.readouterr().err
    assert not (tmp_path / "crm-judged").exists(), "nothing was run"


def test_the_installed_cli_judges_without_django_or_a_database(tmp_path):
    path = tmp_path / "scene.yaml"
    path.write_text(CRM)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVALCONSOLE_", "DJANGO_"))}
    with FakeOpenAI(mode="pass", reason="Fine.") as fake, WorldAgent("crm_lookup") as agent:
        env.update(
            EVALCONSOLE_JUDGE_API_KEY=KEY,
            EVALCONSOLE_JUDGE_BASE_URL=fake.base_url,
            EVALCONSOLE_JUDGE_RETRIES="0",
        )
        done = subprocess.run(
            [sys.executable, "-m", "evalconsole.cli", "scene", "run", str(path), "--agent", agent.url,
             "--out", str(tmp_path / "out")],
            capture_output=True, text=True, timeout=120, env=env,
        )
    assert done.returncode == 0, done.stdout + done.stderr
    assert fake.requests == 1 and fake.last_body["model"] == "gpt-4o-mini"
    checks = json.loads((tmp_path / "out" / "crm-judged" / "trial-1" / "checks.json").read_text())
    assert by_id(checks)["said_plan"]["status"] == "passed"
