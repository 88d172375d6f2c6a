"""latency: the sample's measured latency (the agent call, in ms) is at most ``max_ms``."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ._common import indeterminate, judged
from .base import Context, Evidence, FieldSpec, Verdict, object_schema
from .registry import Kind, register

MAX_MS = 600_000  # ten minutes: the longest agent timeout (agents' timeout_s is at most 600 s)


def milliseconds(value: float) -> str:
    """``1,234 ms`` or ``1,234.5 ms``: never rounds a value up or down onto a limit silently."""
    text = f"{value:,.3f}".rstrip("0").rstrip(".")
    if float(text.replace(",", "")) != value:
        text = repr(float(value))
    return f"{text} ms"


def _evaluate(config: Mapping[str, Any], evidence: Evidence, ctx: Context | None = None) -> Verdict:
    limit: int = config["max_ms"]
    expected = f"a latency of at most {milliseconds(limit)}"
    latency = evidence.latency_ms
    if latency is None:
        return indeterminate(expected, "the sample has no latency measurement")
    if (
        isinstance(latency, bool)
        or not isinstance(latency, int | float)
        or not math.isfinite(latency)
        or latency < 0
    ):
        return indeterminate(
            expected, f"the recorded latency {latency!r:.40} is not a number of milliseconds"
        )
    return judged(
        latency <= limit, expected, f"it was {milliseconds(latency)}", details={"latency_ms": latency}
    )


KIND = register(
    Kind(
        name="latency",
        label="Latency",
        description="The agent answered within a time limit.",
        fields=(
            FieldSpec(
                "max_ms",
                "Maximum latency (ms)",
                "int",
                required=True,
                help=f"The sample passes when the agent's reply took at most this many milliseconds "
                f"(1 to {MAX_MS:,}).",
                minimum=1,
                maximum=MAX_MS,
            ),
        ),
        needs=frozenset({"latency"}),
        json_schema=object_schema({"max_ms": {"type": "integer", "minimum": 1, "maximum": MAX_MS}}, "max_ms"),
        evaluator=_evaluate,
    )
)
