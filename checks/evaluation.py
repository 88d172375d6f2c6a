"""Evaluate check versions on evidence: shared by run samples, monitors and one-off evaluations.

The kinds are pure; this module turns stored rows into engine inputs and verdicts into CheckResult
field values. `make_context` is the one place that decides what a judge-based kind can use.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from checks import kinds
from checks.kinds import Context, Evidence, Outcome, Verdict


def make_context(*, team_id: int | None = None, cache: dict | None = None) -> Context:
    """The evaluation context for checks of `team_id`.

    `judge` is the team's budgeted judge client (None when no EVALCONSOLE_JUDGE_API_KEY is configured:
    ai_judge checks are then indeterminate, "skipped: no judge key"); `settings` carries the default judge
    model and the context-size table. Pass the same `cache` dict to every evaluation of one run or batch:
    identical judge calls (same model, rubric and conversation) are then made once.
    """
    from checks.judge import judge_for_team, judge_settings

    return Context(
        judge=judge_for_team(team_id), cache={} if cache is None else cache, settings=judge_settings()
    )


def evidence_from(
    *, output: str, messages: Iterable[Mapping] = (), tool_calls: object = None, trace: object = None,
    latency_ms: float | None = None, metadata: Mapping | None = None, world: object = None,
) -> Evidence:
    """``world``: the sample's frozen world (scene tests); state and trace kinds read it."""
    return Evidence(
        output=output or "", messages=tuple(messages or ()), tool_calls=tool_calls, trace=trace,
        latency_ms=latency_ms, metadata=dict(metadata or {}), world=world,
    )


def evaluate_version(kind: str, config: Mapping[str, Any], evidence: Evidence, ctx: Context) -> Verdict:
    """Never raises: an unknown kind or a bug in a kind becomes an `error` verdict with the reason."""
    try:
        return kinds.evaluate(kind, config, evidence, ctx)
    except Exception as exc:  # noqa: BLE001 - a verdict must always be recorded
        return Verdict(
            outcome=Outcome.ERROR, expected="", actual="",
            explanation=f"The check could not be evaluated: {type(exc).__name__}: {exc}.",
        )


def result_fields(verdict: Verdict) -> dict[str, Any]:
    """CheckResult column values for a verdict."""
    data = verdict.as_dict()
    return {
        "outcome": data["outcome"],
        "expected": data["expected"],
        "actual": data["actual"],
        "explanation": data["explanation"],
        "evidence": data["evidence"],
        "details": data["details"],
    }
