"""Durations: ``500ms``, ``30s``, ``5m``, ``1h``, ``1m30s`` (units in descending order, each once).

Seed ``at`` and ``created`` take a sign (``-10m`` before the clock start, ``+5m`` or ``5m`` after);
anything else is an error.
"""

from __future__ import annotations

import re
from datetime import timedelta

__all__ = ["DurationError", "format_duration", "parse_duration", "to_ms"]

_PATTERN = re.compile(
    r"(?P<sign>[+-])?(?:(?P<h>\d+)h)?(?:(?P<m>\d+)m(?!s))?(?:(?P<s>\d+)s)?(?:(?P<ms>\d+)ms)?"
)


class DurationError(ValueError):
    """Not a duration; the message says what is accepted."""


def parse_duration(value: object, *, signed: bool = False) -> timedelta:
    """``"1m30s"`` → ``timedelta(seconds=90)``. With ``signed``, a leading ``-`` or ``+`` is allowed."""
    example = "-10m, 30s or 1m30s" if signed else "500ms, 30s, 5m, 1h or 1m30s"
    if not isinstance(value, str):
        raise DurationError(f"must be a duration such as {example}, not {_describe(value)}")
    match = _PATTERN.fullmatch(value)
    if not match or not any(match.group(u) for u in ("h", "m", "s", "ms")):
        raise DurationError(f"{value!r} is not a duration; write e.g. {example}")
    if match.group("sign") and not signed:
        raise DurationError(f"{value!r} is not a duration: no sign here; write e.g. {example}")
    parts = {u: int(match.group(u) or 0) for u in ("h", "m", "s", "ms")}
    delta = timedelta(hours=parts["h"], minutes=parts["m"], seconds=parts["s"], milliseconds=parts["ms"])
    return -delta if match.group("sign") == "-" else delta


def to_ms(delta: timedelta) -> int:
    """Whole milliseconds (durations never hold less)."""
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def format_duration(delta: timedelta) -> str:
    """The canonical text: ``timedelta(seconds=90)`` → ``1m30s``; zero → ``0s``."""
    ms = to_ms(delta)
    sign, ms = ("-", -ms) if ms < 0 else ("", ms)
    h, rest = divmod(ms, 3_600_000)
    m, rest = divmod(rest, 60_000)
    s, ms = divmod(rest, 1000)
    text = "".join(f"{n}{u}" for n, u in ((h, "h"), (m, "m"), (s, "s"), (ms, "ms")) if n)
    return sign + (text or "0s")


def _describe(value: object) -> str:
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return f"the number {value} (add a unit: {value}s)"
    return "a list" if isinstance(value, list) else "an object" if isinstance(value, dict) else "null"
