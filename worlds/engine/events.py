"""The event log: what happened in the world, in order, numbered ``n`` from 1, with simulated time.

Process checks read events (calls, messages, facts learned or revealed, decisions, fault and incident
changes), never the text a model wrote. Events at the same instant keep their order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .clock import iso, parse_iso

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


class EventLog:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def add(self, type: str, at: datetime, **data: Any) -> Event:
        """Append an event; refuses an unknown type or time going backwards."""
        if type not in EVENT_TYPES:
            raise ValueError(f"unknown event type {type!r}")
        if self.events and at < self.events[-1].at:
            raise ValueError(f"event at {iso(at)} is before the last event ({iso(self.events[-1].at)})")
        event = Event(len(self.events) + 1, at, type, dict(data))
        self.events.append(event)
        return event

    @classmethod
    def restore(cls, events: list[dict[str, Any]]) -> EventLog:
        log = cls()
        log.events = [Event.from_dict(e) for e in events]
        return log

    def of_type(self, *types: str) -> list[Event]:
        return [e for e in self.events if e.type in types]

    def __iter__(self):
        return iter(self.events)

    def __len__(self) -> int:
        return len(self.events)

    def to_list(self) -> list[dict[str, Any]]:
        return [e.to_dict() for e in self.events]
