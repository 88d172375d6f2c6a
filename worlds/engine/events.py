"""The event log: what happened in the world, in order, numbered ``n`` from 1, with simulated time.

Process checks read events (calls, messages, facts learned or revealed, decisions, fault and incident
changes), never the text a model wrote. Events at the same instant keep their order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .clock import iso, parse_iso
from .trace import History

__all__ = ["EVENT_TYPES", "Event", "EventLog"]

EVENT_TYPES = frozenset(
    {
        "call",
        "message",
        "message_edited",
        "message_deleted",
        "learned",
        "revealed",
        "decided",
        "fault_started",
        "fault_resolved",
        "incident_changed",
        "monitor_changed",
        "issue_labeled",
        "trial_ended",
    }
)


@dataclass(frozen=True)
class Event:
    n: int
    at: datetime
    type: str
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "at": iso(self.at), "type": self.type, **self.data}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Event:
        rest = {k: v for k, v in data.items() if k not in ("n", "at", "type")}
        return cls(data["n"], parse_iso(data["at"]), data["type"], rest)


class EventLog(History):
    names = ("event log", "events")

    def __init__(self) -> None:
        super().__init__()
        self._last_at: datetime | None = None  # the time of the latest skipped event
        # Called with each event once it is recorded (the world's people hear messages this way).
        self.listener: Callable[[Event], None] | None = None

    def add(self, type: str, at: datetime, **data: Any) -> Event:
        """Append an event; refuses an unknown type or time going backwards."""
        if type not in EVENT_TYPES:
            raise ValueError(f"unknown event type {type!r}")
        last = self.held[-1].at if self.held else self._last_at
        if last is not None and at < last:
            raise ValueError(f"event at {iso(at)} is before the last event ({iso(last)})")
        event = Event(self._next_number(), at, type, dict(data))
        self.held.append(event)
        if self.listener is not None:
            self.listener(event)
        return event

    def continue_from(self, count: int, last_at: datetime | None) -> None:
        """Carry on after ``count`` events stored elsewhere (the latest at ``last_at``), an empty log
        only. Such a log takes events; reading it whole raises PartialHistory."""
        self._carry_on(count)
        self._last_at = last_at

    def forget(self) -> None:
        """Drop the events held (they are stored elsewhere); numbering and time order carry on."""
        if self.held:
            self._last_at = self.held[-1].at
        super().forget()

    @property
    def events(self) -> list[Event]:
        """The events held (all of them unless ``skipped``)."""
        return self.held

    @classmethod
    def restore(cls, events: list[dict[str, Any]]) -> EventLog:
        log = cls()
        log.held = [Event.from_dict(e) for e in events]
        return log

    def since(self, count: int) -> list[Event]:
        """The events numbered after ``count`` (held here: those added since the log was at ``count``)."""
        out = []
        for event in reversed(self.held):
            if event.n <= count:
                break
            out.append(event)
        return out[::-1]

    def of_type(self, *types: str) -> list[Event]:
        return [e for e in self._whole() if e.type in types]

    def to_list(self) -> list[dict[str, Any]]:
        return [e.to_dict() for e in self._whole()]
