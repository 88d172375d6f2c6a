#!/usr/bin/env python3
"""How fast can agents.protocols call an agent? (the HTTP layer alone: no Django, no database)

Starts tests/support/fake_agent.py in its own process, then makes N call_agent() calls with at most C in
flight through one shared client, and prints wall time, calls/s and the overhead over the ideal
ceil(N / C) x latency, spread over the N calls (about the CPU cost of one call on this machine).
With --stock-httpx it does the same through a plain httpx.AsyncClient (httpcore's pool) for comparison.

    .venv/bin/python bench/fake_agent_load/bench_calls.py --calls 1000 --concurrency 100 --latency-ms 200
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from agents.protocols import AgentTarget, build_request, call_agent, make_async_client  # noqa: E402

SCENARIO = {"name": "bench", "input": "Where is my order EC-1042?", "metadata": {}}


async def run_ours(url: str, calls: int, concurrency: int) -> float:
    target = AgentTarget(protocol="evalconsole", endpoint_url=url, timeout_s=30, retries=0)
    async with make_async_client(max_connections=concurrency) as client:
        gate = asyncio.Semaphore(concurrency)

        async def one(i: int) -> None:
            async with gate:
                await call_agent(target, scenario=SCENARIO, run_id="bench", sample_id=str(i), client=client)

        started = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(calls)))
        return time.perf_counter() - started


async def run_stock(url: str, calls: int, concurrency: int) -> float:
    target = AgentTarget(protocol="evalconsole", endpoint_url=url)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(30, pool=None)) as client:
        gate = asyncio.Semaphore(concurrency)

        async def one(i: int) -> None:
            body = build_request(target, scenario=SCENARIO, run_id="bench", sample_id=str(i), attempt=1)
            async with gate:
                r = await client.post(url, json=body)
                r.json()

        started = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(calls)))
        return time.perf_counter() - started


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--calls", type=int, default=1000)
    p.add_argument("--concurrency", type=int, default=100)
    p.add_argument("--latency-ms", type=float, default=200)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--stock-httpx", action="store_true", help="also time a plain httpx.AsyncClient")
    args = p.parse_args()

    agent = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "tests/support/fake_agent.py"),
            "--port",
            "0",
            "--latency-ms",
            str(args.latency_ms),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = agent.stdout.readline()
        url = "http://" + line.split()[1] + "/agent"
        ideal = math.ceil(args.calls / args.concurrency) * args.latency_ms / 1000
        runners = [("agents.protocols", run_ours)] + (
            [("stock httpx", run_stock)] if args.stock_httpx else []
        )
        for name, runner in runners:
            times = sorted(asyncio.run(runner(url, args.calls, args.concurrency)) for _ in range(args.repeat))
            best, median = times[0], times[len(times) // 2]
            print(
                json.dumps(
                    {
                        "client": name,
                        "calls": args.calls,
                        "concurrency": args.concurrency,
                        "latency_ms": args.latency_ms,
                        "best_s": round(best, 3),
                        "median_s": round(median, 3),
                        "calls_per_s": round(args.calls / median),
                        "ideal_s": ideal,
                        "overhead_ms_per_call": round((median - ideal) * 1000 / args.calls, 3),
                        "load_avg_1m": round(os.getloadavg()[0], 2),
                    }
                ),
                flush=True,
            )
        httpx.get(url.rsplit("/", 1)[0] + "/stats", timeout=5)
    finally:
        agent.terminate()
        agent.wait(5)


if __name__ == "__main__":
    main()
