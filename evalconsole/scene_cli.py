"""`evalconsole scene ...`: scenes played on this machine, with no console (WORLDS.md "Command line").

    evalconsole scene validate scene.yaml
    evalconsole scene run scene.yaml --agent http://127.0.0.1:8787/ [--trials 3] [--out results/]
        [--json] [--junit r.xml] [--timeout 120]
    evalconsole scene up scene.yaml [--port 8900] [--advertise-url URL]
    evalconsole scene check scene.yaml --world http://127.0.0.1:8900 --token T [--json]
    evalconsole scene explain results/

Exit codes are the CI gate's: 0 pass, 1 fail, 2 indeterminate or error, 3 the command's own error
(a bad scene, an unreachable agent or world, a bad argument). With ``--url``/``--token`` the scene
runs on a console instead (evalconsole/scene_console.py). ``judge`` checks use the console's judge
settings from the environment (``EVALCONSOLE_JUDGE_API_KEY``, ``_MODEL``, ``_BASE_URL``; see
:func:`env_judge`): no key, and they are ``skipped``; a failed model call makes the check ``error``.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
import threading
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import TYPE_CHECKING, Any

from worlds.engine.problems import SceneInvalid
from worlds.engine.scene import Scene, load_scene

# What only some subcommands use is imported where it is used (PLC0415 below): `scene run --url` needs
# the scene loader and the console client, not the world server, the evaluator or the agent protocol
# (their imports were a third of the command's start-up).
if TYPE_CHECKING:
    from worlds.engine.evaluate import Judge
    from worlds.engine.http import Response
    from worlds.engine.serve import WorldServer
    from worlds.engine.voice import Voice
    from worlds.engine.world import World

EXIT_PASS, EXIT_FAIL, EXIT_INCONCLUSIVE, EXIT_OWN = 0, 1, 2, 3
MAX_TRIALS = 10
STATE_PATH = "/scene/state"
RESET_PATH = "/scene/reset"


class SceneCliError(Exception):
    """The command's own failure: one line on stderr, exit 3."""


class AgentTimeout(Exception):
    """The agent did not answer in time: the trial ends and is an error."""


def main(args: argparse.Namespace) -> int:
    command = getattr(args, "scene_command", None)
    handlers = {"validate": _validate, "run": _run, "up": _up, "check": _check, "explain": _explain}
    if command not in handlers:
        print("evalconsole scene: give validate, run, up, check or explain", file=sys.stderr)
        return EXIT_OWN
    try:
        return handlers[command](args)
    except SceneCliError as exc:
        print(f"evalconsole scene: {exc}", file=sys.stderr)
        return EXIT_OWN


# ----------------------------------------------------------------------------- the scene


def _load(file: str) -> Scene:
    """The scene, or every problem on stderr and SceneCliError (exit 3)."""
    try:
        text = Path(file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SceneCliError(f"cannot read {file}: {getattr(exc, 'strerror', None) or exc}") from exc
    try:
        return load_scene(text, file)
    except SceneInvalid as exc:
        for line in exc.lines():
            print(line, file=sys.stderr)
        raise SceneCliError(f"{file}: {len(exc.problems)} problem(s); the scene was not run") from exc


def _validate(args: argparse.Namespace) -> int:
    scene = _load(args.file)
    print(
        f"{args.file}: ok: scene {scene.name}, {len(scene.checks)} check(s), "
        f"{len(scene.required)} required, {scene.trials} trial(s), tools: {', '.join(scene.tools) or 'none'}"
    )
    return EXIT_PASS


# ----------------------------------------------------------------------------- run


def agent_request(scene: Scene, world: World, root: str, *, trial: int) -> dict[str, Any]:
    """The exact evalconsole/1 request of one trial."""
    from agents.protocols import WIRE_PROTOCOL  # noqa: PLC0415 - see the imports

    return {
        "protocol": WIRE_PROTOCOL,
        "run": f"scene-{scene.name}",
        "sample": f"trial-{trial}",
        "attempt": 1,
        "scenario": {
            "name": scene.name,
            "input": scene.task,
            "messages": [{"role": "user", "content": scene.task}],
            "metadata": {},
            "world": world.for_agent(root),
        },
    }


def call_agent(url: str, body: dict[str, Any], timeout: float) -> tuple[str | None, str]:
    """(output, "") or (None, why the trial errored). An unreachable agent is the command's error
    (SceneCliError); a timeout is :class:`AgentTimeout`."""
    import httpx  # noqa: PLC0415 - see the imports

    from agents.protocols import USER_AGENT  # noqa: PLC0415

    try:
        response = httpx.post(
            url, json=body, timeout=timeout, headers={"User-Agent": USER_AGENT, "Accept": "application/json"}
        )
    except (httpx.ConnectError, httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
        raise SceneCliError(f"the agent at {url} is unreachable ({exc})") from exc
    except httpx.TimeoutException as exc:
        raise AgentTimeout(f"the agent did not answer within {timeout:g}s") from exc
    except httpx.HTTPError as exc:
        return None, f"the agent call failed ({type(exc).__name__}: {exc})"
    if response.status_code >= 400:
        return None, f"the agent answered HTTP {response.status_code}: {response.text[:300]}"
    try:
        data = response.json()
    except ValueError:
        return None, "the agent's reply is not JSON"
    if not isinstance(data, dict) or not isinstance(data.get("output"), str):
        return None, "the agent's reply has no string 'output'"
    return data["output"], ""


def play_trial(
    scene: Scene,
    server: WorldServer,
    agent: str,
    *,
    trial: int,
    timeout: float,
    judge: Judge | None = None,
    voice: Voice | None = None,
) -> tuple[World, dict]:
    """One trial: a fresh world, one agent call, the world frozen and evaluated."""
    from worlds.engine.evaluate import evaluate  # noqa: PLC0415 - see the imports
    from worlds.engine.world import World  # noqa: PLC0415

    world = server.add(World.build(scene))
    world.voice = voice
    try:
        reason = "reply"
        try:
            _, problem = call_agent(agent, agent_request(scene, world, server.root, trial=trial), timeout)
        except AgentTimeout as exc:
            reason, problem = "timeout", str(exc)
        if problem and reason == "reply":
            reason = "error"
        with server.lock(world.id):
            world.end(reason)  # keeps "call_budget" when the budget ended it first
    finally:
        server.remove(world.id)
    result = evaluate(world, trial=trial, judge=judge)
    if problem:
        # The agent call failed: the trial is invalid (error), whatever the world shows.
        result["outcome"] = "error"
        print(f"trial {trial}: {problem}", file=sys.stderr)
    return world, result


JUDGE_DEFAULTS = {"base_url": "https://api.openai.com/v1", "model": "gpt-4o-mini"}


def _env_number(name: str, default: float, minimum: float) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SceneCliError(f"{name} takes a number, not {raw[:40]!r}") from None
    if value < minimum:
        raise SceneCliError(f"{name} takes a number of at least {minimum:g}, not {raw[:40]!r}")
    return value


def _env_client() -> tuple[Any, str] | None:
    """The console's judge client and default model from the environment (``EVALCONSOLE_JUDGE_API_KEY``,
    ``_MODEL``, ``_BASE_URL``, ``_TIMEOUT_S``, ``_RETRIES``, ``_BACKOFF_MS``; checks.judge.OpenAIJudge,
    no database, no budget). None without a key."""
    key = os.environ.get("EVALCONSOLE_JUDGE_API_KEY", "").strip()
    if not key:
        return None
    from checks.judge import OpenAIJudge

    base_url = os.environ.get("EVALCONSOLE_JUDGE_BASE_URL", "").strip() or JUDGE_DEFAULTS["base_url"]
    if not base_url.startswith(("http://", "https://")):
        raise SceneCliError(f"EVALCONSOLE_JUDGE_BASE_URL must be an http(s) URL, not {base_url[:80]!r}")
    client = OpenAIJudge(
        base_url=base_url,
        api_key=key,
        timeout_s=_env_number("EVALCONSOLE_JUDGE_TIMEOUT_S", 60, 0.001),
        retries=int(_env_number("EVALCONSOLE_JUDGE_RETRIES", 2, 0)),
        backoff_s=_env_number("EVALCONSOLE_JUDGE_BACKOFF_MS", 500, 0) / 1000,
    )
    return client, os.environ.get("EVALCONSOLE_JUDGE_MODEL", "").strip() or JUDGE_DEFAULTS["model"]


def env_judge(scene: Scene) -> Judge | None:
    """The judge of the scene's ``judge`` checks: the judge settings of the environment, the scene's
    ``judge: {model}`` first. None without a key (or without judge checks): the checks are skipped."""
    if not any(c.kind == "judge" for c in scene.checks):
        return None
    found = _env_client()
    if found is None:
        return None
    client, model = found
    from worlds.engine.evaluate import kind_judge  # noqa: PLC0415 - see the imports

    return kind_judge(client, model=scene.judge_model, task=scene.task, settings={"judge_model": model})


def env_voice(scene: Scene) -> Voice | None:
    """The voice of the scene's people with ``voice: llm`` (WORLDS.md "People"), through the same judge
    settings; None without a key or without such a person (their replies are then the ``says`` texts)."""
    if not any(p.voice == "llm" for p in scene.people.values()):
        return None
    found = _env_client()
    if found is None:
        return None
    client, model = found
    from worlds.engine.voice import voice_from_client  # noqa: PLC0415 - see the imports

    return voice_from_client(client, scene.judge_model or model)


def _dump(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def write_trial(out: Path, world: World, result: dict[str, Any]) -> Path:
    folder = out / world.scene.name / f"trial-{result['trial']}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "checks.json").write_text(_dump(result), encoding="utf-8")
    (folder / "trace.json").write_text(_dump(world.trace.to_list()), encoding="utf-8")
    (folder / "events.json").write_text(_dump(world.events.to_list()), encoding="utf-8")
    (folder / "world.json").write_text(_dump(world.final_state()), encoding="utf-8")
    return folder


def run_result(scene: Scene, results: list[dict[str, Any]]) -> str:
    """DESIGN.md "Outcomes" over the trials, with the scene's pass_rate and min_valid."""
    from runs.outcomes import SampleRecord, ScenarioSpec, summarise_run  # noqa: PLC0415 - see the imports

    spec = ScenarioSpec(min_valid=scene.min_valid, required_pass_rate=scene.pass_rate)
    summary = summarise_run([SampleRecord(0, r["outcome"]) for r in results], [spec])
    return str(summary.result)


def exit_code(result: str) -> int:
    return {"pass": EXIT_PASS, "fail": EXIT_FAIL}.get(result, EXIT_INCONCLUSIVE)


def summary_lines(result: dict[str, Any]) -> list[str]:
    lines = [f"trial {result['trial']}: {result['outcome']}"]
    for item in result["checks"]:
        mark = "" if item["required"] else " (advisory)"
        lines.append(f"  {item['status'].upper():8} {item['id']}{mark}: {item['explanation']}")
    return lines


def junit_xml(scene: Scene, results: list[dict[str, Any]]) -> ET.ElementTree:
    cases = [(r, c) for r in results for c in r["checks"]]
    suite = ET.Element(
        "testsuite",
        name=scene.name,
        tests=str(len(cases)),
        failures=str(sum(c["status"] == "failed" for _, c in cases)),
        errors=str(sum(c["status"] == "error" for _, c in cases)),
        skipped=str(sum(c["status"] == "skipped" for _, c in cases)),
    )
    for result, item in cases:
        case = ET.SubElement(
            suite, "testcase", classname=f"{scene.name}.trial-{result['trial']}", name=item["id"]
        )
        tag = {"failed": "failure", "error": "error", "skipped": "skipped"}.get(item["status"])
        if tag:
            ET.SubElement(case, tag, message=item["explanation"]).text = item["explanation"]
    root = ET.Element("testsuites", name=f"scene {scene.name}")
    root.append(suite)
    return ET.ElementTree(root)


def _run(args: argparse.Namespace) -> int:
    scene = _load(args.file)
    trials = scene.trials if args.trials is None else args.trials
    if not 1 <= trials <= MAX_TRIALS:
        raise SceneCliError(f"--trials takes 1..{MAX_TRIALS}, not {trials}")
    if args.timeout <= 0:
        raise SceneCliError("--timeout takes a positive number of seconds")
    out = Path(args.out)
    if args.url or (os.environ.get("EVALCONSOLE_URL") and not args.agent.startswith(("http://", "https://"))):
        return _finish(args, scene, *_on_console(args, scene, trials))
    judge = env_judge(scene)
    if judge is None and any(c.kind == "judge" for c in scene.checks):
        print(
            "evalconsole scene: no judge key (EVALCONSOLE_JUDGE_API_KEY): judge checks are skipped",
            file=sys.stderr,
        )
    voice = env_voice(scene)
    results = []
    from worlds.engine.serve import WorldServer  # noqa: PLC0415 - see the imports

    with WorldServer() as server:
        for trial in range(1, trials + 1):
            world, result = play_trial(
                scene, server, args.agent, trial=trial, timeout=args.timeout, judge=judge, voice=voice
            )
            try:
                write_trial(out, world, result)
            except OSError as exc:
                raise SceneCliError(f"cannot write results under {out}: {exc.strerror or exc}") from exc
            results.append(result)
    return _finish(args, scene, run_result(scene, results), results)


def _on_console(args: argparse.Namespace, scene: Scene, trials: int) -> tuple[str, list[dict[str, Any]]]:
    from evalconsole import cli
    from evalconsole.scene_console import run_on_console

    try:
        return run_on_console(args, scene, Path(args.file).read_text(encoding="utf-8"), trials)
    except cli.CliError as exc:
        raise SceneCliError(str(exc)) from exc


def _finish(args: argparse.Namespace, scene: Scene, overall: str, results: list[dict[str, Any]]) -> int:
    out = Path(args.out)
    code = exit_code(overall)
    if args.junit:
        try:
            junit_xml(scene, results).write(args.junit, encoding="utf-8", xml_declaration=True)
        except OSError as exc:
            raise SceneCliError(f"cannot write the JUnit report {args.junit}: {exc.strerror or exc}") from exc
    if args.json:
        print(_dump({"scene": scene.name, "result": overall, "exit_code": code, "trials": results}), end="")
    else:
        for result in results:
            print("\n".join(summary_lines(result)))
        passed = sum(r["outcome"] == "pass" for r in results)
        print(
            f"scene {scene.name}: {overall} ({passed}/{len(results)} trials passed); "
            f"results in {out / scene.name}"
        )
    return code


# ----------------------------------------------------------------------------- up and check


class LiveScene:
    """`scene up`'s one world: a stable id and credentials across resets, and the state endpoint."""

    def __init__(self, scene: Scene, server: WorldServer, token: str) -> None:
        from worlds.engine.world import World  # noqa: PLC0415 - see the imports

        self.scene, self.server, self.token = scene, server, token
        self.voice = env_voice(scene)
        first = World.build(scene)
        first.voice = self.voice
        self.world_id, self.credentials = first.id, first.credentials
        self.world = server.add(first)

    def reset(self) -> None:
        from worlds.engine.world import World  # noqa: PLC0415 - see the imports

        with self.server.lock(self.world_id):
            self.world = World.build(self.scene, self.world_id, self.credentials)
            self.world.voice = self.voice
            self.server.worlds[self.world_id] = self.world

    def answer(self, method: str, path: str, headers: dict[str, str], body: bytes) -> Response | None:
        from worlds.engine.http import Response  # noqa: PLC0415 - see the imports

        if path not in (STATE_PATH, RESET_PATH):
            return None
        given = {k.lower(): v for k, v in headers.items()}.get("authorization", "")
        if not secrets.compare_digest(given.encode(), f"Bearer {self.token}".encode()):
            return Response(401, {"message": "a Bearer token is required (scene up printed it)"})
        if path == RESET_PATH:
            if method != "POST":
                return Response(405, {"message": "POST to reset"})
            self.reset()
            return Response(200, {"reset": True, "world": self.world_id})
        if method != "GET":
            return Response(405, {"message": "GET the state"})
        with self.server.lock(self.world_id):
            return Response(
                200,
                {
                    "snapshot": self.world.snapshot(),
                    "final_state": self.world.final_state(),
                    "trace": self.world.trace.to_list(),
                    "events": self.world.events.to_list(),
                },
            )


def _up(args: argparse.Namespace) -> int:
    from worlds.engine.serve import WorldServer  # noqa: PLC0415 - see the imports

    scene = _load(args.file)
    try:
        server = WorldServer(args.host, args.port)
    except OSError as exc:
        raise SceneCliError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from exc
    token = args.token or secrets.token_urlsafe(24)
    live = LiveScene(scene, server, token)
    server.extra = live.answer
    root = (args.advertise_url or server.root).rstrip("/")
    print(f"scene {scene.name}: a live world at {server.root}", flush=True)
    for tool, info in live.world.tools_for_agent(root).items():
        print(f"  {tool}: {info['base_url']}")
    print(f"state: GET {server.root}{STATE_PATH}  reset: POST {server.root}{RESET_PATH}  (or r + Enter)")
    print(f"token: {token}")
    print(f"check: evalconsole scene check {args.file} --world {server.root} --token {token}")
    print("the evalconsole/1 request an agent would receive:")
    print(_dump(agent_request(scene, live.world, root, trial=1)), end="", flush=True)

    def keys() -> None:
        for line in sys.stdin:
            if line.strip().lower() == "r":
                live.reset()
                print("the world was reset", flush=True)

    threading.Thread(target=keys, daemon=True).start()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server._httpd.server_close()
    return EXIT_PASS


def _check(args: argparse.Namespace) -> int:
    import httpx  # noqa: PLC0415 - see the imports

    from worlds.engine.evaluate import evaluate  # noqa: PLC0415
    from worlds.engine.world import World  # noqa: PLC0415

    scene = _load(args.file)
    url = args.world.rstrip("/") + STATE_PATH
    token = args.token or os.environ.get("EVALCONSOLE_SCENE_TOKEN", "")
    if not token:
        raise SceneCliError(
            "no state token: pass --token (scene up printed it) or set EVALCONSOLE_SCENE_TOKEN"
        )
    try:
        response = httpx.get(url, headers={"Authorization": f"Bearer {token}"}, timeout=30)
    except httpx.HTTPError as exc:
        raise SceneCliError(f"cannot reach the world at {args.world} ({exc})") from exc
    if response.status_code != 200:
        raise SceneCliError(f"the world answered HTTP {response.status_code}: {response.text[:300]}")
    try:
        snapshot = response.json()["snapshot"]
        if snapshot.get("scene") != scene.name:
            raise SceneCliError(f"the world plays scene {snapshot.get('scene')!r}, not {scene.name!r}")
        world = World.restore(scene, snapshot)
    except (ValueError, KeyError, TypeError) as exc:
        raise SceneCliError(f"the world's state is not a snapshot this scene can read ({exc})") from exc
    result = evaluate(world, judge=env_judge(scene))
    code = exit_code(result["outcome"])
    if args.json:
        print(_dump(result), end="")
    else:
        print("\n".join(summary_lines(result)))
    return code


# ----------------------------------------------------------------------------- explain


def _explain(args: argparse.Namespace) -> int:
    from worlds.engine.timeline import timeline  # noqa: PLC0415 - see the imports

    root = Path(args.dir)
    files = sorted(root.rglob("checks.json"), key=lambda p: (p.parent.parent.name, _trial_no(p.parent.name)))
    if not files:
        raise SceneCliError(f"no checks.json under {root}")
    for file in files:
        try:
            result = json.loads(file.read_text(encoding="utf-8"))
            trace_file = file.parent / "trace.json"
            trace = json.loads(trace_file.read_text(encoding="utf-8")) if trace_file.exists() else []
            events_file = file.parent / "events.json"
            events = json.loads(events_file.read_text(encoding="utf-8")) if events_file.exists() else []
        except (OSError, ValueError) as exc:
            raise SceneCliError(f"cannot read {file}: {exc}") from exc
        by_seq = {e.get("seq"): e for e in trace}
        failed = [c for c in result.get("checks", []) if c.get("status") in ("failed", "error")]
        print(
            f"{result.get('scene')} trial {result.get('trial')}: {result.get('outcome')}"
            f" ({len(failed)} failed check(s))"
        )
        for item in failed:
            mark = "" if item.get("required") else " (advisory)"
            print(f"  {item['status'].upper()} {item['id']}{mark}: {item.get('explanation', '')}")
            for seq in item.get("evidence", []):
                entry = by_seq.get(seq)
                if entry is None:
                    print(f"    #{seq} (not in trace.json)")
                    continue
                flags = [f for f in ("coverage_gap",) if entry.get(f)]
                if entry.get("slack_ok") is False:
                    flags.append("ok: false")
                if entry.get("graphql_errors_only"):
                    flags.append("graphql errors only")
                extra = f" [{', '.join(flags)}]" if flags else ""
                print(
                    f"    #{seq} {entry.get('at', '')} {entry.get('tool', '')} "
                    f"{entry.get('method')} {entry.get('path')} → {entry.get('status')}{extra}"
                )
        if events:
            print("  timeline:")
            for row in timeline(e for e in events if isinstance(e, dict)):
                print(f"    {row['time']}  {row['line']}")
    return EXIT_PASS


def _trial_no(name: str) -> int:
    _, _, number = name.partition("-")
    return int(number) if number.isdigit() else 0
