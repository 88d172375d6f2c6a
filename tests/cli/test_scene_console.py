"""`evalconsole scene run --url --token --agent ID`: the scene runs on a console (a live server; its
runs drain inline in tests), and the results come back in the same OUT layout and exit codes."""

from __future__ import annotations

import json

import pytest

from evalconsole import cli
from tests import factories
from tests.support.scenes import broken_export
from tests.support.world_agent import WorldAgent
from worlds.models import Scene

pytestmark = pytest.mark.django_db(transaction=True)

SCENE = broken_export(scene="console-question", read_first=False)


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


def _files(folder) -> dict:
    return {
        name: json.loads((folder / f"{name}.json").read_text())
        for name in ("checks", "trace", "events", "world")
    }


def _shape(value):
    """The keys and value types of a JSON document (lists by their first item)."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(value[0])] if value else []
    return type(value).__name__


def test_the_console_run_downloads_all_four_files_shaped_as_a_local_run(console, tmp_path, capsys):
    code, _ = console("slack_answer")
    assert code == 0, capsys.readouterr()
    remote = _files(tmp_path / "out" / "console-question" / "trial-1")

    with WorldAgent("slack_answer") as agent_server:
        local_code = cli.main(
            [
                "scene",
                "run",
                str(tmp_path / "scene.yaml"),
                "--agent",
                agent_server.url,
                "--out",
                str(tmp_path / "local"),
            ]
        )
    assert local_code == 0
    local = _files(tmp_path / "local" / "console-question" / "trial-1")

    # events.json: the agent's calls and the message it posted, numbered from 1, in simulated time
    assert [e["n"] for e in remote["events"]] == list(range(1, len(remote["events"]) + 1))
    assert "call" in {e["type"] for e in remote["events"]}
    # world.json: the final state, the answer in the thread
    assert remote["world"]["scene"] == "console-question"
    assert "Exports are back." in json.dumps(remote["world"]["tools"]["slack"])
    # the same shapes as the standalone run's files (and, the world being deterministic, the same content)
    for name in ("checks", "trace", "events", "world"):
        assert _shape(remote[name]) == _shape(local[name]), name
    assert remote["events"] == local["events"]
    assert remote["world"] == local["world"]
    assert remote["trace"] == local["trace"]
    for text in map(json.dumps, remote.values()):
        assert "xoxb-" not in text, "no credential in the downloaded files"


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


def test_results_that_cannot_be_written_are_the_commands_own_error(console, tmp_path, capsys):
    (tmp_path / "out").write_text("a file where the results folder would go")
    code, _ = console("slack_answer", "--trials", "2")
    assert code == 3
    assert "cannot write results under" in capsys.readouterr().err


def test_the_wait_reads_the_run_more_often_as_its_end_nears():
    from evalconsole.scene_console import Pace

    pace = Pace()
    run = {"done_samples": 0, "total_samples": 10}
    assert pace([run], 0.0) == 0.1  # just launched: read again soon
    assert pace([run], 3.0) == pytest.approx(0.5)  # none finished yet: a sixth of the wait
    assert pace([run], 60.0) == 1.0  # never more than a second apart
    assert pace([{"done_samples": 2, "total_samples": 10}], 3.0) == 1.0  # 1.5 s a sample, 8 to go
    last = {"done_samples": 9, "total_samples": 10}
    assert pace([last], 13.5) == pytest.approx(0.75)  # the last one: half the 1.5 s it needs
    assert pace([last], 14.25) == pytest.approx(0.375)  # 0.75 s later: half of what is left
    assert pace([last], 15.0) == 0.1  # overdue: every 0.1 s
    assert pace([{"done_samples": 10, "total_samples": 10}], 15.1) == 0.1  # all done, the run not yet closed
    assert pace([{}], 2.0) == pytest.approx(2.0 / 6)


def test_finished_samples_worlds_are_read_while_the_run_goes_on():
    """The wait starts reading a finished sample's world files at once (a sample's world no longer
    changes once it finished), reads each once, and reads again a sample run again in a new world."""
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    from evalconsole.scene_console import _WorldReads

    samples = [
        {"id": 1, "sample_index": 0, "world": "w1", "finished_at": "2026-12-02T10:00:01Z"},
        {"id": 2, "sample_index": 1, "world": "w2", "finished_at": None},
    ]
    asked: list[str] = []

    def server(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.path)
        if request.url.path == "/api/v1/runs/7/samples/":
            return httpx.Response(200, json={"results": samples, "next": None})
        return httpx.Response(
            200, json={"trace": [], "events": [], "final_state": {"world": request.url.path}}
        )

    client = cli.Client.create("http://console.test", "t", transport=httpx.MockTransport(server))
    with ThreadPoolExecutor(max_workers=2) as pool:
        reads = _WorldReads(client, 7, pool)
        reads.pause([{"status": "running", "done_samples": 1, "total_samples": 2}], 1.0)
        assert reads.read(samples[0]).result()["final_state"] == {"world": "/api/v1/runs/7/samples/1/world/"}
        reads.pause([{"status": "running", "done_samples": 1, "total_samples": 2}], 1.5)  # nothing new
        assert asked == ["/api/v1/runs/7/samples/", "/api/v1/runs/7/samples/1/world/"]
        again = {**samples[0], "world": "w1-again"}  # its lease lapsed and it ran again, in a new world
        reads.read(again).result()
        assert reads.read({**samples[1], "world": None}) is None
    assert asked.count("/api/v1/runs/7/samples/1/world/") == 2


def test_a_failed_early_read_of_the_samples_does_not_end_the_wait():
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    from evalconsole.scene_console import _WorldReads

    client = cli.Client.create(
        "http://console.test", "t", transport=httpx.MockTransport(lambda request: httpx.Response(500))
    )
    with ThreadPoolExecutor(max_workers=1) as pool:
        pause = _WorldReads(client, 7, pool).pause(
            [{"status": "running", "done_samples": 1, "total_samples": 2}], 1.0
        )
    assert 0.1 <= pause <= 1.0
