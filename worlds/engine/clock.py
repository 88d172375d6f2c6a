"""Simulated time. Agent call k happens at ``start + k × per_call``; nothing reads the real clock.

Slack ``ts`` values are the simulated epoch seconds with a 6-digit counter, unique within a world.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import lru_cache

__all__ = ["DEFAULT_PER_CALL", "DEFAULT_START", "Clock", "iso", "parse_iso", "parse_start"]

DEFAULT_START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
DEFAULT_PER_CALL = timedelta(seconds=1)


def parse_start(value: str) -> datetime:
    """An ISO 8601 time with a zone (``2026-03-02T09:00:00Z``), in UTC; raises ValueError."""
    if not isinstance(value, str):
        raise ValueError(f"must be an ISO 8601 time such as 2026-03-02T09:00:00Z, not {value!r}")
    try:
        moment = datetime.fromisoformat(value.replace("z", "Z"))
    except ValueError:
        raise ValueError(f"{value!r} is not an ISO 8601 time such as 2026-03-02T09:00:00Z") from None
    if moment.tzinfo is None:
        raise ValueError(f"{value!r} needs a time zone, e.g. {value}Z")
    return moment.astimezone(UTC)


def parse_iso(text: str) -> datetime:
    """The inverse of :func:`iso`."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


@lru_cache(maxsize=256)
def iso(moment: datetime) -> str:
    """``2026-03-02T09:00:01Z``; milliseconds only when there are some (``...09:00:00.500Z``). Cached:
    a call writes the same few moments many times (its trace entry, its event, the records it makes);
    equal aware datetimes are the same instant, so they have the same text."""
    moment = moment.astimezone(UTC)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if moment.microsecond:
        text += f".{moment.microsecond // 1000:03d}"
    return text + "Z"


@dataclass
class Clock:
    """The world's clock: ``now`` is the time of the latest agent call (``start`` before any)."""

    start: datetime = DEFAULT_START
    per_call: timedelta = DEFAULT_PER_CALL
    calls: int = 0
    _ts_counter: int = field(default=0, repr=False)

    def call_time(self, k: int) -> datetime:
        """The time of agent call number ``k`` (from 1)."""
        return self.start + k * self.per_call

    def at(self, offset: timedelta) -> datetime:
        """``start + offset`` (seed ``at`` values, fault times)."""
        return self.start + offset

    @property
    def now(self) -> datetime:
        return self.call_time(self.calls)

    def tick(self) -> datetime:
        """Advance to the next agent call and return its time."""
        self.calls += 1
        return self.now

    def slack_ts(self, moment: datetime | None = None) -> str:
        """``"1772442000.000001"``: epoch seconds of ``moment`` (default now) and a counter, so two
        messages at the same instant still get distinct, ordered ``ts`` values."""
        self._ts_counter += 1
        seconds = int((moment or self.now).timestamp())
        return f"{seconds}.{self._ts_counter:06d}"

    def iso(self, moment: datetime | None = None) -> str:
        return iso(moment or self.now)
