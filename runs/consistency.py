"""Consistency figures as pages, the API and the CLI show them (pure: no Django imports).

The estimators are in runs/outcomes.py (``pass_hat_k``, ``pass_at_k``, ``consistency``,
``run_consistency``). Here they are read from what a run keeps: its stored summary (the per-scenario
passed / failed counts the workers keep current), so no page or endpoint reads samples to show them
and the figures of a run written before they existed come out the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

from runs.outcomes import Consistency, consistency, run_consistency

__all__ = [
    "Figures",
    "columns",
    "batch_figures",
    "figure_text",
    "regressed_ks",
    "shown_ks",
    "summary_figures",
]


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _scenario_counts(summary: Any, scenario_count: int | None = None) -> list[tuple[int, int]]:
    """(passed, failed) per scenario index from a stored RunSummary.as_dict(); a scenario missing from
    it has none. ``scenario_count`` (the test version's) pads or cuts the list to that many."""
    rows = summary.get("scenarios", []) if isinstance(summary, Mapping) else []
    counted = {
        s["index"]: (_count(s.get("passed")), _count(s.get("failed")))
        for s in rows
        if isinstance(s, Mapping) and isinstance(s.get("index"), int)
    }
    size = scenario_count if scenario_count is not None else (max(counted) + 1 if counted else 0)
    return [counted.get(i, (0, 0)) for i in range(size)]


@dataclass(frozen=True)
class Figures:
    """A run's (or a batch's) consistency: one Consistency per scenario and their mean."""

    scenarios: tuple[Consistency, ...]
    run: Consistency

    def as_dict(self) -> dict[str, Any]:
        return {
            "run": self.run.as_dict(),
            "scenarios": [s.as_dict() for s in self.scenarios],
        }


def summary_figures(summary: Any, scenario_count: int | None = None) -> Figures:
    """The figures of one run from its stored summary."""
    return counts_figures(tuple(_scenario_counts(summary, scenario_count)))


@lru_cache(maxsize=4096)
def counts_figures(counts: tuple[tuple[int, int], ...]) -> Figures:
    """The figures of (passed, failed) per scenario. Kept per distinct counts: the exact fractions cost
    about 0.3 ms a run, and a list of 50 runs has few distinct counts. Callers only read the result."""
    scenarios = tuple(consistency(p, f) for p, f in counts)
    return Figures(scenarios=scenarios, run=run_consistency(scenarios))


def batch_figures(summaries: Iterable[Any], scenario_count: int) -> Figures:
    """A batch of runs of one test (trials): each scenario's samples of every run pooled, then the
    same estimators (so pass^k of a scenario with 3 runs × 5 samples goes up to k = 15)."""
    passed = [0] * scenario_count
    failed = [0] * scenario_count
    for summary in summaries:
        for index, (p, f) in enumerate(_scenario_counts(summary, scenario_count)):
            passed[index] += p
            failed[index] += f
    scenarios = tuple(consistency(p, f) for p, f in zip(passed, failed, strict=True))
    return Figures(scenarios=scenarios, run=run_consistency(scenarios))


def figure_text(value: Fraction | float | None) -> str:
    """A figure for reading: up to two decimals, no trailing zeros ("0.6", "1", "0.33"); "—" for none."""
    if value is None:
        return "—"
    text = f"{float(value):.2f}".rstrip("0").rstrip(".")
    return text or "0"


def regressed_ks(before: Consistency, after: Consistency) -> list[int]:
    """The k (both sides have a value) at which pass^k dropped from before to after."""
    return [
        k
        for k in sorted(set(before.pass_hat) & set(after.pass_hat))
        if after.pass_hat[k] < before.pass_hat[k]
    ]


def shown_ks(k_max: int, first: int = 10) -> list[int]:
    """The k a table shows: 1..first, then k_max (a batch pools many samples: k_max may be 100)."""
    return sorted(set(range(1, min(k_max, first) + 1)) | ({k_max} if k_max > 0 else set()))


def columns(figures: Sequence[Consistency], k_max: int | Sequence[int]) -> list[dict[str, Any]]:
    """Cells (k = 1..k_max, or the given ks) of each Consistency for a table: texts and exact fractions."""
    ks = range(1, k_max + 1) if isinstance(k_max, int) else list(k_max)
    return [
        {
            "determinate": f.determinate,
            "cells": [
                {
                    "k": k,
                    "hat": figure_text(f.pass_hat.get(k)),
                    "at": figure_text(f.pass_at.get(k)),
                    "hat_exact": str(f.pass_hat[k]) if k in f.pass_hat else "",
                    "at_exact": str(f.pass_at[k]) if k in f.pass_at else "",
                }
                for k in ks
            ],
        }
        for f in figures
    ]
