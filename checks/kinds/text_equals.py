"""text_equals: the output equals an expected text exactly (no trimming, case-sensitive)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from ._common import describe_output, failed, indeterminate, output_text, passed, quote
from .base import Context, Evidence, FieldSpec, Verdict, object_schema
from .registry import Kind, register


def first_difference(a: str, b: str) -> int:
    """Index of the first character where ``a`` and ``b`` differ (length of the common prefix).

    Binary search on slice comparisons done in C. Each step slices half of the remaining range, so the
    total work is linear in the length, with about log2(n) Python-level steps.
    """
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


@functools.lru_cache(maxsize=256)
def _expected(want: str) -> str:
    return "the output to be empty" if not want else f"the output to equal {quote(want)}"


def _evaluate(config: Mapping[str, Any], evidence: Evidence, ctx: Context | None = None) -> Verdict:
    want: str = config["expected"]
    expected = _expected(want)  # str caches its hash, so a long expected text is hashed once
    output, problem = output_text(evidence)
    if problem:
        return indeterminate(expected, problem)
    if output == want:
        return passed(expected, describe_output(output))
    at = first_difference(output, want)
    return failed(
        expected,
        f"{describe_output(output)} (first difference at character {at:,})",
        details={"first_difference": at},
    )


KIND = register(
    Kind(
        name="text_equals",
        label="Text equals",
        description="The response exactly matches an expected value.",
        fields=(
            FieldSpec(
                "expected",
                "Expected value",
                "textarea",
                required=True,
                help="The exact message that should have been sent (compared character for character).",
            ),
        ),
        needs=frozenset({"output"}),
        json_schema=object_schema(
            {"expected": {"type": "string", "description": "The exact expected output."}}, "expected"
        ),
        evaluator=_evaluate,
    )
)
