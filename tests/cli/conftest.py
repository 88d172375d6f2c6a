"""What the CLI scene tests share: the demo agent on a loopback port, and a scene run whose trial files
they read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents import demo_agent
from evalconsole import cli


@pytest.fixture(scope="module")
def agent():
    with demo_agent.DemoAgent(token="") as running:  # a free loopback port
        yield running


@pytest.fixture
def run_scene(capsys):
    """`run_scene(path, out, url, "checks", "events")`: `evalconsole scene run` of the scene file against
    the agent at `url`, writing under `out`; gives the exit code, then the named JSON files of its first
    trial (the scene files here are named after their scene)."""

    def run(path: Path, out: Path, url: str, *names: str) -> tuple:
        code = cli.main(["scene", "run", str(path), "--agent", url, "--out", str(out)])
        capsys.readouterr()
        folder = out / path.stem / "trial-1"
        return (code, *(json.loads((folder / f"{name}.json").read_text()) for name in names))

    return run
