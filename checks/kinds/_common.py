"""Shared helpers for kind modules: sentence building, previews, output access. Private."""

from __future__ import annotations

import json
from collections.abc import Mapping
from json.encoder import encode_basestring
from typing import Any

from core.jsonvalue import json_type

from .base import Evidence, Outcome, Verdict

PREVIEW_CHARS = 200

_dumps = encode_basestring  # the C encoder: a JSON string literal, non-ASCII kept


def quote(text: str, limit: int = PREVIEW_CHARS) -> str:
    """``text`` as a JSON string literal, cut to ``limit`` characters with its full length noted."""
    if len(text) <= limit:
        return _dumps(text)
    return f'{_dumps(text[:limit])[:-1]}…" ({len(text):,} characters)'


def json_text(value: Any, limit: int = PREVIEW_CHARS) -> str:
    """Compact JSON text of a value for sentences (cut to ``limit`` characters)."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


def plural(count: int, word: str, plural_word: str | None = None) -> str:
    if count == 1:
        return f"1 {word}"
    return f"{count:,} {plural_word or word + 's'}"


def spoken_list(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``: a list as a sentence says it."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def bounded_list(value: Any, errors: dict[str, str], name: str, limit: int, items: str, what: str) -> Any:
    """``value`` when it is a list (or tuple) of at most ``limit`` ``items``; otherwise ``[]``, with the
    problem in ``errors[name]`` unless ``value`` is None (left out)."""
    if value is None:
        return []
    if not isinstance(value, list | tuple):
        errors[name] = f"must be {what}, not {json_type(value)}"
        return []
    if len(value) > limit:
        errors[name] = f"at most {limit} {items}"
        return []
    return value


def passed(
    expected: str, actual: str, evidence: tuple[int, ...] = (), details: Mapping | None = None
) -> Verdict:
    return Verdict(Outcome.PASS, expected, actual, f"Expected {expected}, and {actual}.", evidence, details)


def failed(
    expected: str, actual: str, evidence: tuple[int, ...] = (), details: Mapping | None = None
) -> Verdict:
    return Verdict(Outcome.FAIL, expected, actual, f"Expected {expected}, but {actual}.", evidence, details)


def judged(
    ok: bool, expected: str, actual: str, evidence: tuple[int, ...] = (), details: Mapping | None = None
) -> Verdict:
    return (passed if ok else failed)(expected, actual, evidence, details)


def indeterminate(expected: str, problem: str, details: Mapping | None = None) -> Verdict:
    """Evidence missing or malformed: neither pass nor fail; ``problem`` says why."""
    return Verdict(
        Outcome.INDETERMINATE,
        expected,
        problem,
        f"Expected {expected}, but this could not be determined because {problem}.",
        (),
        details if details is not None else {"problem": problem},
    )


def output_text(evidence: Evidence) -> tuple[str, str]:
    """(output, problem). The protocol layer guarantees a string; anything else is malformed."""
    output = evidence.output
    if isinstance(output, str):
        return output, ""
    if output is None:
        return "", "the agent reported no output"
    return "", f"the agent's output is {json_type(output)}, not text"


def output_utf8(evidence: Evidence) -> bytes:
    """UTF-8 bytes of the (string) output, encoded once per Evidence."""
    memo = evidence.memo()
    data = memo.get("output_utf8")
    if data is None:
        data = memo["output_utf8"] = evidence.output.encode("utf-8", "surrogatepass")
    return data


def output_casefold(evidence: Evidence) -> str:
    memo = evidence.memo()
    data = memo.get("output_casefold")
    if data is None:
        data = memo["output_casefold"] = evidence.output.casefold()
    return data


def describe_output(output: str) -> str:
    """A clause for ``actual``: 'the output was empty' or 'the output was "..."'."""
    return "the output was empty" if not output else f"the output was {quote(output)}"


def excerpt(text: str, start: int, end: int, margin: int = 40) -> str:
    """The text around [start, end) as a quoted excerpt with ellipses where it was cut."""
    lo, hi = max(0, start - margin), min(len(text), end + margin)
    body = _dumps(text[lo:hi])[1:-1]
    return f'"{"…" if lo else ""}{body}{"…" if hi < len(text) else ""}"'
