"""Benchmark: ingest tasks through the REST API over real HTTP, then drain the monitor evaluations.

    .venv/bin/python bench/ingest/bench_ingest.py                           # SQLite in a temp dir
    DATABASE_URL="$(bash .ci/pg-throwaway.sh start /tmp/pgbench8)" \\
        .venv/bin/python bench/ingest/bench_ingest.py                       # PostgreSQL

What it does (see bench/README.md "Task ingestion"):
1. migrates a fresh database and creates a team, a member with a write token, an agent with
   3 checks (text_includes, tool_usage, trace) and one monitor sampling --rate percent (10);
2. starts `manage.py runserver --noreload` on loopback (production settings: DEBUG off, tasks
   queued for django-q2, not run inline) and POSTs --tasks tasks (100,000) to
   /api/v1/agents/{id}/tasks/ in batches of --batch (1,000) from --clients client threads; the
   JSON bodies are built before the clock starts, so the figure is the server's;
3. re-posts one batch to show it creates nothing (idempotency);
4. stops the web server and starts `manage.py qcluster` (--workers processes), measuring how fast it
   evaluates the sampled tasks: evaluations/s = check results written per second, from the first
   result to the last (with --worker-during-ingest the worker runs during ingestion instead, the
   production shape, and the server stays up to time the dashboard aggregates afterwards).

Only loopback, only this project's own processes; everything it starts is stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", type=int, default=100_000)
    p.add_argument("--batch", type=int, default=1000)
    p.add_argument("--rate", default="10", help="monitor sample rate in percent (default 10)")
    p.add_argument("--clients", type=int, default=1, help="concurrent HTTP clients (default 1)")
    p.add_argument("--workers", type=int, default=2, help="qcluster worker processes (default 2)")
    p.add_argument("--port", type=int, default=0, help="web server port (default: a free one)")
    p.add_argument("--skip-worker", action="store_true", help="only measure ingestion")
    p.add_argument(
        "--worker-during-ingest",
        action="store_true",
        help="run qcluster while ingesting (production shape) instead of after",
    )
    p.add_argument("--json", type=Path, help="also write the figures to this file")
    return p.parse_args()


def wait_for_port(port: int, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited with {proc.returncode}; see its log")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise SystemExit("the server did not start in time")


def stop(proc: subprocess.Popen | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def make_task(i: int, rng: random.Random, now: float | None = None) -> dict:
    """A realistic ~1 KB support conversation with tool calls, a trace and metadata.

    Task i completed i * 6 seconds before `now`: 100,000 tasks span the last 7 days.
    """
    from datetime import UTC, datetime

    completed = datetime.fromtimestamp((now or time.time()) - i * 6, UTC)
    order = 10_000 + i
    ok = rng.random() < 0.8
    answer = (
        (
            f"Your order {order} has shipped and should arrive on Tuesday. The tracking number is "
            f"TRK{order}X. Is there anything else I can help with?"
        )
        if ok
        else "Sorry, I could not find that."
    )
    calls = [
        {
            "name": "lookup_order",
            "status": "succeeded",
            "input": {"order_id": str(order)},
            "output": {"status": "shipped", "eta": "Tuesday"},
        }
    ]
    if not ok:
        calls.append({"name": "escalate_to_human", "status": "succeeded", "input": {"reason": "not found"}})
    return {
        "external_id": f"prod-{i:07d}",
        "completed_at": completed.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "messages": [
            {"role": "system", "content": "You are the order desk assistant of Example Shop."},
            {"role": "user", "content": f"Hi, where is my order {order}? It was due last week."},
            {"role": "assistant", "content": answer},
        ],
        "output": answer,
        "tool_calls": calls,
        "trace": [
            {"method": "GET", "path": f"/orders/{order}", "status": 200 if ok else 404, "tool": "orders"}
        ],
        "metadata": {
            "customer": f"cust-{i % 5000}",
            "plan": rng.choice(["free", "pro", "enterprise"]),
            "region": rng.choice(["eu", "us", "apac"]),
            "channel": "chat",
        },
        "latency_ms": round(rng.uniform(300, 4000), 1),
    }


def main() -> None:
    args = parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-ingest-"))
    env = dict(os.environ)
    env.setdefault("DATABASE_URL", f"sqlite:///{work / 'bench.sqlite3'}")
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "evalconsole.settings",
            "EVALCONSOLE_VAR_DIR": str(work),
            "SECRET_KEY": "bench-secret-key-0123456789-0123456789-0123456789",
            "DEBUG": "false",
            "EVALCONSOLE_API_INGEST_THROTTLE": "1000000/min",
            "EVALCONSOLE_WORKERS": str(args.workers),
            "EVALCONSOLE_MAX_TASK_BATCH": str(max(args.batch, 1000)),
            "PYTHONUNBUFFERED": "1",
        }
    )
    os.environ.update(env)
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from bench.common import LOOKUP_ORDER_CALLED, admin_and_agent, create_checks, free_port
    from monitors import services as monitoring
    from monitors.models import Task
    from runs.models import CheckResult
    from teams.services import issue_token

    vendor = connection.vendor
    print(f"load average (1 min) at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores", flush=True)
    print(f"database: {vendor} ({env['DATABASE_URL'].split('@')[-1]}); work dir {work}", flush=True)
    call_command("migrate", verbosity=0, interactive=False)
    suffix = str(int(time.time()))
    user, agent = admin_and_agent(team=f"Bench {suffix}", username=f"bench-{suffix}", agent="Order desk")
    checks = create_checks(
        agent,
        user,
        [
            ("Gives tracking", "text_includes", {"text": "TRK"}),
            ("Looks up the order", "tool_usage", LOOKUP_ORDER_CALLED),
            ("Reads the order", "trace", {"called": ["GET /orders/*"]}),
        ],
    )
    monitor = monitoring.create_monitor(
        agent=agent, by=user, name="Live 10 %", checks=[c.pk for c in checks], sample_rate=args.rate
    )
    token = issue_token(user=user, name="bench").secret
    connection.close()

    rng = random.Random(8)
    bodies = []
    started = time.time()
    for start in range(0, args.tasks, args.batch):
        items = [make_task(i, rng, started) for i in range(start, min(start + args.batch, args.tasks))]
        bodies.append(json.dumps(items).encode())
    mb = sum(len(b) for b in bodies) / 1e6
    print(
        f"payload: {len(bodies)} batches, {mb:.1f} MB of JSON ({mb * 1e3 / args.tasks:.2f} KB/task)",
        flush=True,
    )

    port = args.port or free_port()
    log = open(work / "runserver.log", "wb")  # noqa: SIM115 - closed in the finally below
    server = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    wlog = open(work / "qcluster.log", "wb")  # noqa: SIM115 - closed in the finally below
    worker: subprocess.Popen | None = None
    worker_started = 0.0

    def start_worker() -> None:
        nonlocal worker, worker_started
        worker_started = time.perf_counter()
        worker = subprocess.Popen(
            [sys.executable, "manage.py", "qcluster"],
            cwd=ROOT,
            env=env,
            stdout=wlog,
            stderr=subprocess.STDOUT,
        )

    figures: dict = {
        "database": vendor,
        "tasks": args.tasks,
        "batch": args.batch,
        "rate": args.rate,
        "clients": args.clients,
        "workers": args.workers,
        "worker_during_ingest": bool(args.worker_during_ingest),
    }
    try:
        import httpx

        wait_for_port(port, server)
        url = f"http://127.0.0.1:{port}/api/v1/agents/{agent.pk}/tasks/"
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        latencies: list[float] = []
        created = [0]
        lock = threading.Lock()
        queue = list(enumerate(bodies))

        def client_loop() -> None:
            with httpx.Client(timeout=120, headers=headers) as client:
                while True:
                    with lock:
                        if not queue:
                            return
                        _, body = queue.pop(0)
                    t0 = time.perf_counter()
                    response = client.post(url, content=body)
                    elapsed = time.perf_counter() - t0
                    if response.status_code not in (200, 201):
                        raise SystemExit(f"HTTP {response.status_code}: {response.text[:500]}")
                    with lock:
                        latencies.append(elapsed)
                        created[0] += response.json()["created"]

        # Warm up the server process (imports, first database connection) with a cheap request.
        httpx.get(f"http://127.0.0.1:{port}/api/v1/", headers=headers, timeout=30)
        if args.worker_during_ingest and not args.skip_worker:
            start_worker()
            time.sleep(2)  # let qcluster start its processes before the clock starts
        t0 = ingest_started = time.perf_counter()
        threads = [threading.Thread(target=client_loop) for _ in range(args.clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        ingest_ended = time.perf_counter()
        ingest_s = ingest_ended - t0
        if created[0] != args.tasks:
            raise SystemExit(f"created {created[0]} tasks, expected {args.tasks}")
        latencies.sort()
        figures.update(
            {
                "ingest_seconds": round(ingest_s, 2),
                "ingest_tasks_per_s": round(args.tasks / ingest_s),
                "batch_ms_p50": round(latencies[len(latencies) // 2] * 1e3),
                "batch_ms_p95": round(latencies[int(len(latencies) * 0.95) - 1] * 1e3),
            }
        )
        print(
            f"ingest: {args.tasks} tasks in {ingest_s:.1f} s = {args.tasks / ingest_s:,.0f} tasks/s "
            f"(batch p50 {figures['batch_ms_p50']} ms, p95 {figures['batch_ms_p95']} ms)",
            flush=True,
        )
        again = httpx.post(url, content=bodies[0], headers=headers, timeout=60).json()
        print(f"re-post of batch 0: created {again['created']}, existing {again['existing']}", flush=True)
        figures["repost_created"] = again["created"]

        sampled = Task.objects.filter(agent=agent, sampled=True).count()
        expected = sampled * len(checks)
        figures.update(
            {
                "sampled": sampled,
                "observed_rate_percent": round(sampled * 100 / args.tasks, 2),
                "expected_results": expected,
            }
        )
        print(
            f"sampled: {sampled} tasks ({sampled * 100 / args.tasks:.2f} %) -> {expected} evaluations queued "
            f"in {-(-args.tasks // args.batch)} background jobs",
            flush=True,
        )
        if not args.skip_worker and expected:
            if worker is None:
                stop(server)  # the worker alone on the machine: its own throughput
                start_worker()
            first_at = None
            done = 0
            deadline = time.monotonic() + 1800
            while time.monotonic() < deadline:
                done = CheckResult.objects.filter(monitor=monitor).count()
                now = time.perf_counter()
                if done and first_at is None:
                    first_at = now
                if done >= expected:
                    break
                if worker.poll() is not None:
                    raise SystemExit("qcluster exited; see its log")
                time.sleep(0.2)
            end = time.perf_counter()
            connection.close()
            if done < expected:
                raise SystemExit(f"only {done} of {expected} results after 30 minutes")
            if args.worker_during_ingest:
                # Evaluations ran alongside ingestion: rate over the whole span, and the lag after it.
                busy = end - ingest_started
                spans = {
                    "worker_seconds_busy": round(busy, 2),
                    "lag_after_ingest_s": round(end - ingest_ended, 2),
                }
                print(
                    f"worker (during ingestion): {expected} evaluations ({sampled} tasks x "
                    f"{len(checks)} checks) "
                    f"done {end - ingest_ended:.1f} s after the last batch was accepted (poll: 0.2 s); "
                    f"{expected / busy:,.0f} evaluations/s over the whole span",
                    flush=True,
                )
            else:
                busy = end - (first_at or worker_started)
                spans = {
                    "worker_seconds_from_start": round(end - worker_started, 2),
                    "worker_seconds_busy": round(busy, 2),
                }
                print(
                    f"worker: {expected} evaluations ({sampled} tasks x {len(checks)} checks) in "
                    f"{busy:.1f} s from "
                    f"the first result to the last ({end - worker_started:.1f} s since qcluster started) = "
                    f"{expected / busy:,.0f} evaluations/s ({sampled / busy:,.0f} tasks/s)",
                    flush=True,
                )
            figures.update(
                {
                    **spans,
                    "evaluations_per_s": round(expected / busy),
                    "evaluated_tasks_per_s": round(sampled / busy),
                }
            )
            failures = Task.objects.filter(agent=agent, has_failures=True).count()
            figures["tasks_with_failures"] = failures
            print(f"tasks marked has_failures: {failures}", flush=True)
        if server.poll() is None:
            # The dashboard's aggregates over everything just ingested, through the API.
            for bucket, days in (("hour", 7), ("day", 30)):
                t0 = time.perf_counter()
                r = httpx.get(
                    f"http://127.0.0.1:{port}/api/v1/monitors/{monitor.pk}/results/",
                    params={"bucket": bucket, "days": days},
                    headers=headers,
                    timeout=120,
                )
                ms = (time.perf_counter() - t0) * 1e3
                body = r.json()
                evaluated = sum(v["evaluated"] for v in body["volume"])
                tasks_seen = sum(v["tasks"] for v in body["volume"])
                figures[f"results_{bucket}_ms"] = round(ms)
                print(
                    f"GET monitors/{monitor.pk}/results/?bucket={bucket}&days={days}: {ms:,.0f} ms "
                    f"({len(body['volume'])} buckets, {tasks_seen} tasks, {evaluated} evaluated)",
                    flush=True,
                )
    finally:
        stop(worker)
        stop(server)
        log.close()
        wlog.close()
    figures["load_average_1m_at_end"] = round(os.getloadavg()[0], 2)
    print("figures: " + json.dumps(figures), flush=True)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
