"""tool_usage: how often, or whether first/last, a tool was called (optionally with given input).

Every attempted call counts, whatever its status (requested, succeeded, failed): the check proves a
call was attempted, not that it worked. With ``node`` set, only calls reported in that workforce
node count, and "first"/"last" refer to that node's calls. A missing or malformed ``toolCalls`` is
INDETERMINATE; ``[]`` is determinate (no calls).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._common import failed, indeterminate, judged, passed, plural
from .base import Context, Evidence, FieldSpec, Verdict, object_schema
from .conditions import OPS, clean_inputs, condition_met, describe_condition
from .evidence import tool_calls_of
from .registry import Kind, register

MODES = ("at_least", "at_most", "exactly", "first", "last")
COUNTING_MODES = ("at_least", "at_most", "exactly")
MAX_COUNT = 1000  # far above any conversation's tool calls; keeps stored configs sane
_MODE_TEXT = {"at_least": "at least", "at_most": "at most", "exactly": "exactly"}


def _clean(config: dict[str, Any], errors: dict[str, str]) -> None:
    if "tool" not in errors and not config["tool"].strip():
        errors["tool"] = "must not be empty"
    mode = config["mode"]
    if "mode" not in errors and "count" not in errors:
        if mode in COUNTING_MODES:
            if config["count"] is None:
                errors["count"] = f"this field is required for mode {mode}"
        else:
            config["count"] = None  # first/last take no count; a leftover form value is dropped
    config["inputs"] = clean_inputs(config["inputs"], errors)


def subject(config: Mapping[str, Any]) -> str:
    """E.g. ``lookup_order with orderId equal to "EC-1042"``."""
    text = config["tool"]
    inputs = config.get("inputs") or ()
    if inputs:
        text += " with " + " and ".join(describe_condition(c) for c in inputs)
    return text


def _evaluate(config: Mapping[str, Any], evidence: Evidence, ctx: Context | None = None) -> Verdict:
    tool: str = config["tool"]
    mode: str = config["mode"]
    node: str | None = config.get("node")
    inputs = config.get("inputs") or ()
    where = f" in node {node}" if node else ""
    what = subject(config)
    count = config.get("count")
    if mode in COUNTING_MODES:
        expected = f"{what} to be called{where} {_MODE_TEXT[mode]} {plural(count, 'time')}"
    else:
        expected = f"the {'first' if mode == 'first' else 'last'} tool call{where} to be {what}"

    parsed = tool_calls_of(evidence)
    if parsed.problem:
        return indeterminate(expected, parsed.problem)
    calls = parsed.calls if not node else tuple(c for c in parsed.calls if c.node == node)

    if mode in COUNTING_MODES:
        named = [c for c in calls if c.name == tool]
        hits = tuple(c.index for c in named if all(condition_met(cond, c.input) for cond in inputs))
        n = len(hits)
        ok = n >= count if mode == "at_least" else (n <= count if mode == "at_most" else n == count)
        actual = f"it was called {plural(n, 'time')}"
        if inputs and len(named) != n:
            actual += f" with matching input ({plural(len(named), 'call')} of {tool} in total)"
        return judged(ok, expected, actual, hits, {"count": n, "calls_of_tool": len(named)})

    if not calls:
        return failed(expected, f"no tools were called{where}")
    call = calls[0] if mode == "first" else calls[-1]
    if call.name != tool:
        return failed(expected, f"it was {call.name} (tool call {call.index})", (call.index,))
    unmet = [cond for cond in inputs if not condition_met(cond, call.input)]
    if unmet:
        return failed(
            expected,
            f"it was {tool} (tool call {call.index}) without "
            f"{' and '.join(describe_condition(c) for c in unmet)}",
            (call.index,),
        )
    return passed(expected, f"tool call {call.index} was {what}", (call.index,))


KIND = register(
    Kind(
        name="tool_usage",
        label="Tool usage",
        description="A specific tool was used (at least / at most / exactly N times, or first / last).",
        fields=(
            FieldSpec(
                "tool", "Tool", "text", required=True, help="Name of the tool, as the agent reports it."
            ),
            FieldSpec(
                "mode",
                "When the tool is used by the agent",
                "choice",
                default="at_least",
                choices=MODES,
                help=(
                    "At least, At most, Exactly (compare with the number of times), Used first or Used last."
                ),
            ),
            FieldSpec(
                "count",
                "Number of times",
                "int",
                help=f"Required for at least / at most / exactly; 0 to {MAX_COUNT:,}. "
                "Every attempted call counts.",
                minimum=0,
                maximum=MAX_COUNT,
            ),
            FieldSpec(
                "inputs",
                "Input conditions",
                "list",
                default=[],
                help='Each {"field": dot path, "op": equals|contains|has_value|matches, "value": ...}; '
                "a call counts only if its input meets every condition.",
            ),
            FieldSpec(
                "node", "Workforce node", "text", help="Only count calls made in this node of a workforce."
            ),
        ),
        needs=frozenset({"tool_calls"}),
        json_schema=object_schema(
            {
                "tool": {"type": "string", "minLength": 1},
                "mode": {"type": "string", "enum": list(MODES), "default": "at_least"},
                "count": {
                    "type": ["integer", "null"],
                    "minimum": 0,
                    "maximum": MAX_COUNT,
                    "description": "Required for at_least, at_most and exactly.",
                },
                "inputs": {
                    "type": "array",
                    "maxItems": 20,
                    "default": [],
                    "items": object_schema(
                        {
                            "field": {
                                "type": "string",
                                "minLength": 1,
                                "description": "Dot path, e.g. order.items.0.sku",
                            },
                            "op": {"type": "string", "enum": list(OPS)},
                            "value": {
                                "description": (
                                    "Any JSON value; a regex string for matches; unused by has_value."
                                )
                            },
                        },
                        "field",
                        "op",
                    ),
                },
                "node": {
                    "type": ["string", "null"],
                    "description": "Workforce node the calls must come from.",
                },
            },
            "tool",
        ),
        evaluator=_evaluate,
        cleaner=_clean,
    )
)
