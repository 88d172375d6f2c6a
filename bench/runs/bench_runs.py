#!/usr/bin/env python
"""Benchmark run execution end to end: launches -> real qcluster workers -> fake agent -> results.

What it measures (see bench/README.md "Run execution" for recorded figures):

  burst   R runs x S samples launched as one batch (one transaction and one enqueue, as
          POST api/v1/runs/batch/; --separate-launches: one launch_run each): wall time from the
          first launch to the last run's completion (the run's finished_at, written by the worker),
          samples/s, per-run launch->completion (median, p95), and the overhead over the physical
          limit ceil(R*S / agent cap) x latency.
  single  one S-sample run launched while the worker is idle (its drain has returned): launch ->
          completion; "warm" is the same while a drain is still lingering for new work.
  memory  every burst records the largest resident set of any process of the worker (sampled every
          50 ms): with --max-concurrency 1000, EVALCONSOLE_WORKER_CONCURRENCY=1000 and a latency of a
          few seconds, that is a worker with 1,000 calls in flight.

The agent is tests/support/fake_agent.py in its own process (every request answers after the
latency with the EC-1042 reply and a lookup_order tool call); each run has the peers-bench checks
(output includes EC-1042; lookup_order called), so every sample is evaluated and passes. The agent
row has max_concurrency 100 (the like-for-like setting for promptfoo at concurrency 100).

  .venv/bin/python bench/runs/bench_runs.py                                 # SQLite, 1 worker
  .venv/bin/python bench/runs/bench_runs.py --database-url "$PG" --workers 2   # PostgreSQL
  .venv/bin/python bench/runs/bench_runs.py --runs 100 --latencies 200 --single 0   # vs promptfoo
  EVALCONSOLE_WORKER_CONCURRENCY=1000 .venv/bin/python bench/runs/bench_runs.py --runs 100 \
      --latencies 3000 --max-concurrency 1000 --repeat 1 --single 0       # RSS at 1,000 in flight

SQLite: a fresh file under --work-dir. PostgreSQL: a fresh database ``evalconsole_bench`` is
created next to the one in the URL (the role needs CREATEDB, as the throwaway cluster's has).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlparse, urlunparse

ROOT = Path(__file__).resolve().parents[2]
FAKE_AGENT = ROOT / "tests" / "support" / "fake_agent.py"


class RssSampler:
    """The largest resident set of any process in a process tree (the worker's), sampled every 50 ms
    in a thread while it runs: ``with RssSampler(pid) as rss: ...; rss.max_mib``."""

    def __init__(self, root: int) -> None:
        import threading

        self.root, self.max_kib, self._stop = root, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _tree(self) -> list[int]:
        from bench.common import process_tree

        return process_tree(self.root)

    def _run(self) -> None:
        while not self._stop.is_set():
            for pid in self._tree():
                try:
                    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                        if line.startswith("VmRSS:"):
                            self.max_kib = max(self.max_kib, int(line.split()[1]))
                except OSError:
                    pass
            self._stop.wait(0.05)

    @property
    def max_mib(self) -> float:
        return round(self.max_kib / 1024, 1)

    def cpu_s(self) -> float:
        """CPU seconds (user + system) used so far by the live processes of the tree."""
        from bench.common import cpu_seconds

        return sum(cpu_seconds(pid) or 0.0 for pid in self._tree())

    def __enter__(self) -> RssSampler:
        self.cpu_start = self.cpu_s()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.cpu_used = self.cpu_s() - self.cpu_start


def log(*args: object) -> None:
    print(*args, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- processes (bench.common.Proc)


def http_json(url: str, method: str = "GET") -> dict:
    req = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


# --------------------------------------------------------------------------- database


def prepare_database(url: str | None, work: Path) -> str:
    if not url:
        path = work / "bench.sqlite3"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        return f"sqlite:///{path}"
    parsed = urlparse(url)
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS evalconsole_bench WITH (FORCE)")
        conn.execute("CREATE DATABASE evalconsole_bench")
    return urlunparse(parsed._replace(path="/evalconsole_bench"))


# --------------------------------------------------------------------------- the benchmark


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--database-url", default="", help="PostgreSQL URL (default: a fresh SQLite file)")
    ap.add_argument("--workers", type=int, default=1, help="qcluster worker processes")
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--samples", type=int, default=10, help="samples per run (scenarios x 1 sample)")
    ap.add_argument("--latencies", default="200,0", help="agent latencies in ms, comma separated")
    ap.add_argument("--repeat", type=int, default=3, help="burst repetitions per latency")
    ap.add_argument("--single", type=int, default=5, help="single-run repetitions per latency (0: skip)")
    ap.add_argument("--max-concurrency", type=int, default=100, help="the agent's max_concurrency")
    ap.add_argument("--work-dir", default=os.path.join(tempfile.gettempdir(), "bench_runs"))
    ap.add_argument("--out", default="", help="write the raw figures as JSON here")
    ap.add_argument(
        "--separate-launches",
        action="store_true",
        help="launch a burst's runs one by one (each its own transaction and enqueue), not as one batch",
    )
    a = ap.parse_args()

    work = Path(a.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    db_url = prepare_database(a.database_url, work)
    env = {
        **os.environ,
        "DATABASE_URL": db_url,
        "DJANGO_SETTINGS_MODULE": "evalconsole.settings",
        "EVALCONSOLE_WORKERS": str(a.workers),
        "EVALCONSOLE_MAX_BATCH_RUNS": str(max(200, a.runs)),
        "Q_LOG_LEVEL": "INFO",
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("EVALCONSOLE_TEST_Q_SYNC", None)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"], cwd=ROOT, env=env, check=True
    )
    os.environ.update(
        {k: env[k] for k in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE", "EVALCONSOLE_MAX_BATCH_RUNS")}
    )
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.conf import settings
    from django.db import connection

    from agents.models import Agent
    from bench.common import Proc, admin_and_agent, free_port
    from runs import services
    from runs.models import Run

    engine = "PostgreSQL" if connection.vendor == "postgresql" else "SQLite"
    user, agent = admin_and_agent(
        team="Bench",
        username="bench",
        agent="Fake",
        max_concurrency=min(a.max_concurrency, 200),
        timeout_s=30.0,
        retries=2,
    )
    if a.max_concurrency > 200:
        # An agent is capped at 200 calls at once; for the memory figure the row is lifted so one worker
        # holds 1,000 calls, as five agents at 200 would.
        Agent.objects.filter(pk=agent.pk).update(max_concurrency=a.max_concurrency)
    old_limit = settings.EVALCONSOLE_MAX_SAMPLES_PER_RUN
    test = orders_test(agent, user, a.samples)
    assert a.samples <= old_limit, "samples per run is over EVALCONSOLE_MAX_SAMPLES_PER_RUN"
    idle_s = settings.EVALCONSOLE_DRAIN_IDLE_MS / 1000

    worker = Proc(
        [sys.executable, "manage.py", "qcluster", "--skip-checks"],
        env,
        work / "qcluster.log",
        "running.",
        timeout=60,
    )
    results: dict = {
        "engine": engine,
        "workers": a.workers,
        "runs": a.runs,
        "samples": a.samples,
        "max_concurrency": a.max_concurrency,
        "launch": "separate" if a.separate_launches else "batch",
        "burst": [],
        "single": [],
    }

    def wait_done(ids: list[int], timeout: float = 300) -> list[Run]:
        deadline = time.monotonic() + timeout
        while Run.objects.filter(pk__in=ids, status="completed").count() < len(ids):
            if time.monotonic() > deadline:
                raise RuntimeError("runs did not complete in time")
            time.sleep(0.005)
        runs = list(Run.objects.filter(pk__in=ids))
        bad = [r.pk for r in runs if r.result != "pass"]
        if bad:
            raise RuntimeError(f"runs did not pass: {bad}")
        return runs

    try:
        for latency in [float(x) for x in a.latencies.split(",") if x.strip()]:
            port = free_port()
            fake = Proc(
                [sys.executable, str(FAKE_AGENT), "--port", str(port), "--latency-ms", str(latency)],
                env,
                work / f"agent_{int(latency)}.log",
                "LISTENING",
                timeout=60,
            )
            Agent.objects.filter(pk=agent.pk).update(endpoint_url=f"http://127.0.0.1:{port}/agent")
            try:
                wait_done([services.launch_run(test=test, by=user).pk])  # warm-up (imports, connections)
                for rep in range(a.repeat):
                    time.sleep(idle_s + 0.5)  # the worker's drain has returned: a cold start
                    http_json(f"http://127.0.0.1:{port}/stats/reset", "POST")
                    t0, t0_mono = time.time(), time.monotonic()
                    with RssSampler(worker.p.pid) as rss:
                        if a.separate_launches:  # each its own transaction and enqueue (before issue 19)
                            ids = [services.launch_run(test=test, by=user).pk for _ in range(a.runs)]
                        else:  # one batch: one transaction, one enqueue (POST api/v1/runs/batch/)
                            ids = [r.pk for r in services.launch_batch(tests=[test] * a.runs, by=user)]
                        launched = time.time() - t0
                        runs = wait_done(ids)
                    stats = http_json(f"http://127.0.0.1:{port}/stats")
                    last = max(r.finished_at.timestamp() for r in runs)
                    wall = last - t0
                    per_run = sorted(r.finished_at.timestamp() - r.created_at.timestamp() for r in runs)
                    total = a.runs * a.samples
                    cycles = math.ceil(total / a.max_concurrency)  # calls in a row per agent slot
                    ideal = cycles * latency / 1000
                    # The agent's own view (its clock is CLOCK_MONOTONIC too): its first request after the
                    # launch began, and first request -> last reply, whose excess over the ideal is what
                    # the slots lose between a reply and their next call.
                    span = stats["first_to_last_s"] or 0.0
                    row = {
                        "latency_ms": latency,
                        "rep": rep,
                        "wall_s": round(wall, 3),
                        "launch_s": round(launched, 3),
                        "samples_per_s": round(total / wall, 1),
                        "ideal_s": round(ideal, 3),
                        "overhead_s": round(wall - ideal, 3),
                        "overhead_per_run_ms": round((wall - ideal) / a.runs * 1000, 1),
                        "run_median_s": round(statistics.median(per_run), 3),
                        "run_p95_s": round(per_run[max(0, math.ceil(0.95 * len(per_run)) - 1)], 3),
                        "agent_requests": stats["requests"],
                        "agent_max_in_flight": stats["max_in_flight"],
                        "agent_first_call_ms": round((stats["first_request_t"] - t0_mono) * 1000, 1),
                        "agent_span_s": round(span, 3),
                        "gap_per_call_ms": round((span - ideal) / cycles * 1000, 1),
                        "after_last_reply_ms": round((wall - (stats["last_reply_t"] - t0_mono)) * 1000, 1),
                        "worker_max_rss_mib": rss.max_mib,  # the largest process of the worker's tree
                        "worker_cpu_ms_per_sample": round(rss.cpu_used * 1000 / total, 3),
                    }
                    results["burst"].append(row)
                    log(f"[{engine} {a.workers}w] burst {a.runs}x{a.samples} @{latency:g} ms: {row}")
                for rep in range(a.single):
                    for mode in ("cold", "warm"):
                        time.sleep(idle_s + 0.5 if mode == "cold" else 0.2)
                        t0 = time.time()
                        run = services.launch_run(test=test, by=user)
                        launched = time.time()
                        run = wait_done([run.pk])[0]
                        row = {
                            "latency_ms": latency,
                            "rep": rep,
                            "mode": mode,
                            "launch_to_done_ms": round((run.finished_at.timestamp() - t0) * 1000, 1),
                            "run_id": run.pk,
                            "t0": t0,
                            **critical_path(run, t0, launched),
                        }
                        results["single"].append(row)
                        log(f"[{engine} {a.workers}w] single @{latency:g} ms: {row}")
            finally:
                fake.stop()
        time.sleep(idle_s + 0.5)
        from django_q.models import Task

        drains = Task.objects.filter(func="runs.tasks.drain_samples", success=True).order_by("started")
        results["drains"] = [{"started": d.started.isoformat(), **(d.result or {})} for d in drains]
        starts = sorted(d.started.timestamp() for d in drains)
        for row in results["single"]:  # the drain that ran it: the last one started before its first claim
            claimed = row["t0"] + row["first_claim_ms"] / 1000
            before = [t for t in starts if t <= claimed]
            if before and before[-1] >= row["t0"]:
                row["drain_started_ms"] = round((before[-1] - row["t0"]) * 1000, 1)
        for d in results["drains"]:
            if d.get("claimed"):
                log(f"  drain {d}")
    finally:
        worker.stop()

    print(report(results))
    if a.out:
        Path(a.out).write_text(json.dumps(results, indent=2))


def orders_test(agent, user, samples: int):
    """The bench's test of ``agent``: ``samples`` scenarios asking for order EC-1042, with the peers-bench
    checks (the output includes EC-1042; lookup_order was called), both required."""
    from bench.common import LOOKUP_ORDER_CALLED, create_checks
    from checks.services import create_test, create_test_set

    checks = create_checks(
        agent,
        user,
        [
            ("Mentions EC-1042", "text_includes", {"text": "EC-1042"}),
            ("Looked up the order", "tool_usage", LOOKUP_ORDER_CALLED),
        ],
    )
    return create_test(
        test_set=create_test_set(agent=agent, by=user, name="Bench"),
        by=user,
        name="Orders",
        scenarios=[f"Where is my order EC-1042? (#{i})" for i in range(samples)],
        checks=[{"check": c.pk, "required": True} for c in checks],
    )


def critical_path(run, t0: float, launched: float) -> dict:
    """A single run's milestones in ms after the launch call began (read back from its rows):
    the launch's transaction returned, the first claim (run started), the slowest agent call, the
    last sample written, the run finalised."""
    from django.db.models import Max, Min

    from runs.models import Sample

    agg = Sample.objects.filter(run=run).aggregate(
        first=Min("started_at"), last=Max("finished_at"), slowest=Max("latency_ms")
    )

    def ms(moment) -> float:
        return round((moment.timestamp() - t0) * 1000, 1)

    return {
        "launch_returned_ms": round((launched - t0) * 1000, 1),
        "first_claim_ms": ms(run.started_at),
        "slowest_call_ms": round(agg["slowest"] or 0, 1),
        "last_written_ms": ms(agg["last"]),
        "finalised_ms": ms(run.finished_at),
    }


def _med(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values):g} ({min(values):g}–{max(values):g})"


def report(r: dict) -> str:
    lines = [
        f"### {r['engine']}, {r['workers']} worker process(es), agent max_concurrency {r['max_concurrency']}",
        "",
    ]
    lines += [
        "| load | latency ms | wall s | samples/s | ideal s | overhead per run ms | run median / p95 s "
        "| launch → agent's first call ms | slot gap per call ms | last reply → done ms "
        "| worker CPU ms/sample |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for latency in sorted({row["latency_ms"] for row in r["burst"]}, reverse=True):
        rows = [row for row in r["burst"] if row["latency_ms"] == latency]
        lines.append(
            f"| {r['runs']} runs × {r['samples']} | {latency:g} | {_med([x['wall_s'] for x in rows])} | "
            f"{_med([x['samples_per_s'] for x in rows])} | {rows[0]['ideal_s']:g} | "
            f"{_med([x['overhead_per_run_ms'] for x in rows])} | "
            f"{statistics.median([x['run_median_s'] for x in rows]):g} / "
            f"{statistics.median([x['run_p95_s'] for x in rows]):g} | "
            f"{_med([x.get('agent_first_call_ms', 0) for x in rows])} | "
            f"{_med([x.get('gap_per_call_ms', 0) for x in rows])} | "
            f"{_med([x.get('after_last_reply_ms', 0) for x in rows])} | "
            f"{_med([x['worker_cpu_ms_per_sample'] for x in rows])} |"
        )
    if r["single"]:
        lines += [
            "",
            "| single run | latency ms | launch → completed ms (median, min–max) |",
            "|---|---|---|",
        ]
        for latency in sorted({row["latency_ms"] for row in r["single"]}, reverse=True):
            for mode in ("cold", "warm"):
                rows = [
                    x["launch_to_done_ms"]
                    for x in r["single"]
                    if x["latency_ms"] == latency and x["mode"] == mode
                ]
                lines.append(f"| 1 × {r['samples']} ({mode} worker) | {latency:g} | {_med(rows)} |")
        keys = ["launch_returned_ms", "drain_started_ms", "first_claim_ms", "slowest_call_ms"]
        keys += ["last_written_ms", "finalised_ms"]
        lines += ["", "| single run, median ms after launch | mode | " + " | ".join(keys) + " |"]
        lines.append("|---|---|" + "---|" * len(keys))
        for latency in sorted({row["latency_ms"] for row in r["single"]}, reverse=True):
            for mode in ("cold", "warm"):
                rows = [x for x in r["single"] if x["latency_ms"] == latency and x["mode"] == mode]
                values = [[x[k] for x in rows if k in x] for k in keys]
                cells = [f"{statistics.median(v):g}" if v else "-" for v in values]
                lines.append(f"| {latency:g} ms agent | {mode} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
