"""Evaluations per second of every check kind, on typical and on growing evidence.

Run from the repository root:

    .venv/bin/python bench/kinds/bench_kinds.py            # full run (about a minute)
    .venv/bin/python bench/kinds/bench_kinds.py --quick    # shorter timing budget

Standard library timing only. Two figures per case:

- cold: each evaluation gets a fresh Evidence object (same underlying data), so every evaluation pays
  for parsing toolCalls/trace, encoding/casefolding the output and parsing JSON. This is the cost of
  the first check evaluated on a sample.
- warm: the same Evidence is evaluated again and again, so per-Evidence memos (parsed toolCalls and
  trace, UTF-8 and casefolded output, parsed JSON) are hits. This is the cost of each further check on
  the same sample.

Sizes: "typical" is a 2 KB output, 10 tool calls and 10 trace entries; S1..S3 grow the evidence 10x
each step up to a 1 MB output with 10,000 tool calls and 10,000 trace entries, to show the cost per
evaluation grows linearly with the evidence. Single process, single core, CPU time (process_time),
best of 5 runs; the garbage collector stays on (parsing large evidence allocates many objects).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from checks.kinds import Evidence, Outcome, get_kind  # noqa: E402

# CPU time of this process, not wall time: the figures are per core and stay meaningful on a machine
# that other processes share (wall-clock figures there mostly measure the neighbours).
clock = time.process_time

SIZES = {
    # name: (output bytes, tool calls, trace entries)
    "typical": (2_000, 10, 10),
    "S1": (10_000, 100, 100),
    "S2": (100_000, 1_000, 1_000),
    "S3": (1_000_000, 10_000, 10_000),
}

WORDS = [
    "the",
    "order",
    "EC-1042",
    "was",
    "shipped",
    "on",
    "Monday",
    "and",
    "the",
    "customer",
    "asked",
    "whether",
    "a",
    "refund",
    "is",
    "possible",
    "because",
    "one",
    "item",
    "arrived",
    "damaged;",
    "we",
    "checked",
    "the",
    "policy",
    "and",
    "replied",
    "politely",
]

TOOLS = ("search_kb", "lookup_order", "lookup_customer", "check_policy", "draft_reply")


def make_output(size: int) -> str:
    words, total, i = [], 0, 0
    while total < size:
        word = WORDS[i % len(WORDS)]
        words.append(word)
        total += len(word) + 1
        i += 1
    return " ".join(words)[:size]


def make_json_output(size: int) -> str:
    items, total, i = [], 2, 0
    while True:
        item = {"sku": f"SKU-{i:06d}", "qty": i % 7 + 1, "price": round(9.5 + i % 13, 2), "note": "standard"}
        text = json.dumps(item)
        if total + len(text) + 2 > size and items:
            break
        items.append(item)
        total += len(text) + 2
        i += 1
    return json.dumps({"orderId": "EC-1042", "items": items})


def make_tool_calls(n: int) -> list[dict]:
    calls = []
    for i in range(n):
        name = TOOLS[i % len(TOOLS)]
        calls.append(
            {
                "name": name,
                "status": ("succeeded", "failed", "requested")[i % 3],
                "input": {
                    "orderId": f"EC-{1000 + i}",
                    "items": [{"sku": f"A{i}", "qty": i % 4}],
                    "tags": ["vip", "eu"],
                },
                "output": {"ok": True},
                "node": "support" if i % 2 else "billing",
            }
        )
    calls.append(
        {"name": "issue_refund", "status": "requested", "input": {"orderId": "EC-1042"}, "node": "billing"}
    )
    return calls


def make_trace(n: int) -> list[dict]:
    entries = []
    for i in range(n):
        method, path = (
            ("GET", f"/repos/acme/orders/issues/{i}?page=2"),
            ("POST", f"/repos/acme/orders/issues/{i}/comments"),
            ("GET", f"/api/conversations.history?channel=C{i}"),
            ("POST", "/api/chat.postMessage"),
        )[i % 4]
        entries.append(
            {"method": method, "path": path, "status": (200, 201, 404, 500)[i % 4], "tool": "github"}
        )
    return entries


# (label, kind, config, which output): the configs make every kind read all of its evidence where
# the semantics allow it (text not found, pattern not matched, full-list scans).
CASES = [
    ("text_includes (found at the end)", "text_includes", {"text": "In short: the refund"}, "tail"),
    ("text_includes (absent)", "text_includes", {"text": "chargeback"}, "text"),
    (
        "text_includes (ignore case, absent)",
        "text_includes",
        {"text": "ChargeBack", "case_sensitive": False},
        "text",
    ),
    ("text_equals (differs at end)", "text_equals", None, "text"),
    ("text_matches (absent)", "text_matches", {"pattern": r"EC-\d{5,}"}, "text"),
    (
        "text_matches (ignore case, found)",
        "text_matches",
        {"pattern": r"REFUND\s+IS", "case_sensitive": False},
        "text",
    ),
    (
        "json_schema",
        "json_schema",
        {
            "schema": {
                "type": "object",
                "required": ["orderId", "items"],
                "properties": {
                    "orderId": {"type": "string", "pattern": "^EC-[0-9]+$"},
                    "items": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["sku", "qty"],
                            "properties": {
                                "sku": {"type": "string"},
                                "qty": {"type": "integer", "minimum": 1},
                                "price": {"type": "number"},
                            },
                        },
                    },
                },
            }
        },
        "json",
    ),
    ("latency", "latency", {"max_ms": 2000}, "text"),
    (
        "tool_usage at_least + inputs",
        "tool_usage",
        {
            "tool": "lookup_order",
            "count": 1,
            "inputs": [
                {"field": "orderId", "op": "matches", "value": "^EC-1042$"},
                {"field": "items.0.qty", "op": "equals", "value": "2"},
                {"field": "tags", "op": "contains", "value": "vip"},
            ],
        },
        "text",
    ),
    (
        "tool_usage last, node",
        "tool_usage",
        {"tool": "issue_refund", "mode": "last", "node": "billing"},
        "text",
    ),
    ("tool_sequence", "tool_sequence", {"tools": ["search_kb", "check_policy", "issue_refund"]}, "text"),
    (
        "trace called + not_called",
        "trace",
        {
            "called": ["GET /repos/acme/orders/issues/*", "POST /api/chat.postMessage"],
            "not_called": ["DELETE /repos/*", "PATCH /repos/*/issues/*"],
        },
        "text",
    ),
]


def build_evidence(size_name: str):
    out_size, n_calls, n_trace = SIZES[size_name]
    text = make_output(out_size)
    ending = " In short: the refund is possible because the item arrived damaged."
    data = {
        "text": text,
        "tail": text[: out_size - len(ending)] + ending,
        "json": make_json_output(out_size),
        "tool_calls": make_tool_calls(n_calls),
        "trace": make_trace(n_trace),
    }
    return data


def measure(run, budget: float, cap: int = 1_000_000) -> float:
    """Evaluations per second. ``run(n)`` performs n evaluations and returns the seconds they took.

    n grows until one run takes about budget/3 seconds; the figure is the best of 5 runs at that n.
    """
    n = 1
    while True:
        elapsed = run(n)
        if elapsed >= budget / 3 or n >= cap:
            break
        n = min(cap, max(n * 2, int(n * (budget / 3) / max(elapsed, 1e-9))))
    best = min([elapsed] + [run(n) for _ in range(4)])
    return n / best


def bench_case(
    kind_name: str, config, data: dict, output_key: str, budget: float
) -> tuple[float, float, str]:
    kind = get_kind(kind_name)
    output = data[output_key]
    if config is None:  # text_equals: expected differs from the output in its last character
        config = {"expected": output[:-1] + ("x" if output[-1:] != "x" else "y")}
    config = kind.validate_config(config)
    tool_calls, trace = data["tool_calls"], data["trace"]
    evaluate = kind.evaluate

    def fresh() -> Evidence:
        return Evidence(output=output, tool_calls=tool_calls, trace=trace, latency_ms=1234.5)

    verdict = evaluate(config, fresh())
    assert verdict.outcome in (Outcome.PASS, Outcome.FAIL), verdict.explanation

    def cold(n: int) -> float:
        evidences = [fresh() for _ in range(n)]  # built outside the timed loop
        start = clock()
        for i in range(n):
            evaluate(config, evidences[i])
            evidences[i] = None  # a worker drops a sample's parsed evidence when done with it
        return clock() - start

    warm_evidence = fresh()

    def warm(n: int) -> float:
        start = clock()
        for _ in range(n):
            evaluate(config, warm_evidence)
        return clock() - start

    return measure(cold, budget, cap=200_000), measure(warm, budget), str(verdict.outcome)


def fmt_rate(rate: float) -> str:
    return f"{rate:,.0f}"


def fmt_us(rate: float) -> str:
    us = 1e6 / rate
    return f"{us:,.1f}" if us < 1000 else f"{us:,.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller timing budget per case")
    parser.add_argument("--only", help="run only cases whose label contains this text")
    parser.add_argument("--growth-only", action="store_true", help="skip the typical-evidence table")
    parser.add_argument(
        "--no-gc",
        action="store_true",
        help="disable the cyclic garbage collector (shows how much of the cost at 10,000 "
        "tool calls is GC passes over freshly parsed objects)",
    )
    args = parser.parse_args()
    if args.no_gc:
        gc.disable()
    budget = 0.15 if args.quick else 0.5

    print(
        f"# python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cpus, "
        f"single process; budget {budget}s per figure; gc {'off' if args.no_gc else 'on'}"
    )
    datasets = {name: build_evidence(name) for name in SIZES}
    cases = [c for c in CASES if not args.only or args.only in c[0]]

    print("\n## Typical evidence (2 KB output, 10 tool calls, 10 trace entries)\n")
    print("| kind (case) | outcome | cold eval/s | warm eval/s | cold µs/eval |")
    print("|---|---|---:|---:|---:|")
    for label, kind, config, key in [] if args.growth_only else cases:
        cold, warm, outcome = bench_case(kind, config, datasets["typical"], key, budget)
        print(f"| {label} | {outcome} | {fmt_rate(cold)} | {fmt_rate(warm)} | {fmt_us(cold)} |", flush=True)

    print(
        "\n## Growing evidence: cold µs per evaluation (S1 10 KB/100 calls/100 trace entries, "
        "S2 ×10, S3 = 1 MB/10,000/10,000)\n"
    )
    print("| kind (case) | S1 µs | S2 µs | S3 µs | S2/S1 | S3/S2 | warm S3 µs |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, kind, config, key in cases:
        costs, warm_s3 = [], 0.0
        for size in ("S1", "S2", "S3"):
            cold, warm, _ = bench_case(kind, config, datasets[size], key, budget)
            costs.append(1e6 / cold)
            warm_s3 = 1e6 / warm
        r1, r2 = costs[1] / costs[0], costs[2] / costs[1]
        print(
            f"| {label} | {costs[0]:,.1f} | {costs[1]:,.1f} | {costs[2]:,.1f} | {r1:.1f}× | {r2:.1f}× | "
            f"{warm_s3:,.1f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
