"""tool_sequence: these tools were called in this order (other calls may come between them).

Matching is a greedy, leftmost subsequence search over the calls (linear). Every attempted call
counts, whatever its status. With ``node`` set, only that workforce node's calls are considered.
A name may repeat (``[search, search]`` means search was called at least twice).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._common import indeterminate, json_type, judged
from .base import Context, Evidence, FieldSpec, Verdict, object_schema
from .evidence import tool_calls_of
from .registry import Kind, register

MAX_TOOLS = 50
_SHOWN_CALLS = 20


def _clean(config: dict[str, Any], errors: dict[str, str]) -> None:
    tools = config["tools"]
    if "tools" in errors or tools is None:
        return
    if not isinstance(tools, list | tuple):
        errors["tools"] = f"must be a list of tool names, not {json_type(tools)}"
        return
    if len(tools) < 2:
        errors["tools"] = "needs at least 2 tool names (use tool_usage for a single tool)"
        return
    if len(tools) > MAX_TOOLS:
        errors["tools"] = f"at most {MAX_TOOLS} tool names"
        return
    for i, name in enumerate(tools):
        if not isinstance(name, str) or not name.strip():
            errors[f"tools.{i}"] = "must be a non-empty tool name"
    config["tools"] = list(tools)


def _names(calls: tuple, limit: int = _SHOWN_CALLS) -> str:
    names = ", ".join(c.name for c in calls[:limit])
    if len(calls) > limit:
        names += f" and {len(calls) - limit:,} more"
    return names


def _evaluate(config: Mapping[str, Any], evidence: Evidence, ctx: Context | None = None) -> Verdict:
    tools: list[str] = list(config["tools"])
    node: str | None = config.get("node")
    where = f" in node {node}" if node else ""
    expected = f"the tools {' → '.join(tools)} to be called in this order{where}"
    parsed = tool_calls_of(evidence)
    if parsed.problem:
        return indeterminate(expected, parsed.problem)
    calls = parsed.calls if not node else tuple(c for c in parsed.calls if c.node == node)

    found: list[int] = []
    want = tools[0]
    for call in calls:
        if call.name == want:
            found.append(call.index)
            if len(found) == len(tools):
                break
            want = tools[len(found)]
    if len(found) == len(tools):
        indexes = ", ".join(str(i) for i in found)
        return judged(True, expected, f"they were (tool calls {indexes})", tuple(found))
    if not calls:
        actual = f"no tools were called{where}"
    elif not found:
        actual = f"{tools[0]} was never called; the calls were {_names(calls)}"
    else:
        actual = (
            f"no call of {want} followed {tools[len(found) - 1]} (tool call {found[-1]}); "
            f"the calls were {_names(calls)}"
        )
    return judged(False, expected, actual, tuple(found), {"matched": len(found)})


KIND = register(
    Kind(
        name="tool_sequence",
        label="Tool sequence",
        description="Tools were called in a given order; other calls may come between them.",
        fields=(
            FieldSpec(
                "tools",
                "Tools, in order",
                "list",
                required=True,
                help="At least two tool names; each must be called after the previous one.",
            ),
            FieldSpec(
                "node", "Workforce node", "text", help="Only consider calls made in this node of a workforce."
            ),
        ),
        needs=frozenset({"tool_calls"}),
        json_schema=object_schema(
            {
                "tools": {
                    "type": "array",
                    "items": {"type": "string", "minLength": 1},
                    "minItems": 2,
                    "maxItems": MAX_TOOLS,
                },
                "node": {"type": ["string", "null"]},
            },
            "tools",
        ),
        evaluator=_evaluate,
        cleaner=_clean,
    )
)
