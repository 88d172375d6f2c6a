"""text_matches: a regular expression (RE2, linear time) is found somewhere in the output."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from . import regex
from ._common import describe_output, excerpt, failed, indeterminate, output_text, output_utf8, passed, quote
from .base import Context, Evidence, FieldSpec, Verdict, object_schema
from .registry import Kind, register


def _clean(config: dict[str, Any], errors: dict[str, str]) -> None:
    if "pattern" in errors or "case_sensitive" in errors:
        return
    problem = regex.pattern_problem(config["pattern"], config["case_sensitive"])
    if problem:
        errors["pattern"] = problem


@functools.lru_cache(maxsize=1024)
def _expected(pattern: str, case_sensitive: bool) -> str:
    return f"the output to match the pattern {regex.show(pattern)}" + (
        "" if case_sensitive else " (ignoring case)"
    )


def _evaluate(config: Mapping[str, Any], evidence: Evidence, ctx: Context | None = None) -> Verdict:
    pattern: str = config["pattern"]
    case_sensitive: bool = config.get("case_sensitive", True)
    expected = _expected(pattern, case_sensitive)
    output, problem = output_text(evidence)
    if problem:
        return indeterminate(expected, problem)
    span = regex.search(pattern, output, case_sensitive, output_utf8(evidence))
    if span is None:
        return failed(expected, f"nothing matched; {describe_output(output)}")
    start, end = span
    return passed(
        expected,
        f"it matched {quote(output[start:end], 80)} at character {start:,}: {excerpt(output, start, end)}",
        details={"start": start, "end": end},
    )


KIND = register(
    Kind(
        name="text_matches",
        label="Text matches pattern",
        description="A regular expression is found in the response.",
        fields=(
            FieldSpec(
                "pattern",
                "Pattern",
                "text",
                required=True,
                help="A regular expression searched anywhere in the response; anchor with ^…$. "
                "RE2 syntax: no backreferences or lookaround.",
            ),
            FieldSpec("case_sensitive", "Case sensitive", "bool", default=True),
        ),
        needs=frozenset({"output"}),
        json_schema=object_schema(
            {
                "pattern": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": regex.MAX_PATTERN_CHARS,
                    "description": "RE2 regular expression searched in the output.",
                },
                "case_sensitive": {"type": "boolean", "default": True},
            },
            "pattern",
        ),
        evaluator=_evaluate,
        cleaner=_clean,
    )
)
