"""trace: conditions on the agent's own API calls (the ``trace`` it reports, or, for a sample played
in a world, the world's recorded trace: what really happened, cited by ``seq``).

- ``called`` (pattern or list): every pattern matches at least one WORKING call (an HTTP status
  below 400, and not refused by the tool: a coverage gap, Slack ``ok: false`` or a GraphQL answer
  of only errors); with ``status: any``, any attempt counts, failed ones included. A list does not
  check order (use tool_sequence-style checks for order).
- ``not_called`` (pattern or list): no call matches any pattern, failed attempts included.
- Set at least one; with both, both must hold.

A pattern is ``"METHOD /path"`` or ``"*"`` (any call). The method ignores case and ``*`` accepts any
method. The path is matched whole against the recorded path without its query string; ``*`` in the
path matches any run of characters, ``/`` included. Matching is a linear glob matcher (no regex).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, NamedTuple

from ._common import bounded_list, indeterminate, json_text, json_type, judged, plural, spoken_list
from .base import Context, Evidence, FieldSpec, Verdict
from .evidence import TraceEntry, trace_of
from .registry import Kind, register

MAX_PATTERNS = 50
MAX_PATTERN_CHARS = 1000
_SHOWN = 5


class Pattern(NamedTuple):
    text: str
    method: str | None  # upper-cased; None = any method
    parts: tuple[str, ...] | None  # path split on "*"; None = any path

    def matches(self, entry: TraceEntry) -> bool:
        if self.method is not None and entry.method != self.method:
            return False
        return self.parts is None or glob_match(self.parts, entry.path)  # entry paths start with "/"


def glob_match(parts: tuple[str, ...], text: str) -> bool:
    """Whole-string match of a glob whose only wildcard is ``*`` (split into ``parts``).

    Greedy leftmost placement of the middle parts is exact for ``*``-only globs, so this is linear
    in len(text) per part, with no backtracking.
    """
    first = parts[0]
    if len(parts) == 1:
        return text == first
    last = parts[-1]
    if len(text) < len(first) + len(last) or not text.startswith(first) or not text.endswith(last):
        return False
    position, end = len(first), len(text) - len(last)
    for middle in parts[1:-1]:
        if not middle:
            continue
        found = text.find(middle, position, end)
        if found < 0:
            return False
        position = found + len(middle)
    return True


def _normal_path(path: str) -> str:
    return path if path.startswith("/") else "/" + path


def pattern_problem(pattern: object) -> str:
    if not isinstance(pattern, str):
        return f'must be a string like "GET /orders/*" or "*", not {json_type(pattern)}'
    text = pattern.strip()
    if text == "*":
        return ""
    if len(text) > MAX_PATTERN_CHARS:
        return f"is too long ({len(text):,} characters; at most {MAX_PATTERN_CHARS:,})"
    pieces = text.split(None, 1)
    if len(pieces) != 2:
        return f'{pattern!r} must be "METHOD /path" (e.g. "POST /repos/*/issues") or "*"'
    method, path = pieces
    if method != "*" and not (method.isascii() and method.replace("-", "").isalpha()):
        return f"{pattern!r}: the method must be an HTTP method such as GET, or *"
    if any(ch.isspace() for ch in path):
        return f"{pattern!r}: the path must not contain spaces"
    if "?" in path:
        return f"{pattern!r}: paths are matched without their query string; remove the part from ?"
    return ""


@functools.lru_cache(maxsize=2048)
def compile_pattern(pattern: str) -> Pattern:
    text = pattern.strip()
    if text == "*":
        return Pattern(pattern, None, None)
    method, path = text.split(None, 1)
    if path == "*" or set(path) == {"*"}:
        parts = None
    else:
        parts = tuple(_normal_path(path).split("*")) if not path.startswith("*") else tuple(path.split("*"))
    return Pattern(pattern, None if method == "*" else method.upper(), parts)


def _clean_patterns(name: str, value: Any, errors: dict[str, str]) -> list[str]:
    if isinstance(value, str):
        value = [value]
    cleaned = []
    patterns = bounded_list(value, errors, name, MAX_PATTERNS, "patterns", "a pattern or a list of patterns")
    for i, pattern in enumerate(patterns):
        problem = pattern_problem(pattern)
        if problem:
            errors[f"{name}.{i}"] = problem
        else:
            cleaned.append(pattern.strip())
    return cleaned


def _clean(config: dict[str, Any], errors: dict[str, str]) -> None:
    config["called"] = _clean_patterns("called", config["called"], errors)
    config["not_called"] = _clean_patterns("not_called", config["not_called"], errors)
    if (
        not config["called"]
        and not config["not_called"]
        and not any(key.startswith(("called", "not_called")) for key in errors)
    ):
        errors["called"] = "set called, not_called or both"
    if (
        config["status"] == "any"
        and not config["called"]
        and not any(key.startswith("called") for key in errors)
    ):
        errors["status"] = "any only applies together with called patterns"


def _quoted(patterns: list[str]) -> str:
    return spoken_list([json_text(p, 80) for p in patterns])


def _entries(entries: list[TraceEntry]) -> str:
    """E.g. ``trace entries 1 (POST /a → 500), 4 (POST /a → no response)``."""
    text = ", ".join(
        f"{e.index} ({e.method} {e.path} → {e.status if e.status is not None else 'no response'}"
        f"{', refused by the tool' if e.refused else ''})"
        for e in entries[:_SHOWN]
    )
    if len(entries) > _SHOWN:
        text += f" and {len(entries) - _SHOWN:,} more"
    return ("trace entry " if len(entries) == 1 else "trace entries ") + text


@functools.lru_cache(maxsize=1024)
def _expected(
    called: tuple[str, ...], not_called: tuple[str, ...], any_status: bool, world: bool = False
) -> str:
    wants = []
    if called:
        working = (
            "a working call (status below 400, no coverage gap, no Slack ok: false, no GraphQL errors only)"
            if world
            else "a working call (status below 400)"
        )
        kind = "a call (any status)" if any_status else working
        wants.append(f"{kind} matching {'each of ' if len(called) > 1 else ''}{_quoted(list(called))}")
    if not_called:
        wants.append(
            f"no call matching {'any of ' if len(not_called) > 1 else ''}{_quoted(list(not_called))}"
        )
    return "the agent to make " + " and ".join(wants)


def _evaluate(config: Mapping[str, Any], evidence: Evidence, ctx: Context | None = None) -> Verdict:
    called: tuple[str, ...] = tuple(config.get("called") or ())
    not_called: tuple[str, ...] = tuple(config.get("not_called") or ())
    any_status = config.get("status") == "any"
    expected = _expected(called, not_called, any_status, getattr(evidence, "world", None) is not None)

    parsed = trace_of(evidence)
    if parsed.problem:
        return indeterminate(expected, parsed.problem)
    entries = parsed.entries

    good: set[int] = set()
    problems: list[str] = []
    bad: set[int] = set()
    missing_patterns: list[str] = []
    for text in called:
        pattern = compile_pattern(text)
        hits = [e for e in entries if pattern.matches(e)]
        usable = hits if any_status else [e for e in hits if e.worked]
        if usable:
            good.update(e.index for e in usable)
        else:
            missing_patterns.append(text)
            failed_attempts = [e for e in hits if not e.worked]
            bad.update(e.index for e in failed_attempts)
            problem = f"no {'call' if any_status else 'working call'} matched {json_text(text, 80)}"
            if failed_attempts:
                problem += f" ({plural(len(failed_attempts), 'failed attempt')}: {_entries(failed_attempts)})"
            problems.append(problem)
    forbidden = [compile_pattern(text) for text in not_called]
    violations: list[TraceEntry] = []
    violated: list[str] = []
    if forbidden:
        for entry in entries:
            for pattern in forbidden:
                if pattern.matches(entry):
                    violations.append(entry)
                    if pattern.text not in violated:
                        violated.append(pattern.text)
                    break
    if violations:
        bad.update(e.index for e in violations)
        problems.append(
            f"{plural(len(violations), 'call')} matched {_quoted(violated)}: {_entries(violations)}"
        )

    details = {"missing": missing_patterns, "violated": violated}
    if problems:
        return judged(False, expected, " and ".join(problems), tuple(sorted(bad)), details)
    parts = []
    if called:
        shown = ", ".join(str(i) for i in sorted(good)[:20]) + (" …" if len(good) > 20 else "")
        parts.append(
            f"{'every pattern was' if len(called) > 1 else 'it was'} matched by "
            f"{'trace entry' if len(good) == 1 else 'trace entries'} {shown}"
        )
    if not_called:
        parts.append(
            f"none of {plural(len(entries), 'call')} matched the forbidden "
            f"{'patterns' if len(not_called) > 1 else 'pattern'}"
        )
    return judged(True, expected, " and ".join(parts), tuple(sorted(good)), details)


KIND = register(
    Kind(
        name="trace",
        label="Trace (API calls)",
        description="The agent made (or did not make) specific API calls.",
        fields=(
            FieldSpec(
                "called",
                "Called",
                "list",
                default=[],
                help='Patterns like "POST /repos/*/issues" or "*"; each needs a working call (status < 400).',
            ),
            FieldSpec(
                "not_called",
                "Not called",
                "list",
                default=[],
                help="No call may match any of these patterns, failed attempts included.",
            ),
            FieldSpec(
                "status",
                "Count failed attempts for Called",
                "choice",
                choices=("any",),
                help="any: a failed attempt also satisfies a Called pattern.",
            ),
        ),
        needs=frozenset({"trace"}),
        json_schema={
            "type": "object",
            "properties": {
                "called": {
                    "oneOf": [
                        {"type": "string"},
                        {"type": "array", "items": {"type": "string"}, "maxItems": MAX_PATTERNS},
                    ],
                    "description": 'Pattern "METHOD /path" (* spans /) or "*", or a list of them.',
                },
                "not_called": {
                    "oneOf": [
                        {"type": "string"},
                        {"type": "array", "items": {"type": "string"}, "maxItems": MAX_PATTERNS},
                    ]
                },
                "status": {"type": ["string", "null"], "enum": ["any", None]},
            },
            "anyOf": [{"required": ["called"]}, {"required": ["not_called"]}],
            "additionalProperties": False,
        },
        evaluator=_evaluate,
        cleaner=_clean,
    )
)
