#!/usr/bin/env python
"""Benchmark worlds: building one, answering tool calls, and a 10-trial ``scene run``.

  build   World.build(parsed scene) of a 200-record scene (Slack users/channels/messages, a GitHub
          repo with commits, issues and pulls), median and p95 over many builds; load_scene (parse +
          validate) timed apart, for information.
  calls   the server side of tool calls to a world that accumulates a trace of ``--calls`` calls
          (a mix: chat.postMessage, conversations.history, GET issues, POST issue; with ``--mix
          incident`` a 200-record Datadog/PagerDuty/Okta scene and GET monitors, POST downtime,
          GET incidents, PUT incident, search users, a lifecycle change), p50/p95 in ms,
          overall and by trace length:
            engine   WorldServer.answer (the standalone server's work, no socket)
            service  worlds.services.call_world (row lock, the kept world or a restore, call, save)
            wsgi     the console's WSGI app, called in-process with a real WSGI environ
                     (middleware, URL routing, the /worlds/ view, call_world)
          service and wsgi run on the database of --database-url (default: a fresh SQLite file).
  breakdown  one call_world on a kept world split into its steps (the engine call; the fingerprints
          of the tools it touched, the pieces of state that changed and the CallWrite;
          worlds.callstore.store: encoding and the one round trip) at trace length 1 and 100, for
          each kind of call of the mix (``--mix``: reads and writes);
          and a call to a world this process does not keep (restored from the database).
  run     ``evalconsole scene run`` (a subprocess) of a 10-trial scene against a scripted agent that
          makes 20 calls 50 ms apart per trial (1 s of its own time a trial): wall time / agent time.
  console the same 10 trials IN THE CONSOLE: a throwaway SQLite database (EVALCONSOLE_VAR_DIR in a
          temp dir; --database-url for PostgreSQL), gunicorn as `make up` serves it (one process,
          gthread, 16 threads; --server runserver for ``manage.py runserver``) on a free port
          (EVALCONSOLE_WORLDS_URL points at it) and one ``manage.py qcluster`` worker, a team/admin/token
          and an agent at the same
          scripted agent (max_concurrency --max-concurrency, default 10 as a new agent), then
          ``evalconsole scene run FILE --url --token --agent ID --trials 10`` (a subprocess: scene,
          test set, test with samples_per_scenario=10, launch, wait): its wall time, and the run's
          created_at -> finished_at, against the agent's own time.
          run and console take --code DIR (measure another checkout's CLI, server and worker with this
          script: before/after in one sitting) and run it from bytecode (--no-bytecode: from source).

  PYTHONPATH=$PWD .venv/bin/python bench/worlds/bench_worlds.py build
  PYTHONPATH=$PWD .venv/bin/python bench/worlds/bench_worlds.py calls
  PYTHONPATH=$PWD .venv/bin/python bench/worlds/bench_worlds.py calls --database-url "$PG"
  PYTHONPATH=$PWD .venv/bin/python bench/worlds/bench_worlds.py calls --mix incident [--database-url "$PG"]
  PYTHONPATH=$PWD .venv/bin/python bench/worlds/bench_worlds.py breakdown [--mix incident] [--database-url U]
  PYTHONPATH=$PWD .venv/bin/python bench/worlds/bench_worlds.py run
  PYTHONPATH=$PWD .venv/bin/python bench/worlds/bench_worlds.py console [--max-concurrency 1]
  PYTHONPATH=$PWD .venv/bin/python bench/worlds/bench_worlds.py console --code /tmp/base
  (and --database-url "$PG" for PostgreSQL)

Timings are wall clock (time.perf_counter); the machine is shared, so compare figures taken in one
sitting. See bench/README.md "Worlds" for recorded figures.
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def log(*args: object) -> None:
    print(*args, file=sys.stderr, flush=True)


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


# --------------------------------------------------------------------------- the scene


def _scene(name: str, task: str, trials: int, world: dict[str, Any], checks: list[Any]) -> dict[str, Any]:
    """The scene file around a benchmark's world and checks."""
    return {"scene": name, "task": task, "trials": trials, "world": world, "checks": checks}


def scene_dict(*, trials: int = 1) -> dict[str, Any]:
    """A scene with exactly 200 records: Slack 10 users + 10 channels + 80 messages, GitHub 5 users
    + 1 repo + 20 commits + 60 issues + 14 pulls (commits count as records, as the validator counts)."""
    users = {
        f"su{i}": {"name": f"user{i}", "real_name": f"User {i}", "email": f"user{i}@acme.example"}
        for i in range(10)
    }
    users["su0"]["bot"] = True
    members = [f"$su{i}" for i in range(10)]
    channels = {f"sc{i}": {"name": f"chan-{i}", "members": members, "topic": f"topic {i}"} for i in range(10)}
    messages: dict[str, Any] = {}
    for i in range(80):
        msg = {
            "channel": f"$sc{i % 10}",
            "from": f"$su{1 + i % 9}",
            "at": f"-{200 - i}m",
            "text": f"message {i}: the export for workspace {i} is slow again, can someone look?",
        }
        if i >= 10 and i % 3 == 0:
            msg["in_thread_of"] = f"$sm{i - 10}"  # same channel, earlier
        messages[f"sm{i}"] = msg
    gh_users = {f"gu{i}": {"login": f"dev{i}"} for i in range(5)}
    gh_users["gu0"]["bot"] = True
    commits: dict[str, Any] = {}
    for i in range(20):
        commit: dict[str, Any] = {
            "message": f"change {i}",
            "files": {f"src/mod{i % 7}.py": f"VALUE = {i}\n" * 20, "README.md": f"# orders\nrev {i}\n"},
        }
        if i:
            commit["parent"] = f"$gc{i - 1 if i < 15 else 10}"  # a main line and a side branch
        commits[f"gc{i}"] = commit
    branches = {"main": "$gc14", **{f"feature-{j}": f"$gc{15 + j % 5}" for j in range(14)}}
    repo = {
        "name": "acme/orders",
        "default_branch": "main",
        "collaborators": {"$gu0": "write", "$gu1": "admin"},
        "commits": commits,
        "branches": branches,
        "production": "$gc14",
    }
    issues = {
        f"gi{i}": {
            "repo": "$gr",
            "number": 100 + i,
            "title": f"Issue {i}: exports slow for workspace {i}",
            "body": "Since Monday the CSV export takes minutes. " * 3,
            "labels": ["bug", "perf"] if i % 2 else ["question"],
            "state": "open" if i % 4 else "closed",
            "author": f"$gu{1 + i % 4}",
            "assignees": [f"$gu{1 + i % 4}"],
        }
        for i in range(60)
    }
    pulls = {
        f"gp{j}": {
            "repo": "$gr",
            "number": 200 + j,
            "head": f"feature-{j}",
            "base": "main",
            "title": f"Feature {j}",
            "author": f"$gu{1 + j % 4}",
            "body": "Adds a thing.",
        }
        for j in range(14)
    }
    world = {
        "slack": {"users": users, "channels": channels, "messages": messages},
        "github": {"users": gh_users, "repos": {"gr": repo}, "issues": issues, "pulls": pulls},
    }
    checks = [
        {"id": "posted", "state": {"slack.message": {"channel": "$sc0", "from": "$su0"}}},
        {"id": "listed", "trace": {"called": "GET /repos/acme/orders/issues"}},
    ]
    return _scene("bench-200", "Answer the question in #chan-0 and file an issue.", trials, world, checks)


def incident_scene_dict(*, trials: int = 1) -> dict[str, Any]:
    """The incident tools' scene, exactly 200 records: Datadog 40 monitors + 10 dashboards + 30 events
    + 30 logs, PagerDuty 10 users + 3 escalation policies + 10 services + 2 schedules + 25 incidents,
    Okta 40 users."""
    monitors = {
        f"dm{i}": {
            "name": f"service {i} 5xx",
            "state": "Alert" if i % 5 == 0 else "OK",
            "type": "metric alert",
            "query": f"sum(last_5m):sum:svc{i}.5xx{{env:prod}}.as_count() > 10",
            "tags": [f"service:svc{i}", "env:prod"],
        }
        for i in range(40)
    }
    dashboards = {
        f"dd{i}": {"title": f"Service {i}", "text": "Requests, errors, latency."} for i in range(10)
    }
    events = {
        f"de{i}": {"title": f"deploy {i}", "text": f"svc{i % 10} deployed", "at": f"-{60 - i}m"}
        for i in range(30)
    }
    logs = {
        f"dl{i}": {
            "text": f"GET /orders/{i} 500",
            "at": f"-{30 - i}m",
            "service": f"svc{i % 10}",
            "status": "error",
        }
        for i in range(30)
    }
    pd_users = {f"pu{i}": {"name": f"Person {i}", "email": f"p{i}@acme.example"} for i in range(10)}
    pd_users["pu0"]["bot"] = True
    policies = {
        f"pe{j}": {"name": f"policy {j}", "rules": [[f"$pu{1 + j}"], [f"$pu{4 + j}"]]} for j in range(3)
    }
    services = {f"ps{i}": {"name": f"svc{i}", "escalation_policy": f"$pe{i % 3}"} for i in range(10)}
    schedules = {
        f"pc{j}": {"name": f"on call {j}", "users": [f"$pu{1 + j}", f"$pu{5 + j}"]} for j in range(2)
    }
    incidents = {
        f"pi{i}": {
            "service": f"$ps{i % 10}",
            "title": f"svc{i % 10} errors ({i})",
            "status": ("triggered", "acknowledged", "resolved")[i % 3],
            "created": f"-{90 - i}m",
            "assigned_to": [f"$pu{1 + i % 9}"],
        }
        for i in range(25)
    }
    okta_users = {
        f"ou{i}": {
            "login": f"user{i}@acme.example",
            "email": f"user{i}@acme.example",
            "first_name": f"User{i}",
            "last_name": "Example",
            "status": "ACTIVE" if i % 4 else "SUSPENDED",
        }
        for i in range(40)
    }
    world = {
        "datadog": {"monitors": monitors, "dashboards": dashboards, "events": events, "logs": logs},
        "pagerduty": {
            "users": pd_users,
            "escalation_policies": policies,
            "services": services,
            "schedules": schedules,
            "incidents": incidents,
        },
        "okta": {"users": okta_users},
    }
    checks = [
        {"id": "ok", "state": {"datadog.monitor": "$dm0", "is": "OK"}},
        {"id": "acked", "state": {"pagerduty.incident": {"ref": "$pi0"}, "status": "acknowledged"}},
    ]
    return _scene("bench-incident-200", "Handle the incidents.", trials, world, checks)


SCENES = {"slack-github": scene_dict, "incident": incident_scene_dict}


def scene_text(*, mix: str = "slack-github", **kw: Any) -> str:
    return json.dumps(SCENES[mix](**kw), indent=1)


def record_count(scene) -> int:
    total = 0
    for records in scene.world.values():
        for rec in records.values():
            total += len(rec) if isinstance(rec, dict) else 1
    return total


# --------------------------------------------------------------------------- build


def bench_build(args: argparse.Namespace) -> dict[str, Any]:
    from worlds.engine import load_scene
    from worlds.engine.world import World

    text = scene_text()
    loads = []
    for _ in range(args.load_iterations):
        t = time.perf_counter()
        scene = load_scene(text, "bench.json")
        loads.append(time.perf_counter() - t)
    World.build(scene)  # warm imports and caches; the scene's first build is remembered
    # Interleaved: World.build(scene) (from the scene's first build) and World.build(scene,
    # cached=False) (the simulators build it afresh: every build before worlds-percall).
    builds, cpu, fresh, fresh_cpu = [], [], [], []
    for _ in range(args.iterations):
        c, t = time.process_time(), time.perf_counter()
        World.build(scene)
        builds.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
        c, t = time.process_time(), time.perf_counter()
        World.build(scene, cached=False)
        fresh.append(time.perf_counter() - t)
        fresh_cpu.append(time.process_time() - c)
    world = World.build(scene)
    snap = json.dumps(world.snapshot())
    out = {
        "records": 200,
        "scene_bytes": len(text),
        "snapshot_bytes": len(snap),
        "build_ms": {
            "p50": statistics.median(builds) * 1000,
            "p95": pct(builds, 95) * 1000,
            "min": min(builds) * 1000,
            "n": len(builds),
        },
        "build_cpu_ms": {"p50": statistics.median(cpu) * 1000, "p95": pct(cpu, 95) * 1000},
        "afresh_ms": {
            "p50": statistics.median(fresh) * 1000,
            "p95": pct(fresh, 95) * 1000,
            "min": min(fresh) * 1000,
        },
        "afresh_cpu_ms": {"p50": statistics.median(fresh_cpu) * 1000, "p95": pct(fresh_cpu, 95) * 1000},
        "load_scene_ms": {
            "p50": statistics.median(loads) * 1000,
            "p95": pct(loads, 95) * 1000,
            "n": len(loads),
        },
    }
    print(f"scene: 200 records, {len(text)} bytes of JSON; a fresh world's snapshot is {len(snap)} bytes")
    print(
        f"World.build(parsed):  p50 {out['build_ms']['p50']:.2f} ms  p95 {out['build_ms']['p95']:.2f} ms"
        f"  min {out['build_ms']['min']:.2f} ms  ({len(builds)} builds)"
    )
    print(
        f"  CPU time of the process: p50 {out['build_cpu_ms']['p50']:.2f} ms"
        f"  p95 {out['build_cpu_ms']['p95']:.2f} ms"
        "  (less moved by other jobs on a shared machine)"
    )
    print(
        f"World.build(parsed, cached=False), interleaved:  p50 {out['afresh_ms']['p50']:.2f} ms"
        f"  p95 {out['afresh_ms']['p95']:.2f} ms  min {out['afresh_ms']['min']:.2f} ms;"
        f"  CPU p50 {out['afresh_cpu_ms']['p50']:.2f} ms  p95 {out['afresh_cpu_ms']['p95']:.2f} ms"
    )
    print(
        f"load_scene (info):    p50 {out['load_scene_ms']['p50']:.2f} ms"
        f"  p95 {out['load_scene_ms']['p95']:.2f} ms"
        f"  ({len(loads)} loads)"
    )
    if args.profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.enable()
        for _ in range(200):
            World.build(scene)
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(18)
    return out


# --------------------------------------------------------------------------- calls


def call_mix(world_tools: dict[str, dict[str, str]], i: int) -> tuple[str, str, str, dict[str, str], bytes]:
    """(tool, method, target below /worlds/<id>/<tool>, headers, body) of call number i: a cycle of
    chat.postMessage, conversations.history, GET issues, POST issue."""
    slack = {"Authorization": f"Bearer {world_tools['slack']['token']}"}
    gh = {"Authorization": f"token {world_tools['github']['token']}", "Accept": "application/vnd.github+json"}
    kind = i % 4
    if kind == 0:
        body = json.dumps({"channel": "chan-0", "text": f"looking into it ({i})"}).encode()
        return "slack", "POST", "/api/chat.postMessage", {**slack, "Content-Type": "application/json"}, body
    if kind == 1:
        return "slack", "GET", "/api/conversations.history?channel=chan-0&limit=50", slack, b""
    if kind == 2:
        return "github", "GET", "/repos/acme/orders/issues?state=open&per_page=30", gh, b""
    body = json.dumps(
        {"title": f"Exports slow ({i})", "body": "Filed by the agent.", "labels": ["bug"]}
    ).encode()
    return "github", "POST", "/repos/acme/orders/issues", {**gh, "Content-Type": "application/json"}, body


def incident_call_mix(
    world_tools: dict[str, dict[str, str]], i: int, ids: dict[str, Any]
) -> tuple[str, str, str, dict[str, str], bytes]:
    """Call number i of the incident mix: a cycle of Datadog GET monitors and POST downtime, PagerDuty
    GET triggered incidents and PUT an incident (acknowledge), Okta search users and a lifecycle change
    (suspend / unsuspend in turn)."""
    dd = world_tools["datadog"]
    dd_headers = {
        "DD-API-KEY": dd["api_key"],
        "DD-APPLICATION-KEY": dd["app_key"],
        "Accept": "application/json",
    }
    pd = {
        "Authorization": f"Token token={world_tools['pagerduty']['token']}",
        "Accept": "application/vnd.pagerduty+json;version=2",
        "From": "p1@acme.example",
    }
    okta = {"Authorization": f"SSWS {world_tools['okta']['token']}", "Accept": "application/json"}
    json_type = {"Content-Type": "application/json"}
    kind = i % 6
    if kind == 0:
        return "datadog", "GET", "/api/v1/monitor", dd_headers, b""
    if kind == 1:
        body = {
            "data": {
                "type": "downtime",
                "attributes": {
                    "monitor_identifier": {"monitor_id": ids[f"dm{i % 40}"]},
                    "scope": "*",
                    "schedule": {"end": "2026-03-02T10:00:00Z"},
                },
            }
        }
        return "datadog", "POST", "/api/v2/downtime", {**dd_headers, **json_type}, json.dumps(body).encode()
    if kind == 2:
        return "pagerduty", "GET", "/incidents?statuses%5B%5D=triggered&limit=25", pd, b""
    if kind == 3:
        body = {"incident": {"type": "incident_reference", "status": "acknowledged"}}
        target = f"/incidents/{ids[f'pi{(i // 6) % 25}']}"
        return "pagerduty", "PUT", target, {**pd, **json_type}, json.dumps(body).encode()
    if kind == 4:
        return "okta", "GET", "/api/v1/users?search=status%20eq%20%22ACTIVE%22&limit=20", okta, b""
    action = "suspend" if (i // 6) % 2 == 0 else "unsuspend"  # the same active user, in turn
    user = [n for n in range(40) if n % 4][(i // 12) % 30]
    return "okta", "POST", f"/api/v1/users/{ids[f'ou{user}']}/lifecycle/{action}", okta, b""


KINDS = ("chat.postMessage", "conversations.history", "GET issues", "POST issue")
INCIDENT_KINDS = ("GET monitors", "POST downtime", "GET incidents", "PUT incident", "GET users", "lifecycle")
MIXES = {
    "slack-github": (KINDS, lambda tools, i, ids: call_mix(tools, i)),
    "incident": (INCIDENT_KINDS, incident_call_mix),
}
MIX = "slack-github"  # set by --mix


def mixed_call(tools: dict[str, dict[str, str]], i: int, ids: dict[str, Any]):
    return MIXES[MIX][1](tools, i, ids)


def _engine_caller(scene):
    from worlds.engine.serve import WorldServer
    from worlds.engine.world import World

    server = WorldServer()  # not started: answer() is the server's work without the socket

    def new_world():
        world = server.add(World.build(scene))
        tools = {t: dict(c) for t, c in world.credentials.items()}
        ids = world.ids

        def call(i: int) -> int:
            tool, method, target, headers, body = mixed_call(tools, i, ids)
            response = server.answer(method, f"/worlds/{world.id}/{tool}{target}", headers, body)
            return response.status

        return call

    return new_world


def _django_setup(database_url: str | None, work: Path) -> str:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalconsole.settings")
    os.environ["DATABASE_URL"] = database_url or f"sqlite:///{work / 'bench.sqlite3'}"
    os.environ.setdefault("SECRET_KEY", "bench-worlds-not-secret")
    os.environ["DEBUG"] = "0"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)
    from django.db import connection

    return connection.vendor


def _scene_version():
    from bench.common import admin_and_agent
    from worlds import services

    stamp = f"{os.getpid()}-{time.time_ns()}"
    user, agent = admin_and_agent(team=f"worlds-bench-{stamp}", username=f"wb-{stamp}", agent="world-bench")
    scene = services.create_scene(agent=agent, by=user, source=scene_text(mix=MIX))
    return scene.current_version


def _service_caller(version):
    from core.crypto import decrypt_json
    from worlds import services
    from worlds.engine.http import Request

    def new_world():
        row, world = services.start_world(version=version)
        tools, ids = decrypt_json(row.secrets), world.ids

        def call(i: int) -> int:
            tool, method, target, headers, body = mixed_call(tools, i, ids)
            split = urlsplit(target)
            request = Request.make(method, split.path, split.query, headers, body)
            return services.call_world(row.id, tool, request).status

        return call

    return new_world


def _wsgi_caller(version):
    from django.core.wsgi import get_wsgi_application

    from core.crypto import decrypt_json
    from worlds import services

    app = get_wsgi_application()

    def new_world():
        row, world = services.start_world(version=version)
        tools, ids = decrypt_json(row.secrets), world.ids

        def call(i: int) -> int:
            tool, method, target, headers, body = mixed_call(tools, i, ids)
            split = urlsplit(target)
            environ = {
                "REQUEST_METHOD": method,
                "SCRIPT_NAME": "",
                "PATH_INFO": f"/worlds/{row.id}/{tool}{split.path}",
                "QUERY_STRING": split.query,
                "SERVER_NAME": "127.0.0.1",
                "SERVER_PORT": "8000",
                "REMOTE_ADDR": "127.0.0.1",
                "SERVER_PROTOCOL": "HTTP/1.1",
                "HTTP_HOST": "127.0.0.1:8000",
                "HTTP_USER_AGENT": "python-httpx/0.27",
                "HTTP_ACCEPT": "*/*",
                "CONTENT_LENGTH": str(len(body)) if body else "",
                "wsgi.version": (1, 0),
                "wsgi.url_scheme": "http",
                "wsgi.input": io.BytesIO(body),
                "wsgi.errors": sys.stderr,
                "wsgi.multithread": True,
                "wsgi.multiprocess": False,
                "wsgi.run_once": False,
            }
            for name, value in headers.items():
                key = name.upper().replace("-", "_")
                environ["CONTENT_TYPE" if key == "CONTENT_TYPE" else f"HTTP_{key}"] = value
            status: list[str] = []
            result = app(environ, lambda s, h, exc_info=None: status.append(s))
            try:
                b"".join(result)
            finally:
                getattr(result, "close", lambda: None)()
            return int(status[0].split()[0])

        return call

    return new_world


def _backend_clock():
    """On PostgreSQL on this machine, a function giving the CPU time (ns) the server process of this
    thread's connection has used so far (/proc/<pid>/schedstat); None elsewhere. A call's database
    work is then measured the way this process's is: not inflated by the machine's load."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return None

    def used() -> int:
        connection.ensure_connection()
        pid = connection.connection.info.backend_pid
        with open(f"/proc/{pid}/schedstat") as f:
            return int(f.read().split()[0])

    try:
        used()
    except OSError:  # the server runs on another machine, or its processes are not readable
        return None
    return used


def run_calls(name: str, new_world, *, worlds: int, calls: int, bucket: int, backend=None) -> dict[str, Any]:
    """``worlds`` fresh worlds, ``calls`` calls each; every call timed, grouped by trace length.
    ``backend`` (see _backend_clock) adds the database server's CPU time per call, read outside the
    timed part."""
    times: list[float] = []
    cpu: list[float] = []  # this process's CPU time per call: what the load of the machine adds is not in it
    server: list[float] = []  # the database server process's CPU time per call (PostgreSQL)
    by_bucket: dict[int, list[float]] = {}
    by_kind: dict[int, list[float]] = {}
    cpu_by_kind: dict[int, list[float]] = {}
    bad = 0
    first = new_world()
    for i in range(8):  # warm up (imports, caches, connections) on a throwaway world
        first(i)
    for _ in range(worlds):
        call = new_world()
        for i in range(calls):
            b = backend() if backend else 0
            c = time.process_time()
            t = time.perf_counter()
            status = call(i)
            dt = time.perf_counter() - t
            cpu.append(time.process_time() - c)
            if backend:
                server.append((backend() - b) / 1e9)
            if status >= 400:
                bad += 1
            times.append(dt)
            by_bucket.setdefault(i // bucket, []).append(dt)
            by_kind.setdefault(i % len(MIXES[MIX][0]), []).append(dt)
            cpu_by_kind.setdefault(i % len(MIXES[MIX][0]), []).append(cpu[-1])
    out = {
        "p50": statistics.median(times) * 1000,
        "p95": pct(times, 95) * 1000,
        "cpu_p50": statistics.median(cpu) * 1000,
        "server_cpu_p50": statistics.median(server) * 1000 if server else None,
        "server_cpu_mean": statistics.mean(server) * 1000 if server else None,
        "n": len(times),
        "errors": bad,
        "by_trace": {
            f"{b * bucket + 1}-{(b + 1) * bucket}": {
                "p50": statistics.median(v) * 1000,
                "p95": pct(v, 95) * 1000,
            }
            for b, v in sorted(by_bucket.items())
        },
        "by_kind": {MIXES[MIX][0][k]: statistics.median(v) * 1000 for k, v in sorted(by_kind.items())},
        "cpu_by_kind": {
            MIXES[MIX][0][k]: statistics.median(v) * 1000 for k, v in sorted(cpu_by_kind.items())
        },
    }
    log(f"{name}: {out['n']} calls, {bad} answered >= 400")
    return out


def print_calls(results: dict[str, dict[str, Any]]) -> None:
    for name, r in results.items():
        print(
            f"{name:>8}: p50 {r['p50']:.2f} ms  p95 {r['p95']:.2f} ms  (this process's CPU p50 "
            f"{r['cpu_p50']:.2f} ms; {r['n']} calls, {r['errors']} errors)"
        )
        if r.get("server_cpu_p50") is not None:
            print(
                f"          the database server process's CPU per call: p50 {r['server_cpu_p50']:.2f} ms, "
                f"mean {r['server_cpu_mean']:.2f} ms"
            )
        print(
            "          by trace length (p50/p95 ms): "
            + ", ".join(f"{k}: {v['p50']:.2f}/{v['p95']:.2f}" for k, v in r["by_trace"].items())
        )
        print("          by call (p50 ms): " + ", ".join(f"{k} {v:.2f}" for k, v in r["by_kind"].items()))
        print(
            "          by call, this process's CPU (p50 ms): "
            + ", ".join(f"{k} {v:.2f}" for k, v in r["cpu_by_kind"].items())
        )


def bench_calls(args: argparse.Namespace) -> dict[str, Any]:
    from worlds.engine import load_scene

    scene = load_scene(scene_text(mix=MIX), "bench.json")
    results: dict[str, Any] = {}
    which = args.only.split(",") if args.only else ["engine", "service", "wsgi"]
    if "engine" in which:
        results["engine"] = run_calls(
            "engine", _engine_caller(scene), worlds=args.worlds, calls=args.calls, bucket=args.bucket
        )
    if "service" in which or "wsgi" in which:
        with tempfile.TemporaryDirectory(prefix="bench-worlds-") as tmp:
            vendor = _django_setup(args.database_url, Path(tmp))
            results["database"] = vendor
            version = _scene_version()
            backend = _backend_clock()
            for name, maker in (("service", _service_caller), ("wsgi", _wsgi_caller)):
                if name in which:
                    results[name] = run_calls(
                        name,
                        maker(version),
                        worlds=args.worlds,
                        calls=args.calls,
                        bucket=args.bucket,
                        backend=backend,
                    )
            if args.profile:
                import cProfile
                import pstats

                call = _service_caller(version)()
                for i in range(args.calls - 20):
                    call(i)
                prof = cProfile.Profile()
                prof.enable()
                for i in range(args.calls - 20, args.calls):
                    call(i)
                prof.disable()
                log(f"profile: call_world, calls {args.calls - 19}-{args.calls} of one world")
                pstats.Stats(prof).sort_stats("tottime").print_stats(20)
                pstats.Stats(prof).sort_stats("cumtime").print_stats(25)
            from django.db import connections

            connections.close_all()
    if "database" in results:
        print(f"database: {results['database']}")
    print_calls({k: v for k, v in results.items() if isinstance(v, dict)})
    return results


def bench_breakdown(args: argparse.Namespace) -> dict[str, Any]:
    """Where one call_world goes, at a short and a long trace: the same steps as call_world (a world
    this process keeps), timed apart; and a call whose world this process does not keep (restored
    from the database: another process served the previous call)."""
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-worlds-") as tmp:
        out["database"] = _django_setup(args.database_url, Path(tmp))
        from django.db import connection, transaction

        from core.crypto import decrypt_json
        from worlds import callstore, services
        from worlds.engine.http import Request
        from worlds.models import World as WorldRow

        version = _scene_version()
        for n in (1, args.calls):
            row, world = services.start_world(version=version)
            tools, ids = decrypt_json(row.secrets), world.ids
            for i in range(n - 1):
                tool, method, target, headers, body = mixed_call(tools, i, ids)
                split = urlsplit(target)
                services.call_world(
                    row.id, tool, Request.make(method, split.path, split.query, headers, body)
                )
            names = ("call", "fingerprint + diff touched", "store (worlds.callstore)", "total")
            kinds = MIXES[MIX][0]
            for which, label in enumerate(kinds):
                parts: dict[str, list[float]] = {k: [] for k in names}
                for r in range(args.repeat):
                    # the same kind of call, as the mix makes it the r-th time round (e.g. suspend, unsuspend)
                    tool, method, target, headers, body = mixed_call(tools, which + r * len(kinds), ids)
                    split = urlsplit(target)
                    request = Request.make(method, split.path, split.query, headers, body)
                    live = services._take_live(row.id)
                    assert live is not None
                    t0 = time.perf_counter()
                    world = live.world
                    before = live.calls
                    world.call(tool, request)
                    t1 = time.perf_counter()
                    write, marks = services._call_write(row.id, live, before)
                    # the encoding of the JSON happens inside store(); time it with the statements
                    t2 = time.perf_counter()
                    assert callstore.store(write)
                    t3 = time.perf_counter()
                    services._mark_stored(live, marks)
                    live.calls = world.clock.calls
                    services._forget_history(live)
                    services._keep_live(row.id, live)
                    for k, v in zip(names, (t1 - t0, t2 - t1, t3 - t2, t3 - t0), strict=True):
                        parts[k].append(v)
                out[f"trace_{n}_{label}"] = {k: statistics.median(v) * 1000 for k, v in parts.items()}
                print(
                    f"trace ~{n} calls, {label} ({method} {split.path}), p50 ms: "
                    + ", ".join(f"{k} {statistics.median(v) * 1000:.2f}" for k, v in parts.items())
                )
            missed = []
            for _ in range(args.repeat):
                services.forget_live_worlds()
                request = Request.make(method, split.path, split.query, headers, body)
                t = time.perf_counter()
                services.call_world(row.id, tool, request)
                missed.append(time.perf_counter() - t)
            out[f"trace_{n}_not_kept"] = statistics.median(missed) * 1000
            print(
                f"trace ~{n} calls, world not kept by this process (restored): "
                f"p50 {out[f'trace_{n}_not_kept']:.2f} ms"
            )
        floor = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            with transaction.atomic():
                WorldRow.objects.filter(pk=row.id).values_list("calls", flat=True).first()
            floor.append(time.perf_counter() - t)
        out["floor_ms"] = statistics.median(floor) * 1000
        print(f"a transaction with a tiny SELECT {out['floor_ms']:.2f} ms")
        one = []
        with connection.cursor() as cursor:
            for _ in range(args.repeat):
                t = time.perf_counter()
                cursor.execute("SELECT 1")
                cursor.fetchone()
                one.append(time.perf_counter() - t)
        out["one_statement_ms"] = statistics.median(one) * 1000
        print(f"one statement (SELECT 1) under autocommit {out['one_statement_ms']:.2f} ms")
        from django.db import connections

        connections.close_all()
    return out


# --------------------------------------------------------------------------- scene run


def _twenty_calls_plan(args: argparse.Namespace, spent: list[float], statuses: list[int]):
    """The scripted agent's plan: ``args.calls`` calls ``args.gap`` s apart to the world's tools,
    registered in tests.support.world_agent.PLANS as "bench_twenty_calls"; each trial's handler time
    is appended to ``spent`` and every call's status to ``statuses``."""
    import httpx

    from tests.support.world_agent import PLANS

    def twenty_calls(tools, http: httpx.Client) -> None:
        start = time.perf_counter()
        slack = {"Authorization": f"Bearer {tools['slack']['token']}"}
        gh = {"Authorization": f"token {tools['github']['token']}"}
        for i in range(args.calls):
            time.sleep(args.gap)
            kind = i % 4
            if kind == 0:
                r = http.post(
                    tools["slack"]["base_url"] + "chat.postMessage",
                    headers=slack,
                    json={"channel": "chan-0", "text": f"on it ({i})"},
                )
            elif kind == 1:
                r = http.get(
                    tools["slack"]["base_url"] + "conversations.history",
                    headers=slack,
                    params={"channel": "chan-0", "limit": 50},
                )
            elif kind == 2:
                r = http.get(tools["github"]["base_url"] + "repos/acme/orders/issues", headers=gh)
            else:
                r = http.post(
                    tools["github"]["base_url"] + "repos/acme/orders/issues",
                    headers=gh,
                    json={"title": f"Exports slow ({i})", "body": "Filed by the agent."},
                )
            statuses.append(r.status_code)
        spent.append(time.perf_counter() - start)

    PLANS["bench_twenty_calls"] = twenty_calls


def _scene_run(scene: Path, out: Path, *options: str) -> list[str]:
    """The command line of `evalconsole scene run <scene> <options> --out <out>` in this Python."""
    return [sys.executable, "-m", "evalconsole.cli", "scene", "run", str(scene), *options, "--out", str(out)]


def bench_run(args: argparse.Namespace) -> dict[str, Any]:
    from tests.support.world_agent import WorldAgent

    spent: list[float] = []  # the agent's handler time per trial (its sleeps + its calls' round trips)
    statuses: list[int] = []
    _twenty_calls_plan(args, spent, statuses)
    own = args.calls * args.gap  # the agent's own time per trial (its sleeps)
    code = _code(args)
    with tempfile.TemporaryDirectory(prefix="bench-worlds-run-") as tmp:
        path = Path(tmp) / "bench-200.json"
        path.write_text(scene_text(trials=args.trials))
        walls = []
        env = _bytecode(args, code, {**os.environ, "PYTHONPATH": str(code)})
        with WorldAgent("bench_twenty_calls") as agent:
            for rep in range(args.repeat):
                spent.clear()
                cmd = _scene_run(path, Path(tmp) / f"results-{rep}", "--agent", agent.url)
                t = time.perf_counter()
                proc = subprocess.run(cmd, cwd=code, env=env, capture_output=True, text=True)
                wall = time.perf_counter() - t
                if proc.returncode not in (0, 1) or len(spent) != args.trials:
                    log(proc.stdout[-2000:], proc.stderr[-2000:])
                    raise SystemExit(f"scene run exited {proc.returncode}")
                walls.append((wall, sum(spent), len(spent)))
                log(
                    f"repeat {rep + 1}: wall {wall:.2f} s, agent handler time {sum(spent):.2f} s"
                    f" over {len(spent)} trials"
                )
            # the command's fixed cost (start-up, imports, load_scene): one trial of an agent that
            # makes no calls, so the ratio can be read with and without it
            empty = Path(tmp) / "empty.json"
            empty.write_text(scene_text(trials=1))
            fixed = []
            with WorldAgent("nothing") as idle:
                for rep in range(args.repeat):
                    cmd = _scene_run(empty, Path(tmp) / f"empty-{rep}", "--agent", idle.url)
                    t = time.perf_counter()
                    subprocess.run(cmd, cwd=code, env=env, capture_output=True)
                    fixed.append(time.perf_counter() - t)
    bad = sum(s >= 400 for s in statuses)
    best = min(walls)
    wall, handler, trials = best
    out = {
        "code": str(code),
        "bytecode": not args.no_bytecode,
        "trials": trials,
        "calls_per_trial": args.calls,
        "gap_ms": args.gap * 1000,
        "agent_own_s": own * trials,
        "agent_handler_s": handler,
        "wall_s": wall,
        "ratio_own": wall / (own * trials),
        "ratio_handler": wall / handler,
        "walls": [w for w, _, _ in walls],
        "fixed_s": min(fixed),
        "errors": bad,
    }
    print(
        f"scene run, {trials} trials x {args.calls} calls {args.gap * 1000:.0f} ms apart "
        f"(best of {len(walls)}: {', '.join(f'{w:.2f}' for w in out['walls'])} s)"
    )
    print(f"  wall {wall:.2f} s; agent's own time {own * trials:.2f} s -> ratio {out['ratio_own']:.2f}x")
    print(
        f"  the command's fixed cost (1 trial, agent makes no calls): {min(fixed):.2f} s; "
        f"without it the ratio is {(wall - min(fixed)) / (own * trials):.2f}x"
    )
    print(
        f"  agent handler time (sleeps + its calls' round trips) {handler:.2f} s -> wall / handler "
        f"{out['ratio_handler']:.2f}x; {bad} calls answered >= 400"
    )
    return out


# --------------------------------------------------------------------------- scene run in the console


def _code(args: argparse.Namespace) -> Path:
    """The tree whose CLI, web server and worker are measured (--code; default this one), so a
    before/after pair can alternate in one sitting with one benchmark script."""
    code = Path(getattr(args, "code", None) or ROOT).resolve()
    if not (code / "evalconsole" / "cli.py").is_file():
        raise SystemExit(f"--code {code}: not a checkout of this repository")
    return code


def _bytecode(args: argparse.Namespace, code: Path, env: dict[str, str]) -> dict[str, str]:
    """The environment of the measured processes. By default the tree's packages are compiled first and
    PYTHONDONTWRITEBYTECODE is dropped: an installed console and CLI run from bytecode (pip compiles at
    install), while a shell with PYTHONDONTWRITEBYTECODE=1 and no __pycache__ compiles every module of
    the project at each start (1-2 s of this CLI's start-up on this machine). --no-bytecode measures
    that instead (the figures recorded before 2026-12-02 "what changed" were taken so)."""
    if args.no_bytecode:
        return {**env, "PYTHONDONTWRITEBYTECODE": "1"}
    packages = [str(d) for d in sorted(code.iterdir()) if (d / "__init__.py").is_file()]
    subprocess.run([sys.executable, "-m", "compileall", "-q", *packages], cwd=code, check=True)
    return {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _web(args: argparse.Namespace, code: Path, port: int, env: dict[str, str], log_path: Path):
    """The console's web server: gunicorn as `make up` serves it (scripts/up.sh: one process, gthread,
    16 threads), or ``manage.py runserver`` (--server runserver, the earlier figures' server)."""
    from bench.common import Proc

    if args.server == "runserver":
        argv = [sys.executable, str(code / "manage.py"), "runserver", "--noreload", "--skip-checks"]
        return Proc([*argv, f"127.0.0.1:{port}"], env, log_path, "Quit the server with")
    argv = [
        sys.executable, "-m", "gunicorn", "evalconsole.wsgi:application", "--chdir", str(code),
        "--bind", f"127.0.0.1:{port}", "--workers", "1", "--worker-class", "gthread", "--threads", "16",
        "--graceful-timeout", "5", "--timeout", "120", "--log-level", "info",
    ]  # fmt: skip
    return Proc(argv, env, log_path, "Booting worker")


def _warm(url: str) -> None:
    """Until the web process answers (gunicorn loads the application on its first request)."""
    import httpx

    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.get(url + "/api/v1/", timeout=30)
            return
        except httpx.HTTPError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def bench_console(args: argparse.Namespace) -> dict[str, Any]:
    from bench.common import Proc, free_port
    from tests.support.world_agent import WorldAgent

    spent: list[float] = []
    statuses: list[int] = []
    _twenty_calls_plan(args, spent, statuses)
    own = args.calls * args.gap
    code = _code(args)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="bench-worlds-console-") as tmp:
        work = Path(tmp)
        env = {
            **os.environ,
            "PYTHONPATH": str(code),
            "PYTHONUNBUFFERED": "1",
            "DJANGO_SETTINGS_MODULE": "evalconsole.settings",
            "EVALCONSOLE_VAR_DIR": str(work / "var"),  # the database: var/evalconsole.sqlite3
            "EVALCONSOLE_WORLDS_URL": url,
            "SECRET_KEY": os.environ.get("SECRET_KEY", "bench-worlds-not-secret"),
            "DEBUG": "0",
            "Q_LOG_LEVEL": "INFO",  # the worker's "running." line is how it is known to be up
        }
        for name in ("DATABASE_URL", "EVALCONSOLE_TEST_Q_SYNC"):
            env.pop(name, None)
        if args.database_url:
            env["DATABASE_URL"] = args.database_url
        env = _bytecode(args, code, env)
        subprocess.run(
            [sys.executable, str(code / "manage.py"), "migrate", "--no-input", "-v", "0"],
            cwd=code,
            env=env,
            check=True,
        )
        os.environ.clear()
        os.environ.update(env)
        import django

        django.setup()
        from django.db import connection

        from bench.common import admin_and_agent
        from runs.models import Run
        from teams.services import issue_token

        path = work / "bench-200.json"
        path.write_text(scene_text(trials=args.trials))
        walls: list[dict[str, Any]] = []
        with WorldAgent("bench_twenty_calls") as scripted:
            user, agent = admin_and_agent(
                team=f"worlds-console-bench-{port}",
                username=f"wcb{port}",
                agent="scripted",
                max_concurrency=args.max_concurrency,
            )
            agent.endpoint_url = scripted.url
            agent.save(update_fields=["endpoint_url"])
            token = issue_token(user=user, name="bench").secret
            connection.close()
            web = _web(args, code, port, env, work / "web.log")
            try:
                worker = Proc(
                    [sys.executable, str(code / "manage.py"), "qcluster", "--skip-checks"],
                    env,
                    work / "qcluster.log",
                    "running.",
                )
                _warm(url)
            except BaseException:
                web.stop()  # not left behind when the worker does not come up
                raise
            try:
                for rep in range(args.repeat):
                    spent.clear()
                    console = ("--url", url, "--token", token, "--agent", str(agent.pk))
                    cmd = _scene_run(path, work / f"results-{rep}", *console, "--trials", str(args.trials))
                    began = time.time()
                    t = time.perf_counter()
                    proc = subprocess.run(cmd, cwd=code, env=env, capture_output=True, text=True)
                    wall = time.perf_counter() - t
                    ended = time.time()
                    run = Run.objects.order_by("-pk").first()
                    connection.close()
                    if proc.returncode not in (0, 1) or run is None or run.status != "completed":
                        log(proc.stdout[-2000:], proc.stderr[-3000:])
                        raise SystemExit(f"scene run exited {proc.returncode}")
                    samples = list(run.samples.all())
                    starts = sorted(s.started_at for s in samples if s.started_at)
                    ends = [s.finished_at for s in samples if s.finished_at]
                    events = sorted([(x, 1) for x in starts] + [(x, -1) for x in ends])
                    level = peak = 0
                    for _, d in events:
                        level += d
                        peak = max(peak, level)
                    figure = {
                        "wall_s": wall,
                        "run_s": (run.finished_at - run.created_at).total_seconds(),
                        # the CLI's own parts: start-up to the launch, and the run's end to its exit
                        "before_launch_s": run.created_at.timestamp() - began,
                        "after_finish_s": ended - run.finished_at.timestamp(),
                        "queue_s": (run.started_at - run.created_at).total_seconds()
                        if run.started_at
                        else None,
                        "handler_s": sum(spent),
                        "trials": len(spent),
                        "samples": len(samples),
                        "peak_in_flight": peak,
                        "result": run.result,
                    }
                    walls.append(figure)
                    log(
                        f"repeat {rep + 1}: wall {wall:.2f} s (CLI), of it start-up to launch "
                        f"{figure['before_launch_s']:.2f} s, run created->finished {figure['run_s']:.2f} s, "
                        f"finished->exit {figure['after_finish_s']:.2f} s; agent handler {sum(spent):.2f} s "
                        f"over {len(spent)} trials, peak samples in flight {peak}, result {run.result}"
                    )
            finally:
                worker.stop()
                web.stop()
    best = min(walls, key=lambda f: f["wall_s"])
    trials = best["trials"]
    agent_own = own * trials
    out = {
        "database": "postgresql" if args.database_url else "sqlite",
        "server": args.server,
        "code": str(code),
        "bytecode": not args.no_bytecode,
        "max_concurrency": args.max_concurrency,
        "trials": trials,
        "calls_per_trial": args.calls,
        "gap_ms": args.gap * 1000,
        "agent_own_s": agent_own,
        "best": best,
        "repeats": walls,
        "ratio_wall_own": best["wall_s"] / agent_own,
        "ratio_run_own": best["run_s"] / agent_own,
        "ratio_wall_handler": best["wall_s"] / best["handler_s"],
        "errors": sum(s >= 400 for s in statuses),
    }
    print(
        f"console scene run ({out['database']}, {args.server} + 1 qcluster worker, agent max_concurrency "
        f"{args.max_concurrency}), {trials} trials x {args.calls} calls {args.gap * 1000:.0f} ms apart; "
        f"best of {len(walls)}: CLI walls {', '.join(f'{f["wall_s"]:.2f}' for f in walls)} s"
    )
    print(
        f"  CLI wall {best['wall_s']:.2f} s; run created->finished {best['run_s']:.2f} s; "
        f"agent's own time {agent_own:.2f} s (sequential sum) -> {out['ratio_wall_own']:.2f}x (CLI), "
        f"{out['ratio_run_own']:.2f}x (run)"
    )
    print(
        f"  agent handler time (sleeps + round trips, summed) {best['handler_s']:.2f} s -> wall / handler "
        f"{out['ratio_wall_handler']:.2f}x; peak samples in flight {best['peak_in_flight']}; "
        f"{out['errors']} calls answered >= 400"
    )
    return out


# --------------------------------------------------------------------------- main


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="what", required=True)
    b = sub.add_parser("build")
    b.add_argument("--iterations", type=int, default=500)
    b.add_argument("--load-iterations", type=int, default=30)
    b.add_argument("--profile", action="store_true")
    c = sub.add_parser("calls")
    c.add_argument("--database-url", default=None, help="default: a fresh SQLite file in a temp dir")
    c.add_argument("--worlds", type=int, default=3)
    c.add_argument("--calls", type=int, default=100, help="calls per world (its trace grows to this)")
    c.add_argument("--bucket", type=int, default=25, help="trace-length bucket for the growth figures")
    c.add_argument("--only", default="", help="engine,service,wsgi (default: all)")
    c.add_argument("--profile", action="store_true", help="cProfile the last 20 calls through call_world")
    c.add_argument(
        "--mix",
        choices=sorted(MIXES),
        default="slack-github",
        help="the scene and call cycle: Slack + GitHub, or the incident tools (Datadog, PagerDuty, Okta)",
    )
    d = sub.add_parser("breakdown", help="where one call_world goes, at trace length 1 and --calls")
    d.add_argument("--database-url", default=None)
    d.add_argument("--calls", type=int, default=100)
    d.add_argument("--repeat", type=int, default=15)
    d.add_argument("--mix", choices=sorted(MIXES), default="slack-github")
    r = sub.add_parser("run")
    r.add_argument("--trials", type=int, default=10)
    r.add_argument("--calls", type=int, default=20)
    r.add_argument("--gap", type=float, default=0.05, help="seconds the agent waits before each call")
    r.add_argument("--repeat", type=int, default=3)
    k = sub.add_parser("console", help="the 10-trial scene run in a real console (gunicorn + qcluster)")
    k.add_argument("--trials", type=int, default=10)
    k.add_argument("--calls", type=int, default=20)
    k.add_argument("--gap", type=float, default=0.05)
    k.add_argument("--repeat", type=int, default=3)
    k.add_argument("--max-concurrency", type=int, default=10, help="the agent's (10: a new agent's default)")
    k.add_argument("--database-url", default=None, help="default: a fresh SQLite file in a temp dir")
    k.add_argument(
        "--server",
        choices=("gunicorn", "runserver"),
        default="gunicorn",
        help="gunicorn serves as `make up` does",
    )
    for p in (r, k):
        p.add_argument(
            "--no-bytecode", action="store_true", help="run from source, without bytecode (as before)"
        )
        p.add_argument("--code", default=None, metavar="DIR", help="the checkout measured")
    for p in (b, c, d, r, k):
        p.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args()
    global MIX
    MIX = getattr(args, "mix", MIX)
    log(f"uptime: {os.popen('uptime').read().strip()}")
    gc.collect()
    modes = {
        "build": bench_build,
        "calls": bench_calls,
        "breakdown": bench_breakdown,
        "run": bench_run,
        "console": bench_console,
    }
    out = modes[args.what](args)
    log(f"uptime: {os.popen('uptime').read().strip()}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
