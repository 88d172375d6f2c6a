"""Faults that live and resolve (WORLDS.md "Faults"; ``world_rules.faults`` of a scene).

A fault starts at ``clock.start + at``: its ``effects`` apply at exactly that moment (a monitor's
state, a triggered incident, a person's message), through each tool's
:meth:`~worlds.engine.simulator.Simulator.apply_effect`, so the agent discovers them through the
tools. It is resolved the first time its ``resolved_when`` predicate holds (any state check object,
or a milestone), judged after every agent call; then its ``on_resolve`` effects apply. Both moments
are events (``fault_started``, ``fault_resolved``). A step that is due is applied before the first
agent call at or after its time, and at the trial's end for steps due by the agent's last call; steps
due later are never applied.

The faults' progress is small, plain data (``Faults.state``, in the world's head), so a world
restored in any process carries on: ``{"faults": {id: progress}, "held": {id: time}}``, per started
fault when it started and resolved (ISO times) with the events and the trace seq behind them, and when
a fault's milestone predicate first held. Milestones are judged on
what the call just added (its trace entry, its events), never on the whole history, so a world that
holds only its latest events (the console's) judges them the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from checks.kinds.trace import compile_pattern

from .clock import iso, parse_iso
from .process import message_matches, milestone
from .results import StateResult

if TYPE_CHECKING:  # pragma: no cover
    from .events import Event
    from .scene import Fault
    from .trace import TraceEntry
    from .world import World

__all__ = ["Faults", "describe_predicate"]

# Milestones read from the people's records (a message milestone: from the messages the call added).
PEOPLE_MILESTONES = ("decided", "knows", "told", "revealed")


class Faults:
    """The faults of one world and their progress (``state``, see the module docstring)."""

    def __init__(self, world: World, state: dict[str, Any] | None = None) -> None:
        self.world = world
        self.state: dict[str, Any] = state if state else {"faults": {}, "held": {}}
        self.progress: dict[str, dict[str, Any]] = self.state["faults"]
        self.held: dict[str, str] = self.state["held"]  # fault id -> when its milestone first held
        self.by_id: dict[str, Fault] = {f.id: f for f in world.scene.faults}

    def __bool__(self) -> bool:
        return bool(self.by_id)

    # -- the steps -----------------------------------------------------------------------------------
    def start_due(self, until: datetime) -> None:
        """Start every fault due at or before ``until``, in time order (scene order on a tie)."""
        due = [f for f in self.by_id.values() if f.id not in self.progress and self.starts_at(f) <= until]
        for fault in sorted(due, key=self.starts_at):
            self._start(fault)

    def next_due(self) -> datetime | None:
        """When the next fault starts (None: every fault has started)."""
        return min(
            (self.starts_at(f) for f in self.by_id.values() if f.id not in self.progress), default=None
        )

    def starts_at(self, fault: Fault) -> datetime:
        return self.world.clock.at(fault.at)

    def _start(self, fault: Fault) -> None:
        at = self.starts_at(fault)
        event = self.world.events.add("fault_started", at, fault=fault.id, effects=list(fault.effects))
        self.progress[fault.id] = {"started": iso(at), "started_event": event.n}
        self._apply(fault.effects, at)
        self._judge(fault, at, entry=None, new_events=())  # a predicate may already hold

    def after_call(self, entry: TraceEntry | None, new_events: Iterable[Event]) -> None:
        """After an agent call (its trace ``entry`` and the events it caused): note milestones that
        first held, and resolve each active fault whose predicate holds now."""
        new_events = list(new_events)
        now = self.world.clock.now
        for fault in self.by_id.values():
            if fault.resolved_when is None:
                continue
            progress = self.progress.get(fault.id)
            if progress is not None and "resolved" in progress:
                continue
            if _is_milestone(fault.resolved_when) and fault.id not in self.held:  # noqa: SIM102
                if self._milestone_now(fault.resolved_when, entry, new_events):
                    self.held[fault.id] = iso(now)
            if progress is not None:
                self._judge(fault, now, entry=entry, new_events=new_events)

    def _judge(self, fault: Fault, at: datetime, *, entry: TraceEntry | None, new_events: list) -> None:
        when = fault.resolved_when
        if when is None:
            return
        holds = fault.id in self.held if _is_milestone(when) else self._state_holds(when)
        if not holds:
            return
        seq = entry.seq if entry is not None else None
        event = self.world.events.add("fault_resolved", at, fault=fault.id, seq=seq)
        self.progress[fault.id].update(resolved=iso(at), resolved_event=event.n, resolved_seq=seq)
        self._apply(fault.on_resolve, at)

    def _apply(self, effects: Mapping[str, Mapping[str, Any]], at: datetime) -> None:
        for name, spec in effects.items():
            tool, _, effect = name.partition(".")
            sim = self.world.simulator(tool)
            if sim is None:  # validation makes effects name the scene's own records
                continue
            sim.apply_effect(effect, {**spec, "at": at})

    # -- predicates ----------------------------------------------------------------------------------
    def _state_holds(self, when: Mapping[str, Any]) -> bool:
        return self.result_of(when).passed

    def result_of(self, when: Mapping[str, Any]) -> StateResult:
        """A state-check predicate judged on the world now (``{"check": "github.production", ...}``)."""
        spec = dict(when)
        name = spec.pop("check")
        return self.world.state_check(name, spec, touch=False)

    def _milestone_now(
        self, milestone_spec: Mapping[str, Any], entry: TraceEntry | None, new_events: list
    ) -> bool:
        ((kind, value),) = milestone_spec.items()
        if kind == "called":
            return entry is not None and compile_pattern(value).matches(entry)
        if kind == "fault_resolved":
            return self.resolved(value)
        if kind == "issue_labeled":
            spec = {"repo": value["repo"], "labels": list(value["labels"])}
            return self.world.state_check("github.issue", spec, touch=False).passed
        if kind == "message":
            return any(message_matches(self.world, value, e) for e in new_events)
        if kind in PEOPLE_MILESTONES:  # the people's own records (their state, never the history)
            return milestone(self.world, milestone_spec) is not None
        return False

    # -- reading -------------------------------------------------------------------------------------
    def resolved(self, fault_id: str) -> bool:
        return "resolved" in self.progress.get(fault_id, {})

    def check(self, fault_id: str) -> StateResult:
        """``fault_resolved: $fault``: passes when the fault is resolved at the end of the trial."""
        fault = self.by_id.get(fault_id)
        expected = f"fault {fault_id} resolved by the end of the trial"
        if fault is None:
            return StateResult.of(False, expected, f"this scene has no fault {fault_id}")
        progress = self.progress.get(fault_id)
        end = iso(self.world.clock.now)
        if progress is None:
            actual = f"it never started (it starts at {iso(self.starts_at(fault))}; the trial ended at {end})"
            return StateResult.of(False, expected, actual)
        events = tuple(n for n in (progress.get("started_event"), progress.get("resolved_event")) if n)
        if "resolved" in progress:
            seq = progress.get("resolved_seq")
            how = f" by call {seq}" if seq else ""
            actual = f"it started at {progress['started']} and was resolved at {progress['resolved']}{how}"
            return StateResult.of(True, expected, actual, evidence=(seq,) if seq else (), events=events)
        actual = f"it started at {progress['started']} and was still active at {end}"
        if fault.resolved_when is None:
            actual += " (it has no resolved_when, so nothing resolves it)"
        elif _is_milestone(fault.resolved_when):
            actual += f": {describe_predicate(fault.resolved_when)} never happened"
        else:
            result = self.result_of(fault.resolved_when)
            actual += f": {describe_predicate(fault.resolved_when)} does not hold ({result.actual})"
        return StateResult(
            False,
            expected,
            actual,
            f"Expected {expected}, but {actual}.",
            events=events,
        )

    def timeline(self) -> list[dict[str, Any]]:
        """Each fault with its start and resolution times (None when it did not happen), scene order."""
        out = []
        for fault in self.by_id.values():
            progress = self.progress.get(fault.id, {})
            out.append(
                {
                    "fault": fault.id,
                    "starts": iso(self.starts_at(fault)),
                    "started": progress.get("started"),
                    "resolved": progress.get("resolved"),
                }
            )
        return out

    def resolved_at(self, fault_id: str) -> datetime | None:
        text = self.progress.get(fault_id, {}).get("resolved")
        return parse_iso(text) if text else None


def _is_milestone(when: Mapping[str, Any]) -> bool:
    return "check" not in when


def describe_predicate(when: Mapping[str, Any]) -> str:
    """``github.production {repo: github_orders, commit: c_base}`` / ``called "POST /x"``."""
    if "check" in when:
        fields = ", ".join(f"{k}: {_short(v)}" for k, v in when.items() if k != "check")
        return f"{when['check']} {{{fields}}}"
    ((kind, value),) = when.items()
    return f"the milestone {kind} {_short(value)}"


def _short(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "[" + ", ".join(_short(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_short(v)}" for k, v in value.items()) + "}"
    return str(value)
