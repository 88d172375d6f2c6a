#!/usr/bin/env python
"""CPU of the drain's steps per sample, in one process, without an agent or a worker.

Replays what one drain does for R runs x S samples with the agent at its cap C (every slot handed to a
sample claimed ahead, as in bench_runs.py's 100 x 10 burst), on a fresh database: a launch_batch, then
rounds of C replies -> evaluation and SampleWrite (execute_sample's work after the reply) -> start_ahead
-> one record_sample_results of the round (the running runs' summaries recounted every other round, as
SUMMARY_EVERY_S does at 200 ms a call) -> the next claim ahead; leases renewed every fourth round. The
request bodies and the reply parsing of the agent calls are timed too (no socket). Prints the CPU
(process time) of each step per sample, median and least over the bursts (the first burst warms up and
is not counted); ``--profile N`` adds cProfile's top N functions.

  .venv/bin/python bench/runs/bench_drain_steps.py                       # SQLite, 100 x 10, cap 100
  .venv/bin/python bench/runs/bench_drain_steps.py --database-url "$PG"  # PostgreSQL (a fresh database)
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import json
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class Steps:
    """CPU seconds per step (process time), counted once ``counting`` is set."""

    def __init__(self) -> None:
        self.cpu: collections.Counter[str] = collections.Counter()
        self.counting = False

    def __call__(self, name: str, fn, *args, **kwargs):
        started = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            if self.counting:
                self.cpu[name] += time.process_time() - started


def finished(steps: Steps, sample, plan, target, fake) -> object:
    """What execute_sample builds for a sample whose call succeeded: the request body, the reply
    parsed, the checks judged, the SampleWrite."""
    from agents import protocols
    from runs.execution import _write, evaluate_sample, transcript_for

    scenario = plan.scenarios[sample.scenario_index]
    call = protocols._Call(target, scenario, str(sample.run_id), str(sample.id))
    body = steps("request body", call.next_request)
    reply_body = steps(
        "agent (fake, not ours)", lambda: json.dumps(fake._reply(json.loads(body), {})).encode()
    )
    reply = steps("reply parse", protocols._finish, call, 200, {}, reply_body, time.monotonic())

    def evaluate():
        transcript = transcript_for(scenario, reply)
        outcome, results = evaluate_sample(plan, scenario, reply, transcript)
        return _write(
            sample,
            outcome=outcome,
            request=reply.request,
            output=reply.output,
            tool_calls=reply.tool_calls,
            trace=reply.trace,
            transcript=transcript,
            latency_ms=reply.latency_ms,
            attempts=sample.previous_attempts + [a.as_dict() for a in reply.attempts],
            results=results,
            saw_429=False,
            grow_window=sample.windowed,
            world_id=None,
            world_checks=[],
        )

    return steps("evaluate + SampleWrite", evaluate)


def burst(steps: Steps, *, test, user, agent, runs: int, cap: int, fake) -> list:
    """One burst as one drain runs it; returns the runs."""
    from agents.targets import target_for
    from runs import queue, services

    launched = steps("launch_batch", services.launch_batch, tests=[test] * runs, by=user)
    worker = queue.worker_name()
    claim = steps("claim", queue.claim_samples, worker=worker, capacity=cap)
    plans = dict(claim.plans)
    targets = {agent_id: target_for(row) for agent_id, row in claim.agents.items()}
    running = [s for s in claim.samples if not s.ahead]
    held: collections.deque = collections.deque()
    stale: set[int] = set()
    round_ = 0
    while running:
        want = len(running) - len(held)
        if want > 0:  # one sample ahead per call in flight
            more = steps(
                "claim",
                queue.claim_samples,
                worker=worker,
                capacity=0,
                known_runs=set(plans),
                ahead={agent.pk: want},
                ahead_max=want,
            )
            plans.update(more.plans)
            held.extend(s for s in more.samples if s.ahead)
        round_ += 1
        if round_ % 4 == 0:
            steps("renew_leases", queue.renew_leases, running + list(held))
        writes = [finished(steps, s, plans[s.run_id], targets[s.agent_id], fake) for s in running]
        nxt = [held.popleft() for _ in range(min(len(held), len(writes)))]
        started = steps("start_ahead", queue.start_ahead, nxt) if nxt else {}
        recount = set(stale) if round_ % 2 == 0 else set()
        written = steps("record_sample_results", queue.record_sample_results, writes, recount)
        stale -= recount
        stale.update(w.run_id for w, ok in zip(writes, written, strict=True) if ok)
        running = [s for s in nxt if s.id in started]
    if stale:
        steps("refresh_runs", queue.refresh_runs, stale)
    return launched


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--database-url", default="", help="PostgreSQL URL (default: a fresh SQLite file)")
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--samples", type=int, default=10, help="samples per run")
    ap.add_argument("--cap", type=int, default=100, help="the agent's max_concurrency")
    ap.add_argument("--repeat", type=int, default=4, help="bursts (the first one warms up, not counted)")
    ap.add_argument("--work-dir", default=os.path.join(tempfile.gettempdir(), "bench_drain_steps"))
    ap.add_argument("--profile", type=int, default=0, help="print cProfile's top N functions (0: none)")
    a = ap.parse_args()

    sys.path[:0] = [str(ROOT), str(ROOT / "bench" / "runs"), str(ROOT / "tests" / "support")]
    from bench_runs import orders_test, prepare_database

    work = Path(a.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "DATABASE_URL": prepare_database(a.database_url, work),
        "DJANGO_SETTINGS_MODULE": "evalconsole.settings",
        "EVALCONSOLE_MAX_BATCH_RUNS": str(max(200, a.runs)),
    }
    migrate = [sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"]
    subprocess.run(migrate, cwd=ROOT, env=env, check=True)
    os.environ.update(
        {k: env[k] for k in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE", "EVALCONSOLE_MAX_BATCH_RUNS")}
    )
    import django

    django.setup()
    from fake_agent import FakeAgentServer

    from bench.common import admin_and_agent
    from runs.models import Run

    user, agent = admin_and_agent(
        team="Bench", username="bench", agent="Fake", max_concurrency=a.cap, timeout_s=30.0, retries=2
    )
    test = orders_test(agent, user, a.samples)
    steps, fake = Steps(), FakeAgentServer()
    prof = cProfile.Profile() if a.profile else None
    per_burst: list[dict[str, float]] = []  # CPU ms per sample of each step, per counted burst
    total = a.runs * a.samples
    for rep in range(a.repeat):
        steps.counting = rep > 0
        before = dict(steps.cpu)
        if steps.counting and prof:
            prof.enable()
        runs = burst(steps, test=test, user=user, agent=agent, runs=a.runs, cap=a.cap, fake=fake)
        if steps.counting and prof:
            prof.disable()
        done = Run.objects.filter(pk__in=[r.pk for r in runs], status="completed").count()
        assert done == len(runs), f"{done} of {len(runs)} runs completed"
        if steps.counting:
            row = {k: (v - before.get(k, 0.0)) * 1000 / total for k, v in steps.cpu.items()}
            row["ours in all"] = sum(v for k, v in row.items() if not k.startswith("agent"))
            per_burst.append(row)
    print(f"{a.runs} runs x {a.samples}, cap {a.cap}, {len(per_burst)} bursts counted")
    print("CPU ms per sample: median, least of the bursts")
    for name in sorted(per_burst[0], key=lambda k: -per_burst[0][k]):
        values = [row.get(name, 0.0) for row in per_burst]
        print(f"  {name:28s} {statistics.median(values):7.4f} {min(values):7.4f}")
    if prof:
        pstats.Stats(prof).sort_stats("cumulative").print_stats(a.profile)


if __name__ == "__main__":
    main()
