"""Evaluate a scene's checks on a (frozen) world: one trial's result, ``checks.json`` of WORLDS.md
"Results".

``evaluate(world)`` runs the checks in scene order: ``state`` asks the world (``world.state_check``);
``trace`` uses the check kinds' trace semantics on the world's recorded trace and its worked rule
(status below 400, not a coverage gap, no Slack ``ok: false``, not a GraphQL answer of only errors),
citing the trace ``seq`` of the calls behind it and their ``call`` events;
``judge`` is ``skipped`` without a judge; process checks are ``skipped`` until people arrive; never a
pass for what was not evaluated. A world ended by the call budget gets a required, failing
``call_budget`` result. The trial's outcome is the worst of its required checks (fail > error >
indeterminate > pass; ``skipped`` counts as indeterminate). Pure: no Django, no network.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from checks.kinds import ConfigError, Evidence, Outcome, validate_config
from checks.kinds import evaluate as evaluate_kind

from .budget import CALL_BUDGET_CHECK, OVER_BUDGET_EXPLANATION
from .checks import PROCESS_KINDS, Check

__all__ = ["PROCESS_SKIPPED", "STATUS_OUTCOME", "evaluate", "trial_outcome"]

PROCESS_SKIPPED = "process checks arrive with people (not yet evaluated)"
NO_JUDGE = "no judge is configured (set EVALCONSOLE_JUDGE_API_KEY); a skipped check never passes"
FAULTS_SKIPPED = "fault_resolved arrives with the living world's faults (not yet evaluated)"
STATUS_OUTCOME = {
    "passed": Outcome.PASS,
    "failed": Outcome.FAIL,
    "skipped": Outcome.INDETERMINATE,
    "error": Outcome.ERROR,
}
_SEVERITY = {Outcome.PASS: 0, Outcome.INDETERMINATE: 1, Outcome.ERROR: 2, Outcome.FAIL: 3}
_VERDICT_STATUS = {
    Outcome.PASS: "passed",
    Outcome.FAIL: "failed",
    Outcome.INDETERMINATE: "skipped",
    Outcome.ERROR: "error",
}

# A judge: (rubric, material) -> (passed, explanation); raising makes the check ``error``.
Judge = Callable[[str, Mapping[str, Any]], tuple[bool, str]]


def _result(
    check_id: str,
    required: bool,
    status: str,
    expected: str,
    actual: str,
    explanation: str,
    evidence: tuple[int, ...] | list[int] = (),
    events: tuple[int, ...] | list[int] = (),
) -> dict[str, Any]:
    return {
        "id": check_id,
        "required": required,
        "passed": status == "passed",
        "status": status,
        "expected": expected,
        "actual": actual,
        "explanation": explanation,
        "evidence": sorted({int(s) for s in evidence}),
        "events": sorted({int(n) for n in events}),
    }


def _state(world: Any, check: Check, required: bool) -> dict[str, Any]:
    spec = dict(check.spec or {})
    name = spec.pop("check", "")
    if name == "fault_resolved":
        return _result(
            check.id, required, "skipped", "the fault to be resolved", "not evaluated", FAULTS_SKIPPED
        )
    tool = name.partition(".")[0]
    if tool in world.scene.world and tool not in world.states:
        why = f"the {tool} simulator is not built yet (not evaluated)"
        return _result(check.id, required, "skipped", f"{name} to hold", "not evaluated", why)
    try:
        result = world.state_check(name, spec)
    except NotImplementedError:
        why = f"the {name.partition('.')[0]} simulator cannot evaluate {name} yet"
        return _result(check.id, required, "skipped", f"{name} to hold", "not evaluated", why)
    return _result(
        check.id,
        required,
        "passed" if result.passed else "failed",
        result.expected,
        result.actual,
        result.explanation,
        result.evidence,
        result.events,
    )


def _trace(world: Any, check: Check, required: bool) -> dict[str, Any]:
    spec = check.spec or {}
    try:
        config = validate_config(
            "trace",
            {
                "called": spec.get("called"),
                "not_called": spec.get("not_called"),
                "status": spec.get("status"),
            },
        )
    except ConfigError as exc:  # the scene validator accepted it: a disagreement is ours, not the agent's
        return _result(
            check.id,
            required,
            "error",
            "a valid trace check",
            str(exc),
            f"The trace check is invalid: {exc}.",
        )
    verdict = evaluate_kind("trace", config, Evidence(output="", world=world))
    cited = set(verdict.evidence)
    events = [e.n for e in world.events.of_type("call") if e.data.get("seq") in cited]
    return _result(
        check.id,
        required,
        _VERDICT_STATUS[verdict.outcome],
        verdict.expected,
        verdict.actual,
        verdict.explanation,
        verdict.evidence,
        events,
    )


def _judge(world: Any, check: Check, required: bool, judge: Judge | None) -> dict[str, Any]:
    expected = f"the judge to find that {check.spec}"
    if judge is None:
        return _result(check.id, required, "skipped", expected, "no judge", NO_JUDGE)
    material = {
        "calls": [
            {
                "method": e.method,
                "path": e.path,
                "status": e.status,
                "request": e.request,
                "response": e.response,
            }
            for e in world.trace
        ]
    }
    try:
        ok, reason = judge(str(check.spec), material)
    except Exception as exc:  # noqa: BLE001 - a failed model call is this check's error, never a crash
        why = f"the judge's model call failed ({type(exc).__name__}: {exc})"
        return _result(check.id, required, "error", expected, why, f"Expected a verdict, but {why}.")
    return _result(check.id, required, "passed" if ok else "failed", expected, reason, reason)


def trial_outcome(checks: list[Mapping[str, Any]]) -> Outcome:
    """The worst of the required checks: fail > error > indeterminate (skipped) > pass."""
    outcome = Outcome.PASS
    for item in checks:
        if item["required"]:
            this = STATUS_OUTCOME[item["status"]]
            if _SEVERITY[this] > _SEVERITY[outcome]:
                outcome = this
    return outcome


def evaluate(world: Any, *, trial: int = 1, judge: Judge | None = None) -> dict[str, Any]:
    """``checks.json`` for one trial: ``{"scene", "trial", "outcome", "checks": [...]}`` with every
    check in the scene's order, plus ``call_budget`` when the budget ended the trial. No world id, no
    credential."""
    scene = world.scene
    required_ids = set(scene.required)
    results: list[dict[str, Any]] = []
    for check in scene.checks:
        required = check.id in required_ids
        if check.kind == "state":
            results.append(_state(world, check, required))
        elif check.kind == "trace":
            results.append(_trace(world, check, required))
        elif check.kind == "judge":
            results.append(_judge(world, check, required, judge))
        elif check.kind in PROCESS_KINDS:
            expected = f"the {check.kind} check to hold"
            results.append(_result(check.id, required, "skipped", expected, "not evaluated", PROCESS_SKIPPED))
        else:  # the validator knows every kind; a new one must be taught here before it is run
            why = f"the {check.kind} kind is not evaluated on worlds"
            results.append(_result(check.id, required, "error", "a known check kind", why, why))
    if world.ended == "call_budget":
        calls = [e.seq for e in world.trace]
        results.append(
            _result(
                CALL_BUDGET_CHECK,
                True,
                "failed",
                "at most 500 calls",
                f"{len(calls)} calls",
                OVER_BUDGET_EXPLANATION,
                calls[-1:],
            )
        )
    return {
        "scene": scene.name,
        "trial": trial,
        "outcome": str(trial_outcome(results)),
        "checks": results,
    }
