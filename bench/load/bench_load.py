#!/usr/bin/env python
"""Serving under load (issue 19): users reading lists while runs are launched, against the server
`make up` runs (gunicorn with threads, WhiteNoise) and real django-q2 workers, on loopback.

What it does:

  data     a fresh database (PostgreSQL: ``evalconsole_load`` next to the one in the URL; SQLite: a
           file under --work-dir) filled as bench/serving/bench_lists.py fills it (every list has 50+
           rows), plus --users members, each with an API token and a browser session, and a test of
           --samples scenarios whose agent is the fake agent (tests/support/fake_agent.py, its own
           process, answering after --latency-ms).
  server   gunicorn evalconsole.wsgi as scripts/up.sh starts it (--web-processes, gthread with
           --web-threads) and ``manage.py qcluster`` with EVALCONSOLE_WORKERS=--qcluster-workers.
  load     --users users, each asking one request per second (constant pacing: a user whose answer
           comes late asks again at once), a random pick of the 27 lists of bench_lists.py (15 API
           endpoints with the user's token, 12 pages with the user's session); plus --launches-per-s
           launches (``POST /api/v1/runs/``, 202) of the test, for --duration seconds.
  after    waits for every launched run to complete, then counts lost samples: a launched run not
           completed, or completed without all its samples finished (each sample done, with its
           check results).

Prints p50/p95/p99/max of the client-side latency (aiohttp on loopback: queueing in the server
included) for lists, pages, API lists and launches, the errors (non-2xx answers and failed
connections, by kind), the throughput, the CPU seconds the web server and the worker used, the load
average before and after, and the lost samples. ``--json FILE`` writes it all.

  PG=$(PGT_PORT=54333 bash .ci/pg-throwaway.sh start /tmp/pg-serving | tail -1)
  PYTHONPATH=$PWD .venv/bin/python bench/load/bench_load.py --database-url "$PG" --duration 600
  PYTHONPATH=$PWD .venv/bin/python bench/load/bench_load.py --database-url "$PG" --duration 60  # a try

See bench/README.md "Serving under load".
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlparse, urlunparse

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import Proc, cpu_seconds, free_port, process_tree, tree_cpu_s  # noqa: E402

PY_SPY = os.environ.get("PY_SPY", "/tmp/ruffenv/bin/py-spy")


def postmaster_pid(url: str) -> int | None:
    """The PostgreSQL server's main process, when it runs on this machine (the parent of a backend)."""
    if not url:
        return None
    import psycopg

    with psycopg.connect(url) as conn:  # read while the backend lives
        backend = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        try:
            return int(Path(f"/proc/{backend}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError):
            return None


def reaped_cpu_s(pid: int | None) -> float:
    """CPU seconds of a process, its live descendants and its children already reaped (a PostgreSQL
    backend that ended counts in its postmaster's cutime/cstime)."""
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        reaped = (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError):
        return 0.0
    return tree_cpu_s(pid) + reaped


def system_cpu_s(pid: int) -> float:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[12]) / os.sysconf(
            "SC_CLK_TCK"
        )
    except (OSError, IndexError):
        return 0.0


def client_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def cpu_snapshot(procs: dict[str, int | None]) -> dict[str, float]:
    """CPU seconds so far: each process tree in ``procs``, each gunicorn worker apart, and this process
    (the load generator)."""
    out = {
        name: reaped_cpu_s(pid) if name == "postgres" else tree_cpu_s(pid)
        for name, pid in procs.items()
        if pid
    }
    web = procs["web"]
    out["web_master"] = cpu_seconds(web) or 0.0
    out["web_sys"] = 0.0  # system CPU of the web processes: socket I/O, and futex calls when threads contend
    for pid in process_tree(web)[1:]:
        out[f"web_{pid}"] = cpu_seconds(pid) or 0.0
        out["web_sys"] += system_cpu_s(pid)
    out["client"] = client_cpu_s()
    return out


def context_switches(pids: list[int]) -> dict[str, int]:
    """Voluntary (a thread blocked: I/O, the GIL) and involuntary (preempted) context switches so far,
    summed over every thread of ``pids``."""
    out = {"voluntary": 0, "involuntary": 0}
    for pid in pids:
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                status = Path(f"/proc/{pid}/task/{tid}/status").read_text()
            except OSError:
                continue
            for line in status.splitlines():
                if line.startswith("voluntary_ctxt_switches:"):
                    out["voluntary"] += int(line.split()[1])
                elif line.startswith("nonvoluntary_ctxt_switches:"):
                    out["involuntary"] += int(line.split()[1])
    return out


def start_profiles(web_pid: int, worker_pid: int, seconds: float, out_dir: Path) -> list[subprocess.Popen]:
    """py-spy on each gunicorn worker process and each qcluster process, ``seconds`` long, sampling only
    threads that hold the GIL (``--gil``: CPU in Python, not waits) without pausing them
    (``--nonblocking``); raw collapsed stacks in ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    spies = []
    targets = [("web", pid) for pid in process_tree(web_pid)[1:]]
    targets += [("worker", pid) for pid in process_tree(worker_pid)]
    for role, pid in targets:
        argv = [PY_SPY, "record", "--pid", str(pid), "--duration", str(int(seconds)), "--format", "raw"]
        argv += ["--gil", "--nonblocking", "--rate", "100", "--output", str(out_dir / f"{role}-{pid}.txt")]
        spies.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    return spies


def prepare_database(url: str, work: Path, reuse: bool = False) -> str:
    if not url:
        path = work / "load.sqlite3"
        for suffix in ("", "-wal", "-shm") if not reuse else ():
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        return f"sqlite:///{path}"
    import psycopg

    if not reuse:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("DROP DATABASE IF EXISTS evalconsole_load WITH (FORCE)")
            conn.execute("CREATE DATABASE evalconsole_load")
    return urlunparse(urlparse(url)._replace(path="/evalconsole_load"))


def build_load_data(users: int, samples: int, agent_url: str) -> dict:
    """The lists' data (bench_lists.build), the users, and the test the launches run."""
    from django.test import Client

    from agents.services import create_agent
    from bench.common import LOOKUP_ORDER_CALLED
    from bench.serving.bench_lists import build, targets
    from checks.services import create_check, create_test, create_test_set
    from teams.models import Team
    from teams.services import add_member, get_or_create_user, issue_token

    ids = build()
    team = Team.objects.get(name="Bench team")
    admin, _ = get_or_create_user(username="bench-admin")
    agent = create_agent(team=team, by=admin, name="Load bot", endpoint_url=agent_url, retries=0)
    checks = [
        create_check(
            agent=agent, by=admin, name="Mentions EC-1042", kind="text_includes", config={"text": "EC-1042"}
        ),
        create_check(
            agent=agent, by=admin, name="Looked up the order", kind="tool_usage", config=LOOKUP_ORDER_CALLED
        ),
    ]
    test = create_test(
        test_set=create_test_set(agent=agent, by=admin, name="Load"),
        by=admin,
        name="Orders under load",
        scenarios=[f"Where is my order EC-1042? (#{i})" for i in range(samples)],
        checks=[{"check": c.pk, "required": True} for c in checks],
    )
    people = []
    for i in range(users):
        user, _ = get_or_create_user(username=f"load-user-{i:03d}")
        add_member(team=team, user=user, role="member")
        client = Client()
        client.force_login(user)
        people.append(
            {
                "token": issue_token(user=user, name="load").secret,
                "session": client.cookies["sessionid"].value,
            }
        )
    launcher = issue_token(user=admin, name="load-launcher").secret
    return {"targets": targets(ids), "people": people, "launcher": launcher, "test": test.pk}


def wait_http(url: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                if r.status < 500:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise SystemExit(f"{url} did not answer in {timeout} s")
        time.sleep(0.2)


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    values = sorted(values)
    return round(values[min(len(values) - 1, int(q * len(values)))], 1)


def summary(values: list[float]) -> dict:
    return {
        "n": len(values),
        "p50_ms": round(statistics.median(values), 1) if values else None,
        "p95_ms": pct(values, 0.95),
        "p99_ms": pct(values, 0.99),
        "max_ms": round(max(values), 1) if values else None,
    }


async def load(
    base: str,
    data: dict,
    *,
    users: int,
    launches_per_s: float,
    duration: float,
    seed: int,
    server_keep_alive: float = 2.0,
) -> dict:
    import aiohttp

    rng = random.Random(seed)
    samples: list[tuple[str, str, float, int | str]] = []  # (name, kind, ms, status or error)
    launched: list[int] = []
    late = 0
    # An idle connection is dropped here before the server drops it (gunicorn: 2 s unless --keep-alive):
    # otherwise a request sent as the server closes the connection fails (ClientOSError), a race of the
    # client's, not an error of the server's (aiohttp keeps idle connections 15 s by default).
    connector = aiohttp.TCPConnector(
        limit=0, limit_per_host=0, keepalive_timeout=max(0.5, server_keep_alive - 0.5)
    )
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(
        connector=connector, timeout=timeout, cookie_jar=aiohttp.DummyCookieJar()
    ) as http:
        start = time.monotonic()
        end = start + duration

        async def one(name: str, kind: str, method: str, path: str, headers: dict, body=None) -> dict | None:
            t = time.perf_counter()
            try:
                async with http.request(method, base + path, headers=headers, json=body) as r:
                    payload = await r.read()
                    status: int | str = r.status
            except (TimeoutError, aiohttp.ClientError) as exc:
                payload, status = b"", type(exc).__name__
            samples.append((name, kind, (time.perf_counter() - t) * 1000, status))
            if status == 202 and kind == "launch":
                return json.loads(payload)
            return None

        async def user(person: dict) -> None:
            nonlocal late
            api = {"Authorization": f"Bearer {person['token']}"}
            page = {"Cookie": f"sessionid={person['session']}"}
            at = start + rng.random()  # users spread over the first second
            while at < end:
                await asyncio.sleep(max(0.0, at - time.monotonic()))
                name, kind, path = rng.choice(data["targets"])
                await one(name, kind, "GET", path, api if kind == "api" else page)
                at += 1.0
                if time.monotonic() > at:
                    late += 1
                    at = time.monotonic()

        async def launcher() -> None:
            headers = {"Authorization": f"Bearer {data['launcher']}"}
            pending = set()
            k = 0
            while True:
                at = start + k / launches_per_s
                if at >= end:
                    break
                await asyncio.sleep(max(0.0, at - time.monotonic()))
                task = asyncio.ensure_future(
                    one("launch", "launch", "POST", "/api/v1/runs/", headers, {"test": data["test"]})
                )
                task.add_done_callback(lambda t: t.result() and launched.append(t.result()["id"]))
                pending.add(task)
                task.add_done_callback(pending.discard)
                k += 1
            if pending:
                await asyncio.wait(pending)

        jobs = [user(p) for p in data["people"][:users]]
        if launches_per_s > 0:
            jobs.append(launcher())
        await asyncio.gather(*jobs)
        elapsed = time.monotonic() - start
    return {"samples": samples, "launched": launched, "late": late, "elapsed_s": elapsed}


def lost_samples(run_ids: list[int], timeout: float) -> dict:
    """Waits for the runs to complete; counts runs not completed and samples not finished."""
    from django.db.models import Count, Q

    from runs.models import Run, Sample

    deadline = time.monotonic() + timeout
    t0 = time.monotonic()
    while Run.objects.filter(pk__in=run_ids).exclude(status=Run.Status.COMPLETED).exists():
        if time.monotonic() > deadline:
            break
        time.sleep(0.5)
    drained_s = time.monotonic() - t0
    runs = list(
        Run.objects.filter(pk__in=run_ids).annotate(
            n=Count("samples"), finished=Count("samples", filter=Q(samples__status=Sample.Status.DONE))
        )
    )
    found = {r.pk: r for r in runs}
    not_completed = [pk for pk in run_ids if pk not in found or found[pk].status != Run.Status.COMPLETED]
    short = [r.pk for r in runs if not r.n == r.finished == r.done_samples == r.total_samples]
    planned = sum(r.total_samples for r in runs)
    results: dict[str, int] = {}
    for r in runs:
        results[r.result or "none"] = results.get(r.result or "none", 0) + 1
    missing_runs = len(run_ids) - len(found)  # a 202 whose run is gone: all its samples are lost
    return {
        "runs": len(run_ids),
        "runs_found": len(found),
        "runs_not_completed": len(not_completed),
        "runs_short": len(short),
        "samples_planned": planned,
        "samples_done": sum(r.finished for r in runs),
        "samples_lost": planned - sum(r.finished for r in runs),
        "runs_missing": missing_runs,
        "results": results,
        "drain_after_load_s": round(drained_s, 1),
    }


def report(out: dict) -> str:
    lines = [f"load average before {out['loadavg_before']}, after {out['loadavg_after']}"]
    lines.append(
        f"{out['requests']} requests in {out['elapsed_s']:.0f} s ({out['requests_per_s']:.1f}/s), "
        f"{out['late']} late paces, errors {out['errors']}"
    )
    for key in ("lists", "api", "page", "launch"):
        s = out["latency"][key]
        lines.append(
            f"  {key:7} n {s['n']:6}  p50 {s['p50_ms']} ms  p95 {s['p95_ms']} ms  p99 {s['p99_ms']} ms"
            f"  max {s['max_ms']} ms"
        )
    slowest = sorted(out["per_target"].items(), key=lambda kv: -(kv[1]["p95_ms"] or 0))[:5]
    lines.append("  slowest p95: " + ", ".join(f"{k} {v['p95_ms']} ms" for k, v in slowest))
    cpu = out["cpu_s"]
    lines.append(
        "  cpu s: "
        + ", ".join(f"{k} {cpu[k]}" for k in ("web", "worker", "postgres", "agent", "client") if k in cpu)
        + " | web processes: "
        + ", ".join(f"{k[4:]} {v}" for k, v in cpu.items() if k.startswith("web_") and k != "web_sys")
        + f" (system CPU {cpu.get('web_sys', 0)} s of the web's)"
    )
    lines.append(
        "  cpu ms a request (all requests, launches included): "
        + ", ".join(f"{k} {v}" for k, v in out["cpu_ms_per_request"].items())
    )
    lines.append(f"  web context switches a request: {out['web_context_switches_per_request']}")
    lines.append(f"  runs: {json.dumps(out['runs'])}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--database-url", default="", help="PostgreSQL URL (default: a SQLite file)")
    ap.add_argument("--duration", type=float, default=600)
    ap.add_argument("--users", type=int, default=50)
    ap.add_argument("--launches-per-s", type=float, default=2.0)
    ap.add_argument("--samples", type=int, default=10, help="samples per launched run")
    ap.add_argument("--latency-ms", type=float, default=200, help="the fake agent's answer time")
    ap.add_argument("--qcluster-workers", type=int, default=4)
    ap.add_argument(
        "--web-processes", type=int, default=int(os.environ.get("EVALCONSOLE_WEB_PROCESSES", "1"))
    )
    ap.add_argument("--web-threads", type=int, default=int(os.environ.get("EVALCONSOLE_WEB_THREADS", "16")))
    ap.add_argument(
        "--keep-alive", type=int, default=0, help="gunicorn --keep-alive seconds (0: its default)"
    )
    ap.add_argument(
        "--profile",
        type=float,
        default=0,
        help="py-spy each web and worker process for this many seconds from the start of the load "
        "(raw stacks in WORK_DIR/profile; bench/load/spy_top.py sums them)",
    )
    ap.add_argument("--drain-timeout", type=float, default=900, help="seconds to wait for the launched runs")
    ap.add_argument("--seed", type=int, default=19)
    ap.add_argument("--work-dir", default=os.path.join(tempfile.gettempdir(), "bench_load"))
    ap.add_argument("--json", default="")
    ap.add_argument(
        "--reuse-data",
        action="store_true",
        help="keep the database and users of the last run with this --work-dir (its runs stay: lists "
        "count more rows), for A/B runs without building again",
    )
    a = ap.parse_args()

    work = Path(a.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    saved = work / "data.json"
    reuse = a.reuse_data and saved.exists()
    db_url = prepare_database(a.database_url, work, reuse)
    agent_port, web_port = free_port(), free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "evalconsole.settings",
        "DATABASE_URL": db_url,
        "EVALCONSOLE_VAR_DIR": str(work),
        "SECRET_KEY": os.environ.get("SECRET_KEY", "bench-load-not-secret"),
        "DEBUG": "0",
        "EVALCONSOLE_WORKERS": str(a.qcluster_workers),
        "EVALCONSOLE_MAX_SAMPLES_PER_RUN": "100",  # bench_lists' run of 50 samples
        "EVALCONSOLE_API_THROTTLE": "600/min",  # the default; each user and the launcher have a token
        "EVALCONSOLE_WORLDS_URL": f"http://127.0.0.1:{web_port}",
        "PYTHONPATH": str(ROOT),
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("EVALCONSOLE_API_PAGE_SIZE", None)
    os.environ.update(
        {k: env[k] for k in env if k.startswith(("DJANGO", "DATABASE", "EVALCONSOLE", "SECRET", "DEBUG"))}
    )
    import django

    django.setup()
    from django.core.management import call_command
    from django_q.conf import Conf

    call_command("migrate", verbosity=0, interactive=False)
    agent_url = f"http://127.0.0.1:{agent_port}/agent"
    if reuse:
        from agents.models import Agent

        data = json.loads(saved.read_text())
        Agent.objects.filter(name="Load bot").update(endpoint_url=agent_url)
        print(f"data of the last run reused ({saved})", flush=True)
    else:
        Conf.SYNC = True  # bench_lists.build launches its runs in this process
        t0 = time.perf_counter()
        data = build_load_data(a.users, a.samples, agent_url)
        Conf.SYNC = False
        saved.write_text(json.dumps(data))
        print(f"data built in {time.perf_counter() - t0:.1f} s", flush=True)
    from django.db import connections

    connections.close_all()

    procs = []
    try:
        agent = Proc(
            [
                sys.executable,
                str(ROOT / "tests/support/fake_agent.py"),
                "--port",
                str(agent_port),
                "--latency-ms",
                str(a.latency_ms),
            ],
            env,
            work / "agent.log",
            "LISTENING",
        )
        procs.append(agent)
        worker = Proc(  # at INFO the worker says "running." once it is (the web server stays at WARNING)
            [sys.executable, "manage.py", "qcluster", "--skip-checks"],
            {**env, "Q_LOG_LEVEL": "INFO"},
            work / "qcluster.log",
            "running.",
        )
        procs.append(worker)
        web = Proc(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "evalconsole.wsgi:application",
                "--bind",
                f"127.0.0.1:{web_port}",
                "--workers",
                str(a.web_processes),
                "--worker-class",
                "gthread",
                "--threads",
                str(a.web_threads),
                "--graceful-timeout",
                "5",
                "--timeout",
                "120",
                "--log-level",
                "info",
                *(["--keep-alive", str(a.keep_alive)] if a.keep_alive else []),
            ],
            env,
            work / "web.log",
            "Booting worker",
        )
        procs.append(web)
        base = f"http://127.0.0.1:{web_port}"
        wait_http(base + "/login/")
        # Every worker process of gunicorn answers each list once before the clock starts, and a few
        # launches run to the end: a qcluster process imports the run path on its first task (~1 s of CPU).
        keep_alive = a.keep_alive or 2.0
        warm = asyncio.run(
            load(
                base,
                data,
                users=min(a.users, 30),
                launches_per_s=a.launches_per_s,
                duration=3,
                seed=a.seed + 1,
                server_keep_alive=keep_alive,
            )
        )
        lost_samples(warm["launched"], 120)
        loadavg_before = [round(x, 2) for x in os.getloadavg()]
        watched = {
            "web": web.p.pid,
            "worker": worker.p.pid,
            "agent": agent.p.pid,
            "postgres": postmaster_pid(a.database_url),
        }
        spies = start_profiles(web.p.pid, worker.p.pid, a.profile, work / "profile") if a.profile else []
        cpu0 = cpu_snapshot(watched)
        switches0 = context_switches(process_tree(web.p.pid)[1:])
        print(
            f"load: {a.users} users at 1/s + {a.launches_per_s} launches/s for {a.duration:.0f} s; "
            f"load average {loadavg_before}",
            flush=True,
        )
        got = asyncio.run(
            load(
                base,
                data,
                users=a.users,
                launches_per_s=a.launches_per_s,
                duration=a.duration,
                seed=a.seed,
                server_keep_alive=keep_alive,
            )
        )
        loadavg_after = [round(x, 2) for x in os.getloadavg()]
        cpu1 = cpu_snapshot(watched)
        switches1 = context_switches(process_tree(web.p.pid)[1:])
        cpu = {k: round(cpu1[k] - cpu0[k], 2) for k in cpu0 if k in cpu1}
        for spy in spies:
            spy.wait()
        runs = lost_samples(got["launched"], a.drain_timeout)
    finally:
        for p in reversed(procs):
            p.stop()

    by_kind: dict[str, list[float]] = {"lists": [], "api": [], "page": [], "launch": []}
    errors: dict[str, int] = {}
    for name, kind, ms, status in got["samples"]:
        ok = isinstance(status, int) and status < 400
        if not ok:
            errors[f"{name} {status}"] = errors.get(f"{name} {status}", 0) + 1
        by_kind[kind].append(ms)
        if kind != "launch":
            by_kind["lists"].append(ms)
    per_target: dict[str, list[float]] = {}
    for name, _kind, ms, _status in got["samples"]:
        per_target.setdefault(name, []).append(ms)
    n = len(got["samples"])
    per_request_ms = {
        k: round(cpu[k] * 1000 / n, 2) for k in ("web", "worker", "postgres", "agent", "client") if k in cpu
    }
    out = {
        "database": "postgresql" if a.database_url else "sqlite",
        "args": vars(a),
        "loadavg_before": loadavg_before,
        "loadavg_after": loadavg_after,
        "elapsed_s": round(got["elapsed_s"], 1),
        "requests": len(got["samples"]),
        "requests_per_s": round(len(got["samples"]) / got["elapsed_s"], 1),
        "late": got["late"],
        "errors": errors,
        "error_count": sum(errors.values()),
        "latency": {k: summary(v) for k, v in by_kind.items()},
        "per_target": {k: summary(v) for k, v in sorted(per_target.items())},
        "cpu_s": cpu,
        "cpu_ms_per_request": per_request_ms,
        "web_context_switches_per_request": {
            k: round((switches1[k] - switches0[k]) / n, 1) for k in switches0
        },
        "runs": runs,
    }
    print(report(out), flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
