#!/usr/bin/env python
"""Server time of every list endpoint and list page at 50 rows (issue 19), measured in-process.

Builds a fresh database through the services the tests use: a team, a member with an API token, an
agent with 55 checks, 55 test sets, 55 tests in one set, 55 runs of those tests plus one run of 50
samples (run against the fake agent on loopback, django-q2 in sync mode), 60 tasks judged by 55
monitors (the first samples every task), one evaluation of 50 tasks, 55 scenes, 55 review queues (one
holding the 50 samples), 55 more agents. Then it asks each list endpoint (token, API page size 50) and
each list page (session) ``--repeat`` times through Django's test Client with DEBUG off, after
``--warmup`` unmeasured requests, and prints p50/p95 of the server time (the Client calls the WSGI
handler in-process: middleware, view, serializer or template, no socket) with the rows on the page
and the queries of one request. Pages with a page size of their own (runs 25, agents 25, test sets
20, evaluations 25) show that many.

  PYTHONPATH=$PWD .venv/bin/python bench/serving/bench_lists.py                  # SQLite (temp file)
  PG=$(PGPORT=54341 bash .ci/pg-throwaway.sh start /tmp/pg-serving | tail -1)
  PYTHONPATH=$PWD .venv/bin/python bench/serving/bench_lists.py --database-url "$PG"
  bash .ci/pg-throwaway.sh stop /tmp/pg-serving
  PYTHONPATH=$PWD .venv/bin/python bench/serving/bench_lists.py --profile runs-api   # cProfile one
  PYTHONPATH=$PWD .venv/bin/python bench/serving/bench_lists.py --only runs-api,runs-page --repeat 50

``--json FILE`` writes the figures. Wall clock (time.perf_counter) on a shared machine: compare figures
taken in one sitting. See bench/README.md "Serving: list endpoints and pages at 50 rows (issue 19)".
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

N = 55  # rows of each kind: every first page of 50 is full


def setup_django(database_url: str | None, work: Path, db_file: str | None = None) -> str:
    os.environ["DJANGO_SETTINGS_MODULE"] = "evalconsole.settings"
    os.environ["DATABASE_URL"] = database_url or f"sqlite:///{db_file or work / 'bench.sqlite3'}"
    os.environ["EVALCONSOLE_VAR_DIR"] = str(work)
    os.environ.setdefault("SECRET_KEY", "bench-serving-not-secret")
    os.environ["DEBUG"] = "0"
    os.environ.pop("EVALCONSOLE_API_PAGE_SIZE", None)
    os.environ["EVALCONSOLE_MAX_SAMPLES_PER_RUN"] = "100"  # the run of 50 samples
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    settings.ALLOWED_HOSTS = ["*"]
    call_command("migrate", verbosity=0, interactive=False)
    from django_q.conf import Conf

    Conf.SYNC = True  # launches drain and monitors judge in this process, as the tests do
    from django.db import connection

    return connection.vendor


def build() -> dict:
    """The data; returns the ids and secrets the requests need."""
    from django.utils import timezone

    from agents.services import create_agent
    from checks.services import create_check, create_test, create_test_set
    from monitors.models import Task
    from monitors.services import create_monitor, ingest_tasks, launch_evaluation
    from reviews.services import create_queue, send_samples
    from runs.models import Run
    from runs.services import launch_run
    from teams.services import add_member, create_team, get_or_create_user, issue_token
    from tests.support.fake_agent import FakeAgent
    from tests.support.scenes import support_question
    from worlds.services import create_scene

    t0 = time.perf_counter()
    fake = FakeAgent(latency_ms=0).start()
    team = create_team(name="Bench team")
    admin, _ = get_or_create_user(username="bench-admin")
    add_member(team=team, user=admin, role="admin")
    member, _ = get_or_create_user(username="bench-member")
    add_member(team=team, user=member, role="member")
    secret = issue_token(user=member, name="bench").secret
    agent = create_agent(team=team, by=admin, name="Support bot", endpoint_url=fake.url, retries=0)
    for i in range(N):
        create_agent(team=team, by=admin, name=f"Agent {i:02d}", endpoint_url="http://127.0.0.1:9/agent")
    checks = [
        create_check(
            agent=agent,
            by=member,
            name=f"Check {i:02d}",
            kind="text_includes",
            config={"text": "EC-1042" if i % 2 else "order"},
        )
        for i in range(N)
    ]
    sets = [create_test_set(agent=agent, by=member, name=f"Set {i:02d}") for i in range(N)]
    scenarios = [
        {"name": "Known order", "input": "Where is my order EC-1042?"},
        {"name": "No order id", "input": "Where is my parcel?"},
    ]
    tests = [
        create_test(
            test_set=sets[0],
            by=member,
            name=f"Test {i:02d}",
            scenarios=scenarios,
            checks=[
                {"check": checks[i].pk, "required": True},
                {"check": checks[(i + 1) % N].pk, "required": False},
            ],
            samples_per_scenario=1,
            min_valid_per_scenario=1,
            required_pass_rate=100,
        )
        for i in range(N)
    ]
    big = create_test(
        test_set=sets[1],
        by=member,
        name="Big",
        scenarios=[{"name": f"Case {s}", "input": f"Where is my order EC-{1040 + s}?"} for s in range(10)],
        checks=[{"check": checks[0].pk, "required": True}, {"check": checks[1].pk, "required": True}],
        samples_per_scenario=5,
        min_valid_per_scenario=1,
        required_pass_rate=60,
    )
    big_run = launch_run(test=big, by=member)
    for test in tests:
        launch_run(test=test, by=member)
    done = Run.objects.filter(status=Run.Status.COMPLETED).count()
    now = timezone.now().isoformat()
    monitors = [
        create_monitor(
            agent=agent,
            by=member,
            name=f"Monitor {i:02d}",
            checks=[checks[i].pk, checks[(i + 1) % N].pk],
            sample_rate=100 if i == 0 else 10,
        )
        for i in range(N)
    ]
    ingest_tasks(
        agent=agent,
        by=member,
        items=[
            {
                "external_id": f"task-{i:03d}",
                "completed_at": now,
                "messages": [{"role": "user", "content": f"Where is my order EC-{1000 + i}?"}],
                "output": f"Order EC-{1000 + i} ships tomorrow." if i % 3 else "I cannot find it.",
                "tool_calls": [{"name": "lookup_order", "input": {"orderId": f"EC-{1000 + i}"}}],
                "metadata": {"channel": "web" if i % 2 else "mail"},
            }
            for i in range(60)
        ],
    )
    task_ids = list(Task.objects.filter(agent=agent).order_by("pk").values_list("pk", flat=True)[:50])
    evaluation = launch_evaluation(
        agent=agent, by=member, check_ids=[checks[0].pk, checks[1].pk], task_ids=task_ids
    )
    scenes = [
        create_scene(agent=agent, by=member, source=support_question(scene=f"scene-{i:02d}"))
        for i in range(N)
    ]
    queues = [create_queue(team=team, by=member, name=f"Queue {i:02d}") for i in range(N)]
    send_samples(queue=queues[0], run=big_run, by=member)
    fake.stop()
    print(
        f"built in {time.perf_counter() - t0:.1f} s: {done} completed runs, "
        f"{Task.objects.filter(agent=agent).count()} tasks, {len(monitors)} monitors, {len(scenes)} scenes",
        flush=True,
    )
    return {
        "secret": secret,
        "member": member,
        "agent": agent.pk,
        "check": checks[0].pk,
        "set": sets[0].pk,
        "run": big_run.pk,
        "monitor": monitors[0].pk,
        "evaluation": evaluation.pk,
        "queue": queues[0].pk,
    }


def targets(ids: dict) -> list[tuple[str, str, str]]:
    """(name, kind, path): kind "api" (token) or "page" (session)."""
    a, v = ids["agent"], "/api/v1"
    return [
        ("agents-api", "api", f"{v}/agents/"),
        ("checks-api", "api", f"{v}/checks/"),
        ("check-versions-api", "api", f"{v}/checks/{ids['check']}/versions/"),
        ("test-sets-api", "api", f"{v}/test-sets/"),
        ("tests-api", "api", f"{v}/tests/"),
        ("scenes-api", "api", f"{v}/scenes/"),
        ("runs-api", "api", f"{v}/runs/"),
        ("samples-api", "api", f"{v}/runs/{ids['run']}/samples/"),
        ("tokens-api", "api", f"{v}/tokens/"),
        ("tasks-api", "api", f"{v}/tasks/"),
        ("monitors-api", "api", f"{v}/monitors/"),
        ("evaluations-api", "api", f"{v}/evaluations/"),
        ("evaluation-results-api", "api", f"{v}/evaluations/{ids['evaluation']}/results/"),
        ("review-queues-api", "api", f"{v}/review-queues/"),
        ("review-items-api", "api", f"{v}/review-queues/{ids['queue']}/items/"),
        ("agents-page", "page", "/agents/"),
        ("checks-index-page", "page", "/checks/"),
        ("checks-page", "page", f"/checks/agents/{a}/"),
        ("test-sets-page", "page", "/checks/tests/"),
        ("tests-page", "page", f"/checks/test-sets/{ids['set']}/"),
        ("runs-page", "page", "/runs/"),
        ("tasks-page", "page", "/tasks/"),
        ("monitors-page", "page", "/monitors/"),
        ("evaluations-page", "page", "/evaluations/"),
        ("scenes-page", "page", f"/scenes/agents/{a}/"),
        ("review-queues-page", "page", "/reviews/"),
        ("review-queue-page", "page", f"/reviews/{ids['queue']}/"),
    ]


def rows_of(kind: str, response) -> str:
    if kind == "api":
        body = response.json()
        return str(len(body["results"])) if isinstance(body, dict) and "results" in body else "-"
    return "-"


CSRF = re.compile(rb'("x-csrftoken": "|name="csrfmiddlewaretoken" value=")[A-Za-z0-9]{32,64}"')


def dump(targets_, ids, directory: Path) -> None:
    """Each list's body in ``directory/<name>`` (CSRF tokens blanked): diff two code versions' bodies."""
    from django.test import Client

    api = Client(HTTP_AUTHORIZATION=f"Bearer {ids['secret']}")
    page = Client()
    page.force_login(ids["member"])
    directory.mkdir(parents=True, exist_ok=True)
    for name, kind, path in targets_:
        body = (api if kind == "api" else page).get(path).content
        (directory / name).write_bytes(CSRF.sub(rb'\1-"', body))


def measure(targets_, ids, *, repeat: int, warmup: int, profile: str | None) -> list[dict]:
    from django.db import connection, reset_queries
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    api = Client(HTTP_AUTHORIZATION=f"Bearer {ids['secret']}")
    page = Client()
    page.force_login(ids["member"])
    out = []
    for name, kind, path in targets_:
        client = api if kind == "api" else page
        for _ in range(warmup):
            r = client.get(path)
            assert r.status_code == 200, (name, r.status_code, r.content[:300])
        with CaptureQueriesContext(connection) as ctx:
            r = client.get(path)
        queries = len(ctx)
        if name in (profile or "").split(","):
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(repeat):
                client.get(path)
            prof.disable()
            stats = pstats.Stats(prof)
            print(f"--- {name}: {repeat} requests, project code by cumulative time")
            picked = os.environ.get("BENCH_PROFILE_FILTER", r"/serving/(?!\.venv)")
            stats.sort_stats("cumulative").print_stats(picked, 30)
            stats.sort_stats("tottime").print_stats(20)
        counted = cProfile.Profile()  # Python function calls a request makes: other load does not move it
        counted.enable()
        for _ in range(3):
            client.get(path)
        counted.disable()
        calls = pstats.Stats(counted).total_calls // 3
        times, cpu = [], []
        for _ in range(repeat):
            t, c = time.perf_counter(), time.thread_time()
            client.get(path)
            times.append((time.perf_counter() - t) * 1000)
            cpu.append((time.thread_time() - c) * 1000)
            reset_queries()
        times.sort()
        out.append(
            {
                "name": name,
                "path": path,
                "rows": rows_of(kind, r),
                "queries": queries,
                "p50_ms": round(statistics.median(times), 2),
                "p95_ms": round(times[min(len(times) - 1, int(0.95 * len(times)))], 2),
                "cpu_p50_ms": round(statistics.median(cpu), 2),
                "min_ms": round(times[0], 2),  # the uncontended cost, on a machine others share
                "calls": calls,
            }
        )
        print(
            f"{name:24} {out[-1]['rows']:>4} rows {queries:>3} q  p50 {out[-1]['p50_ms']:7.2f} ms"
            f"  p95 {out[-1]['p95_ms']:7.2f} ms  cpu p50 {out[-1]['cpu_p50_ms']:7.2f} ms"
            f"  min {out[-1]['min_ms']:7.2f} ms  {calls:7d} calls",
            flush=True,
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--only", default="", help="comma-separated names")
    parser.add_argument("--profile", default=None, help="cProfile these (comma-separated names)")
    parser.add_argument("--json", default=None)
    parser.add_argument(
        "--db-file", default=None, help="SQLite file kept between invocations: built once, then reused"
    )
    parser.add_argument("--dump", default=None, help="write each list's body into this directory")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-serving-") as tmp:
        reuse = bool(args.db_file) and Path(args.db_file).exists()
        vendor = setup_django(args.database_url, Path(tmp), args.db_file)
        if args.database_url:
            from django.core.management import call_command

            call_command("flush", verbosity=0, interactive=False)
        if reuse:
            from django.contrib.auth import get_user_model

            ids = json.loads(Path(f"{args.db_file}.json").read_text())
            ids["member"] = get_user_model().objects.get(username="bench-member")
        else:
            ids = build()
            if args.db_file:
                kept = {k: v for k, v in ids.items() if k != "member"}
                Path(f"{args.db_file}.json").write_text(json.dumps(kept))
        import evalconsole.wsgi  # noqa: F401  (what a gunicorn worker runs at start: the app, gc.freeze)

        chosen = targets(ids)
        if args.only:
            wanted = set(args.only.split(","))
            chosen = [t for t in chosen if t[0] in wanted]
        if args.dump:
            dump(chosen, ids, Path(args.dump))
            return
        print(f"database: {vendor}; {args.repeat} requests each after {args.warmup} unmeasured", flush=True)
        results = measure(chosen, ids, repeat=args.repeat, warmup=args.warmup, profile=args.profile)
        if args.json:
            Path(args.json).write_text(json.dumps({"database": vendor, "results": results}, indent=1))


if __name__ == "__main__":
    main()
