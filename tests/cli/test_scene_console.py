"""`evalconsole scene run --url --token --agent ID`: the scene runs on a console (a live server; its
runs drain inline in tests), and the results come back in the same OUT layout and exit codes."""

from __future__ import annotations

import json

import pytest

from evalconsole import cli
from tests import factories
from tests.support.scenes import support_question
from tests.support.world_agent import WorldAgent
from worlds.models import Scene

pytestmark = pytest.mark.django_db(transaction=True)

SCENE = support_question(
    "Is the export broken?",
    scene="console-question",
    task='"Answer the question in #support in its thread."',
    read_first=False,
)


@pytest.fixture
def console(live_server, settings, team, admin_user, member, tmp_path):
    from teams.services import issue_token

    settings.EVALCONSOLE_WORLDS_URL = live_server.url
    token = issue_token(user=member, name="ci").secret
    path = tmp_path / "scene.yaml"
    path.write_text(SCENE)

    def run(plan: str, *extra: str) -> tuple[int, object]:
        with WorldAgent(plan) as agent_server:
            agent = factories.agent(team, admin_user, endpoint_url=agent_server.url)
            code = cli.main(
                [
                    "scene",
                    "run",
                    str(path),
                    "--url",
                    live_server.url,
                    "--token",
                    token,
                    "--agent",
                    str(agent.pk),
                    "--out",
                    str(tmp_path / "out"),
                    *extra,
                ]
            )
        return code, agent

    return run


def test_a_scene_run_on_the_console_passes_and_writes_the_results(console, tmp_path, capsys):
    code, agent = console("slack_answer", "--trials", "2")
    assert code == 0, capsys.readouterr()
    for trial in (1, 2):
        checks = json.loads(
            (tmp_path / "out" / "console-question" / f"trial-{trial}" / "checks.json").read_text()
        )
        assert (checks["trial"], checks["outcome"]) == (trial, "pass")
        assert [(c["id"], c["status"]) for c in checks["checks"]] == [("answered", "passed")]
        trace = json.loads(
            (tmp_path / "out" / "console-question" / f"trial-{trial}" / "trace.json").read_text()
        )
        assert trace[-1]["path"] == "/api/chat.postMessage"
    assert Scene.objects.get(agent=agent).version == 1
    assert "console-question: pass" in capsys.readouterr().out


def test_a_failing_agent_on_the_console_exits_1(console, capsys):
    code, _ = console("slack_top_level")
    assert code == 1
    assert "FAILED   answered" in capsys.readouterr().out


def test_a_wrong_agent_or_token_is_the_commands_own_error(console, live_server, tmp_path, capsys):
    path = tmp_path / "scene.yaml"
    code = cli.main(
        ["scene", "run", str(path), "--url", live_server.url, "--token", "ect_nope", "--agent", "1"]
    )
    assert code == 3
    assert "refused the token" in capsys.readouterr().err
    code = cli.main(
        ["scene", "run", str(path), "--url", live_server.url, "--token", "x", "--agent", "http://a/"]
    )
    assert code == 3
    assert "the agent's id in the console" in capsys.readouterr().err
