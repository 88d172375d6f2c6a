"""A/B: CPU time to parse agent-reported toolCalls and trace (checks/kinds/evidence.py) in two trees.

    PYTHONPATH=$PWD .venv/bin/python bench/kinds/ab_evidence_parse.py /tmp/base-tree [--items 200]

Loads checks/kinds/evidence.py of the other tree beside this tree's, in one process, and times
``parse_tool_calls`` + ``parse_trace`` of ``--items`` valid items each, alternating A and B per round
(process CPU time, ``time.process_time``), so both sides see the same machine load. Prints the
median microseconds per parse pair of each side and their ratio, with the load average.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time
from pathlib import Path

import checks.kinds.evidence as this_tree


def _other(tree: Path):
    """The other tree's evidence module, importing its relative imports from this tree's package."""
    spec = importlib.util.spec_from_file_location(
        "checks.kinds._ab_evidence", tree / "checks" / "kinds" / "evidence.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("other", type=Path, help="the other tree (A); this tree is B")
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--repeat", type=int, default=300)
    args = parser.parse_args()
    n = args.items
    calls = [{"name": f"tool{i}", "status": "succeeded", "input": {"a": i}, "node": "n"} for i in range(n)]
    entry = {"method": "GET", "status": 200, "tool": "slack", "slack_ok": True}
    trace = [{**entry, "path": f"/a/{i}?x=1"} for i in range(n)]
    sides = {"A": _other(args.other), "B": this_tree}
    for module in sides.values():  # same answers before timing
        assert module.parse_tool_calls(calls).problem == "" and module.parse_trace(trace).problem == ""
    spent: dict[str, list[float]] = {"A": [], "B": []}
    for round_ in range(args.rounds):
        for name in ("A", "B") if round_ % 2 == 0 else ("B", "A"):
            module = sides[name]
            t = time.process_time()
            for _ in range(args.repeat):
                module.parse_tool_calls(calls)
                module.parse_trace(trace)
            spent[name].append((time.process_time() - t) / args.repeat * 1e6)
    a, b = statistics.median(spent["A"]), statistics.median(spent["B"])
    print(f"{n} tool calls + {n} trace entries, median CPU us per parse pair over {args.rounds} rounds:")
    print(f"  A {args.other}: {a:,.1f}   B this tree: {b:,.1f}   B/A {b / a:.2f}x")
    print(f"  load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
