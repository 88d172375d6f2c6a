"""Linear-time regular expressions (google-re2) shared by every kind that takes a pattern.

Patterns are compiled once per (pattern, case_sensitive) and searched on UTF-8 bytes, which skips the
per-call str-to-bytes bookkeeping of the re2 str API. RE2 has no backreferences or lookaround;
such a pattern is rejected when the check is saved, with the engine's reason.
"""

from __future__ import annotations

import functools

import re2

MAX_PATTERN_CHARS = 2000

__all__ = ["MAX_PATTERN_CHARS", "compile_pattern", "pattern_problem", "search", "show"]


def _options(case_sensitive: bool) -> re2.Options:
    options = re2.Options()
    options.log_errors = False  # the reason is reported to the user, not to stderr
    options.case_sensitive = case_sensitive
    return options


@functools.lru_cache(maxsize=1024)
def compile_pattern(pattern: str, case_sensitive: bool = True):
    """Compiled RE2 program for a (UTF-8 bytes) search. Raises re2.error for a bad pattern."""
    return re2.compile(pattern.encode("utf-8", "surrogatepass"), _options(case_sensitive))


def _reason(exc: Exception) -> str:
    raw = exc.args[0] if exc.args else str(exc)
    reason = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    if reason.startswith("invalid escape sequence: \\") and reason[-1:].isdigit():
        reason += " (backreferences are not supported)"
    elif reason.startswith(
        ("invalid perl operator: (?<", "invalid perl operator: (?=", "invalid perl operator: (?!")
    ):
        reason += " (lookaround is not supported)"
    return reason


def pattern_problem(pattern: object, case_sensitive: bool = True) -> str:
    """Why ``pattern`` cannot be used ("" when it can). For save-time validation."""
    if not isinstance(pattern, str):
        return "must be a string (a regular expression)"
    if not pattern:
        return "must not be empty"
    if len(pattern) > MAX_PATTERN_CHARS:
        return f"is too long ({len(pattern):,} characters; at most {MAX_PATTERN_CHARS:,})"
    try:
        compile_pattern(pattern, case_sensitive)
    except re2.error as exc:
        return f"is not a valid RE2 pattern (linear-time engine): {_reason(exc)}"
    except Exception as exc:  # noqa: BLE001 - any compile failure is a config problem
        return f"is not a valid pattern: {exc}"
    return ""


def show(pattern: str, limit: int = 200) -> str:
    """A pattern for sentences: /pattern/ with line breaks escaped and no other escaping."""
    body = pattern.replace("\n", "\\n").replace("\r", "\\r")
    if len(body) > limit:
        body = body[:limit] + "…"
    return f"/{body}/"


def search(
    pattern: str, text: str, case_sensitive: bool = True, data: bytes | None = None
) -> tuple[int, int] | None:
    """Character span of the leftmost match of ``pattern`` in ``text``, or None.

    ``data`` may carry ``text`` already encoded as UTF-8 (callers cache it per Evidence).
    """
    if data is None:
        data = text.encode("utf-8", "surrogatepass")
    match = compile_pattern(pattern, case_sensitive).search(data)
    if match is None:
        return None
    start, end = match.span()
    if len(data) == len(text):  # ASCII: byte offsets are character offsets
        return start, end
    head = len(data[:start].decode("utf-8", "replace"))
    return head, head + len(data[start:end].decode("utf-8", "replace"))
