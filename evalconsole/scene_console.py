"""`evalconsole scene run FILE --url URL --token T --agent ID`: run a scene on a console instead of
on this machine, and download the results into the same OUT layout.

Over the REST API, with the CI gate's client (evalconsole.cli.Client): the scene is put in the
agent's library (a new version only when the file changed), a test named after the scene in the test
set ``evalconsole scene run`` plays it with one sample per trial, a run is launched and waited for,
and each sample's files are written to ``OUT/<scene>/trial-<n>/``: ``checks.json`` (the scene's checks),
``trace.json``, ``events.json`` and ``world.json`` (the final state), read from the sample's world
(``GET /api/v1/runs/{id}/samples/{sample}/world/``), the same shapes ``scene run`` writes on this machine.
The exit code is the run's result, as for a run on this machine.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from evalconsole import cli
from worlds.engine.scene import Scene

TEST_SET = "evalconsole scene run"
POLL_S = 1.0  # the longest pause between two reads of the run
MIN_POLL_S = 0.1  # the shortest
DOWNLOADS = 4  # samples' world files read at once


class Pace:
    """The pause before the next read of the run (``cli.wait``'s ``poll``): about half the time its
    samples still need, judged by how fast they finished so far and how long ago one last finished
    (before the first finishes, a sixth of the time waited), within MIN_POLL_S..POLL_S. A run's end is
    seen within ~0.1 s without reading a long run every 0.1 s."""

    def __init__(self) -> None:
        self.done, self.since = 0, 0.0  # samples done at the last read, and when that count was first seen

    def __call__(self, runs: list[dict], elapsed: float) -> float:
        run = runs[0] if runs else {}
        done, total = int(run.get("done_samples") or 0), int(run.get("total_samples") or 0)
        if done != self.done:
            self.done, self.since = done, elapsed
        if not done:
            guess = elapsed / 6
        else:
            left = self.since / done * max(0, total - done) - (elapsed - self.since)
            guess = left / 2
        return min(POLL_S, max(MIN_POLL_S, guess))


def _one(client: cli.Client, path: str, **match: Any) -> dict | None:
    page = client.request("GET", path, retries=3)
    for item in page.get("results", []) if isinstance(page, dict) else []:
        if all(item.get(k) == v for k, v in match.items()):
            return item
    return None


def _agent_id(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise cli.CliError(
            f"with --url, --agent is the agent's id in the console (a number), not {value!r}"
        ) from None


def _write(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _world_files(client: cli.Client, run_id: int, sample: dict) -> dict:
    """The sample's trace, events and final state (``GET runs/{id}/samples/{sample}/world/``); {} for a
    sample that never got a world (its agent call failed before the world started)."""
    if not sample.get("world"):
        return {}
    return client.request("GET", f"/api/v1/runs/{run_id}/samples/{sample['id']}/world/", retries=3)


def run_on_console(args: argparse.Namespace, scene: Scene, text: str, trials: int) -> tuple[str, list[dict]]:
    """(the run's result, per trial the checks.json it wrote)."""
    url = args.url or os.environ.get("EVALCONSOLE_URL", "")
    token = args.token or os.environ.get("EVALCONSOLE_TOKEN", "")
    if not token:
        raise cli.CliError("give --token (or EVALCONSOLE_TOKEN): an API token of the console")
    agent = _agent_id(args.agent)
    client = cli.Client.create(url, token)
    try:
        return _run(client, args, scene, text, trials, agent)
    finally:
        client.close()


def _run(
    client: cli.Client, args, scene: Scene, text: str, trials: int, agent: int
) -> tuple[str, list[dict]]:
    found = _one(client, f"/api/v1/scenes/?agent={agent}&page_size=200", name=scene.name)
    if found is None:
        stored = client.request("POST", "/api/v1/scenes/", body={"agent": agent, "source": text})
    else:
        stored = client.request("PATCH", f"/api/v1/scenes/{found['id']}/", body={"source": text})
    test_set = _one(client, f"/api/v1/test-sets/?agent={agent}&page_size=200", name=TEST_SET)
    if test_set is None:
        test_set = client.request("POST", "/api/v1/test-sets/", body={"agent": agent, "name": TEST_SET})
    rate = max(1, min(100, round(scene.pass_rate)))
    fields = {
        "scenes": [stored["id"]],
        "samples_per_scenario": trials,
        "min_valid_per_scenario": min(scene.min_valid, trials),
        "required_pass_rate": rate,
    }
    test = _one(client, f"/api/v1/tests/?test_set={test_set['id']}&page_size=200", name=scene.name)
    if test is None:
        test = client.request(
            "POST", "/api/v1/tests/", body={"test_set": test_set["id"], "name": scene.name, **fields}
        )
    else:
        test = client.request("PATCH", f"/api/v1/tests/{test['id']}/", body=fields)
    runs = cli.launch(client, tests=[test["id"]], test_set=None, additional=[])
    progress = (lambda line: None) if args.json else (lambda line: print(line, file=sys.stderr))
    out = Path(args.out) / scene.name
    results = []
    with ThreadPoolExecutor(max_workers=DOWNLOADS) as pool:
        reads = _WorldReads(client, runs[0]["id"], pool)
        try:
            (run,) = cli.wait(
                client, runs, timeout=args.timeout * trials + 60, poll=reads.pause, progress=progress
            )
            samples = sorted(cli.fetch_samples(client, run["id"]), key=lambda s: s.get("sample_index", 0))
            # Written in trial order; a failed read raises when its trial's turn comes, as before.
            pending = [reads.read(sample) for sample in samples]
            for sample, read in zip(samples, pending, strict=True):
                results.append(_write_trial(out, scene, sample, read.result() if read else {}))
        except BaseException:
            pool.shutdown(cancel_futures=True)
            raise
    return cli.run_outcome(run), results


class _WorldReads:
    """The samples' world files (``_world_files``), read a few at once and as soon as each sample has
    finished (its world has ended and no longer changes) while the run goes on, so that little is left
    to read once it ends. A read is keyed by the world's id: a sample run again has a new world."""

    def __init__(self, client: cli.Client, run_id: int, pool: ThreadPoolExecutor) -> None:
        self.client, self.run_id, self.pool = client, run_id, pool
        self.pace = Pace()
        self.done = 0
        self.reads: dict[str, Future] = {}

    def pause(self, runs: list[dict], elapsed: float) -> float:
        """``cli.wait``'s ``poll``: start the reads of newly finished samples, then Pace's pause."""
        run = runs[0] if runs else {}
        done = int(run.get("done_samples") or 0)
        if done > self.done and run.get("status") not in cli.FINISHED:
            self.done = done
            try:
                finished = cli.fetch_samples(self.client, self.run_id)
            except cli.CliError:
                finished = []  # read again once the run ends, where a failure is the command's error
            for sample in finished:
                if sample.get("finished_at"):
                    self.read(sample)
        return self.pace(runs, elapsed)

    def read(self, sample: dict) -> Future | None:
        """The read of this sample's world files (started now unless it is under way or done); None for
        a sample without a world."""
        world = sample.get("world")
        if not world:
            return None
        read = self.reads.get(world)
        if read is None or (read.done() and read.exception() is not None):
            read = self.reads[world] = self.pool.submit(_world_files, self.client, self.run_id, sample)
        return read


def _write_trial(out: Path, scene: Scene, sample: dict, files: dict) -> dict:
    """Write one trial's four files; its checks.json."""
    trial = int(sample.get("sample_index", 0)) + 1
    result = {
        "scene": scene.name,
        "trial": trial,
        "outcome": sample.get("outcome") or "error",
        "checks": sample.get("world_checks") or [],
    }
    folder = out / f"trial-{trial}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _write(folder / "checks.json", result)
        _write(folder / "trace.json", files.get("trace") or sample.get("trace") or [])
        _write(folder / "events.json", files.get("events") or [])
        _write(folder / "world.json", files.get("final_state") or {})
    except OSError as exc:
        raise cli.CliError(f"cannot write results under {out}: {exc.strerror or exc}") from exc
    return result
