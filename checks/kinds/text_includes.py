"""text_includes: the output contains a text (case-sensitive unless told otherwise)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from ._common import (
    describe_output,
    excerpt,
    failed,
    indeterminate,
    output_casefold,
    output_text,
    passed,
    quote,
)
from .base import Context, Evidence, FieldSpec, Verdict, object_schema
from .registry import Kind, register


def _clean(config: dict[str, Any], errors: dict[str, str]) -> None:
    if "text" not in errors and config["text"] == "":
        errors["text"] = "must not be empty"


@functools.lru_cache(maxsize=1024)
def _expected(text: str, case_sensitive: bool) -> str:
    return f"the output to include {quote(text)}" + ("" if case_sensitive else " (ignoring case)")


def _evaluate(config: Mapping[str, Any], evidence: Evidence, ctx: Context | None = None) -> Verdict:
    text: str = config["text"]
    case_sensitive: bool = config.get("case_sensitive", True)
    expected = _expected(text, case_sensitive)
    output, problem = output_text(evidence)
    if problem:
        return indeterminate(expected, problem)
    if case_sensitive:
        haystack = output
        position = output.find(text)
    else:
        haystack = output_casefold(evidence)
        position = haystack.find(text.casefold())
    if position < 0:
        return failed(expected, describe_output(output))
    # casefold can change lengths (ß -> ss); show the original text when positions still line up.
    shown = output if len(haystack) == len(output) else haystack
    length = len(text) if case_sensitive else len(text.casefold())
    return passed(
        expected,
        f"it was found at character {position:,}: {excerpt(shown, position, position + length)}",
        details={"position": position},
    )


KIND = register(
    Kind(
        name="text_includes",
        label="Text includes",
        description="The response includes a specific text.",
        fields=(
            FieldSpec(
                "text",
                "Required text",
                "text",
                required=True,
                help="The text that must appear in the response.",
            ),
            FieldSpec(
                "case_sensitive",
                "Case sensitive",
                "bool",
                default=True,
                help="Off: compare ignoring case (Unicode case folding).",
            ),
        ),
        needs=frozenset({"output"}),
        json_schema=object_schema(
            {
                "text": {
                    "type": "string", "minLength": 1, "description": "Text that must appear in the output."
                },
                "case_sensitive": {"type": "boolean", "default": True},
            },
            "text",
        ),
        evaluator=_evaluate,
        cleaner=_clean,
    )
)
