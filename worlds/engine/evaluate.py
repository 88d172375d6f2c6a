"""Evaluate a scene's checks on a (frozen) world: one trial's result, ``checks.json`` of WORLDS.md
"Results".

``evaluate(world)`` runs the checks in scene order: ``state`` asks the world (``world.state_check``);
``trace`` uses the check kinds' trace semantics on the world's recorded trace and its worked rule
(status below 400, not a coverage gap, no Slack ``ok: false``, not a GraphQL answer of only errors),
citing the trace ``seq`` of the calls behind it and their ``call`` events;
``judge`` asks a judge (:func:`kind_judge` over any judge client: the console's, or the CLI's built
from the environment) with :func:`judge_material`, and is ``skipped`` without one (never a pass for
what was not evaluated); process checks read the people's records and the events (:mod:`.process`).
A world ended by the call budget gets a required, failing ``call_budget`` result. The trial's outcome
is the worst of its required checks (fail > error > indeterminate > pass; ``skipped`` counts as
indeterminate). Pure: no Django; the network only through the judge client given.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from checks.kinds import ConfigError, Context, Evidence, Outcome, validate_config
from checks.kinds import evaluate as evaluate_kind

from .budget import CALL_BUDGET_CHECK, OVER_BUDGET_EXPLANATION
from .checks import PROCESS_KINDS, Check
from .process import evaluate_process

__all__ = [
    "STATUS_OUTCOME",
    "evaluate",
    "judge_material",
    "kind_judge",
    "trial_outcome",
]

NO_JUDGE = "no judge is configured (set EVALCONSOLE_JUDGE_API_KEY); a skipped check never passes"
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
    tool = name.partition(".")[0]
    if tool in world.scene.world and tool not in world.states:
        why = f"the {tool} simulator is not built yet (not evaluated)"
        return _result(check.id, required, "skipped", f"{name} to hold", "not evaluated", why)
    try:
        result = world.state_check(name, spec)
    except NotImplementedError:
        why = f"the {name.partition('.')[0]} simulator cannot evaluate {name} yet"
        return _result(check.id, required, "skipped", f"{name} to hold", "not evaluated", why)
    return _judged(check, required, result)


def _process(world: Any, check: Check, required: bool) -> dict[str, Any]:
    return _judged(check, required, evaluate_process(world, check.kind, check.spec))


def _judged(check: Check, required: bool, result: Any) -> dict[str, Any]:
    """A world's answer (a StateResult) as the check's result."""
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


def judge_material(world: Any) -> dict[str, Any]:
    """What a judge check sees (WORLDS.md "Checks"): the agent's calls to the tools (method, path,
    status, bodies; the trace never holds credentials) and the final Slack messages written during the
    trial (never the seed), by conversation. Not the seed, not the other checks, not the world's id."""
    calls = [
        {
            "seq": e.seq,
            "tool": e.tool,
            "method": e.method,
            "path": e.path,
            "status": e.status,
            "request": e.request,
            "response": e.response,
        }
        for e in world.trace
    ]
    material: dict[str, Any] = {"calls": calls}
    if "slack" in world.states:
        messages = []
        for name, conversation in world.simulator("slack").final_state()["channels"].items():
            for m in conversation["messages"]:
                if m.get("seed") or m.get("deleted"):
                    continue
                item = {"conversation": name, "from": m["from"], "text": m["text"]}
                if m.get("thread_ts") and m["thread_ts"] != m["ts"]:
                    item["in_thread"] = True
                messages.append(item)
        material["slack_messages"] = messages
    return material


def _judge(world: Any, check: Check, required: bool, judge: Judge | None) -> dict[str, Any]:
    expected = f"the judge to find that {check.spec}"
    if judge is None:
        return _result(check.id, required, "skipped", expected, "no judge", NO_JUDGE)
    try:
        ok, reason = judge(str(check.spec), judge_material(world))
    except Exception as exc:  # noqa: BLE001 - a failed model call is this check's error, never a crash
        why = f"the judge's model call failed ({type(exc).__name__}: {exc})"
        return _result(check.id, required, "error", expected, why, f"Expected a verdict, but {why}.")
    return _result(check.id, required, "passed" if ok else "failed", expected, reason, reason)


JUDGE_MATERIAL_CHARS = 60_000


class JudgeFailed(Exception):
    """The judge gave no verdict (its model call failed, or it answered no pass or fail)."""


def kind_judge(
    client: Any, *, model: str | None, task: str, settings: Mapping[str, Any], cache=None
) -> Judge:
    """A :data:`Judge` over a judge client (``checks.kinds.judging``: the console's budgeted one, or
    ``checks.judge.OpenAIJudge`` built by the CLI), through the ``ai_judge`` check kind (one vote): the
    rubric, the scene's task as the user's message, and the material as JSON (cut at 60,000
    characters). ``settings``: the ai_judge kind's (``judge_model``, context sizes). A verdict that
    is neither pass nor fail raises :class:`JudgeFailed` (the check is then ``error``)."""
    ctx = Context(judge=client, cache={} if cache is None else cache, settings=settings)

    def judge(rubric: str, material: Mapping[str, Any]) -> tuple[bool, str]:
        text = json.dumps(material, ensure_ascii=False, default=str)[:JUDGE_MATERIAL_CHARS]
        evidence = Evidence(
            output=f"The agent's calls to the world's tools and the final Slack messages (JSON):\n{text}",
            messages=({"role": "user", "content": task},),
        )
        config = validate_config(
            "ai_judge", {"prompt": rubric, "votes": 1, **({"model": model} if model else {})}
        )
        verdict = evaluate_kind("ai_judge", config, evidence, ctx)
        if verdict.outcome == Outcome.PASS:
            return True, verdict.explanation
        if verdict.outcome == Outcome.FAIL:
            return False, verdict.explanation
        raise JudgeFailed(verdict.actual or verdict.explanation or "the judge gave no verdict")

    return judge


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
            results.append(_process(world, check, required))
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
