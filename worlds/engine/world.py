"""A world: a live instance of a scene, for one trial.

``World.build(scene)`` makes a fresh world (every tool's state from the seed, fresh credentials);
``world.call(tool, request)`` answers one agent call as the tool would, after counting it against the
call budget and advancing the clock, and records it in the trace and the event log;
``world.end()`` freezes it. ``snapshot()`` / ``World.restore(scene, snapshot)`` store it as JSON, so
any process (a web server, a worker, the standalone server) can carry on the same world.

The world never names a tool: each tool's :class:`~worlds.engine.simulator.Simulator` comes from its
registration, and a declared other tool gets :class:`~worlds.engine.other.OtherSimulator`.
"""

from __future__ import annotations

import logging
import marshal
import secrets
import weakref
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, ClassVar

from .budget import OVER_BUDGET_EXPLANATION, CallBudget
from .checks import PROCESS_KINDS, Check, validate_check, validate_state
from .clock import Clock, iso
from .credentials import make_credentials, secret_values
from .events import EventLog
from .faults import Faults
from .http import BODY_LIMIT, Request, Response
from .other import OtherSimulator
from .people import People
from .problems import Problems
from .process import evaluate_process
from .refs import Namespace
from .results import StateResult
from .scene import Scene
from .schema import Validator, get_tool
from .simulator import BuildContext, Simulator
from .trace import Trace, TraceEntry
from .voice import Voice

__all__ = ["SNAPSHOT_VERSION", "World", "WorldEnded", "new_world_id", "process_in_scene", "state_in_scene"]

log = logging.getLogger(__name__)

SNAPSHOT_VERSION = 1
END_REASONS = ("reply", "timeout", "call_budget", "error", "stopped")


def _state_print(state: Any) -> bytes:
    """Equal bytes, an equal state (World.check_reads)."""
    try:
        return marshal.dumps(state, 0)
    except ValueError:
        return repr(state).encode()


class WorldEnded(Exception):
    """A call to a world whose trial has ended (the HTTP layer answers 410)."""


def new_world_id() -> str:
    """A random, unguessable id for the URL (``/worlds/<id>/...``)."""
    return secrets.token_urlsafe(18)


class World:
    def __init__(
        self,
        scene: Scene,
        world_id: str,
        credentials: dict[str, dict[str, str]],
        *,
        clock: Clock | None = None,
    ) -> None:
        self.scene = scene
        self.id = world_id
        self.credentials = credentials
        self.clock = clock or Clock(scene.start, scene.per_call)
        self.trace = Trace(secret_values(credentials))
        self.events = EventLog()
        self.budget = CallBudget()
        self.ended: str | None = None  # the end reason once the trial has ended
        self.ids: dict[str, Any] = {}  # ref -> the id the tool gave the record (filled by simulators)
        self.states: dict[str, dict[str, Any]] = {}
        self.seed: dict[str, dict[str, Any]] = {}  # each tool's state before the first call
        self.current_seq: int | None = None  # the trace seq of the call being answered
        # Called after every agent call with (world, trace entry): people and faults hook in here.
        self.reactors: list[Callable[[World, TraceEntry], None]] = []
        self.faults = Faults(self)
        self.people = People(self)
        # Words the replies of people with ``voice: llm`` (set by whoever runs the trial with a judge).
        self.voice: Voice | None = None
        self.events.listener = self._heard
        self._simulators: dict[str, Simulator] = {}
        # The tools whose simulator was handed out (so whose state may have changed) since the owner
        # last cleared it: a tool's state is reached only through simulator(), so a store that keeps
        # the states apart (the console) compares only these with what it stored.
        self.touched: set[str] = set()

    # -- building ---------------------------------------------------------------------------------
    @classmethod
    def build(
        cls,
        scene: Scene,
        world_id: str | None = None,
        credentials: dict[str, dict[str, str]] | None = None,
        *,
        cached: bool = True,
    ) -> World:
        """A fresh world of ``scene``. What the simulators build from the seed depends on the scene
        alone (ids from the scene name and refs, SHAs and ``ts`` from the simulated clock), so it is
        built once per Scene object and each later world starts from a copy of it; only the world id
        and the credentials are new each time. ``cached=False`` builds it afresh."""
        world = cls(scene, world_id or new_world_id(), credentials or make_credentials(scene.world))
        blob = _BUILT.get(id(scene)) if cached else None
        if blob is None:  # the first world of this scene (or a state marshal does not take)
            world._build_states()
            if cached:
                _remember_build(scene, world)
            world.seed = _copy(world.states)
            return world
        world.states, world.ids, world.clock._ts_counter = marshal.loads(blob)
        world.seed = marshal.loads(blob)[0]
        return world

    def _build_states(self) -> None:
        for tool in self.scene.world:
            simulator = get_tool(tool).simulator
            if simulator is None:
                continue
            ctx = BuildContext(scene=self.scene, records=self.scene.world[tool], world=self)
            self.states[tool] = simulator.build(ctx)

    @classmethod
    def restore(cls, scene: Scene, snapshot: Mapping[str, Any]) -> World:
        """The world :meth:`snapshot` wrote, for the same scene."""
        if snapshot.get("version") != SNAPSHOT_VERSION:
            raise ValueError(f"unsupported world snapshot version {snapshot.get('version')!r}")
        clock = Clock(scene.start, scene.per_call, calls=snapshot["calls"])
        clock._ts_counter = snapshot["ts_counter"]
        world = cls(scene, snapshot["id"], snapshot["credentials"], clock=clock)
        world.trace = Trace.restore(snapshot["trace"], secret_values(world.credentials))
        world.events = EventLog.restore(snapshot["events"])
        world.budget = CallBudget(calls=snapshot["budget_calls"])
        world.ended = snapshot["ended"]
        world.ids = dict(snapshot["ids"])
        world.states = snapshot["states"]
        world.seed = snapshot["seed"]
        world.faults = Faults(world, snapshot.get("faults"))
        world.people = People(world, snapshot.get("people"))
        world.events.listener = world._heard
        return world

    def snapshot(self) -> dict[str, Any]:
        """Everything needed to carry on this world, as JSON-able data (credentials included: store it
        where secrets are kept)."""
        return {
            **self.head(),
            "credentials": self.credentials,
            "states": self.states,
            "seed": self.seed,
            "trace": self.trace.to_list(copy=False),  # shared, like states and seed above
            "events": self.events.to_list(),
        }

    def head(self) -> dict[str, Any]:
        """The small part of :meth:`snapshot`: its counters, refs and end reason, without the
        credentials, states, seed, trace and events (a store that keeps those apart, as the console
        does, writes this on every call)."""
        return {
            "version": SNAPSHOT_VERSION,
            "id": self.id,
            "scene": self.scene.name,
            "calls": self.clock.calls,
            "ts_counter": self.clock._ts_counter,
            "budget_calls": self.budget.calls,
            "ended": self.ended,
            "ids": self.ids,
            "faults": self.faults.state,
            "people": self.people.state,
        }

    # -- the tools ----------------------------------------------------------------------------------
    def simulator(self, tool: str) -> Simulator | None:
        """The simulator answering ``tool`` in this world; None when the scene has no such tool."""
        self.touched.add(tool)
        if tool in self._simulators:
            return self._simulators[tool]
        sim: Simulator | None = None
        if tool in self.states:
            cls = get_tool(tool).simulator
            sim = cls(self, self.states[tool])
        elif tool in self.scene.other_tools:
            sim = OtherSimulator(self, {}, tool)
        if sim is not None:
            self._simulators[tool] = sim
        return sim

    def _peek(self, tool: str) -> Simulator | None:
        """The simulator of ``tool`` for reading only (not marked touched)."""
        was = tool in self.touched
        sim = self.simulator(tool)
        if not was:
            self.touched.discard(tool)
        return sim

    def has_tool(self, tool: str) -> bool:
        return tool in self.states or tool in self.scene.other_tools

    @property
    def now(self) -> datetime:
        return self.clock.now

    def tools_for_agent(self, root: str) -> dict[str, dict[str, str]]:
        """``world.tools`` of the agent's scenario: each tool's base URL and credential.
        ``root`` is the console's address as the agent sees it (``http://127.0.0.1:8000``)."""
        tools: dict[str, dict[str, str]] = {}
        for tool in [*self.states, *self.scene.other_tools]:
            sim = self.simulator(tool)
            base = f"{root.rstrip('/')}/worlds/{self.id}/{tool}/{sim.sdk_path if sim else ''}"
            tools[tool] = {"base_url": base, **self.credentials.get(tool, {})}
        return tools

    def for_agent(self, root: str) -> dict[str, Any]:
        """The ``scenario.world`` object the agent is called with."""
        return {"id": self.id, "now": iso(self.scene.start), "tools": self.tools_for_agent(root)}

    # -- a call -------------------------------------------------------------------------------------
    def call(self, tool: str, request: Request) -> Response:
        """Answer one agent call. Raises :class:`WorldEnded` once the trial has ended and KeyError for
        a tool the scene does not have; everything else is answered in the tool's own shapes."""
        if self.ended:
            raise WorldEnded(self.ended)
        was_touched = tool in self.touched
        sim = self.simulator(tool)
        if sim is None:
            raise KeyError(tool)
        if not was_touched:  # touched again below unless the call only read the state
            self.touched.discard(tool)
        before = self._read_check(tool, was_touched)
        within_budget = self.budget.take()
        at = self.clock.tick()
        events_before = len(self.events)
        self._run_due(at)  # fault steps and people's replies due by now happen before the call is answered
        self.current_seq = len(self.trace) + 1
        if not within_budget:
            response = Response(429, {"message": OVER_BUDGET_EXPLANATION})
            self.ended = "call_budget"
        elif len(request.body) > BODY_LIMIT:
            response = Response(413, {"message": f"the body is over {BODY_LIMIT} bytes"})
        else:
            sim.wrote = True
            try:
                response = sim.call(request)
            except Exception:  # a simulator bug must not take the world (or the console) down
                log.exception("the %s simulator failed on %s %s", tool, request.method, request.path)
                sim.wrote = True
                response = Response(500, {"message": "the simulated tool failed"})
            if sim.wrote:
                self.touched.add(tool)
        if len(response.content()) > BODY_LIMIT:
            response = Response(500, {"message": f"the answer is over {BODY_LIMIT} bytes"})
        entry = self.trace.record(
            at=at,
            tool=tool,
            method=request.method,
            path=request.path,
            query={k: list(v) for k, v in request.query.items()},
            status=response.status,
            request=request.parsed_body(),
            response=response.body if not isinstance(response.body, bytes) else None,
            coverage_gap=response.coverage_gap,
            slack_ok=response.slack_ok,
            graphql_errors_only=response.graphql_errors_only,
            response_wire=response.content(),
        )
        self.events.add(
            "call", at, seq=entry.seq, tool=tool, method=entry.method, path=entry.path, status=entry.status
        )
        if not self.ended:
            for react in self.reactors:
                react(self, entry)
        self._run_due(at)  # replies due at once (reply_after: 0s)
        if self.faults:
            self.faults.after_call(entry, self.events.since(events_before))
            self._run_due(at)
        self.current_seq = None
        if before is not None and tool not in self.touched and _state_print(self.states.get(tool)) != before:
            raise AssertionError(f"{tool}: {request.method} {request.path} changed the state as a read")
        return response

    # Tests set this: a call whose handler is one of its tool's ``reads`` is checked to leave the
    # tool's state as it found it (a fingerprint before and after), so a read that writes fails loudly.
    check_reads: ClassVar[bool] = False

    def _read_check(self, tool: str, was_touched: bool) -> bytes | None:
        if not self.check_reads or was_touched or tool not in self.states:
            return None
        return _state_print(self.states[tool])

    def _heard(self, event) -> None:
        """Every event, as it is recorded: people hear the messages."""
        if self.people:
            self.people.hear(event)

    def _run_due(self, until: datetime) -> None:
        """Apply every fault step and people's reply due at or before ``until``, earliest first (a fault
        before a reply at the same instant)."""
        while True:
            fault = self.faults.next_due() if self.faults else None
            reply = self.people.next_due() if self.people else None
            if fault is not None and fault <= until and (reply is None or fault <= reply):
                self.faults.start_due(fault)
            elif reply is not None and reply <= until:
                self.people.apply_due(until)
            else:
                return

    def end(self, reason: str = "reply") -> None:
        """The trial is over: the world answers no more calls."""
        if reason not in END_REASONS:
            raise ValueError(f"unknown end reason {reason!r}")
        if not self.ended:
            self.ended = reason
        self._run_due(self.clock.now)  # steps due by the agent's last call (at the start, when it made none)
        if not self.events.of_type("trial_ended"):
            self.events.add("trial_ended", self.clock.now, reason=self.ended)

    # -- judging ------------------------------------------------------------------------------------
    def state_check(
        self, name: str, spec: Mapping[str, Any], *, written: bool = False, touch: bool = True
    ) -> StateResult:
        """A state check (``slack.message``, ``github.issue``..., ``fault_resolved``) on the world as it
        stands. ``touch=False``: a read-only look that leaves the tool out of :attr:`touched`.

        ``spec`` is normalised (refs as names), as a scene's own checks are; ``written=True``: as a
        person wrote it (``$slack_support``), e.g. a library check of the console, validated here
        against this world's scene first: a ref the scene lacks fails, naming it."""
        if written:
            normalised, problems = self._normalise_state(name, spec)
            if problems:
                found = "; ".join(problems)
                return StateResult(
                    False,
                    f"{name} on refs of this scene",
                    found,
                    f"The check does not fit this scene: {found}.",
                )
            spec = {k: v for k, v in normalised.items() if k != "check"}
        if name == "fault_resolved":
            return self.faults.check(spec["fault"])
        tool, _, check = name.partition(".")
        sim = self.simulator(tool) if touch else self._peek(tool)
        if sim is None or tool not in self.states:
            return StateResult.of(False, f"a {tool} world", f"this scene has no {tool}")
        return sim.state_check(check, spec)

    def _normalise_state(self, name: str, spec: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
        return state_in_scene(self.scene, {name: dict(spec)})

    def process_check(self, kind: str, value: Any) -> StateResult:
        """A process check as a person wrote it (``revealed: ["laura.workspace"]``), e.g. a library
        check of the console: validated against this world's scene first (a name the scene lacks
        fails, naming it), then evaluated on the world's records."""
        check, problems = process_in_scene(self.scene, {kind: value})
        if check is None:
            found = "; ".join(problems)
            return StateResult(
                False, f"{kind} on names of this scene", found, f"The check does not fit this scene: {found}."
            )
        return evaluate_process(self, check.kind, check.spec)

    def final_state(self) -> dict[str, Any]:
        """``world.json``: each simulated tool's state now (and its seed, for before → after)."""
        return {
            "scene": self.scene.name,
            "now": iso(self.clock.now),
            "ended": self.ended,
            "tools": {tool: self.simulator(tool).final_state() for tool in self.states},
            **({"faults": self.faults.timeline()} if self.faults else {}),
        }


def _namespace(scene: Scene) -> Namespace:
    """Every name of the scene: its records, people (with their facts and decisions) and faults."""
    namespace = Namespace()
    for ref, record in scene.records.items():
        namespace.declare(ref, record.kind, record.tool, ref)
    for ref, person in scene.people.items():
        namespace.declare(ref, "person", "", ref)
        namespace.facts[ref] = set(person.facts)
        namespace.decisions[ref] = {d.id: list(d.options) for d in person.decisions.values()}
    for fault in scene.faults:
        namespace.declare(fault.id, "fault", "", fault.id)
    return namespace


def _problem_texts(problems: Problems) -> list[str]:
    return [f"{p.path}: {p.message}" if p.path else p.message for p in problems]


def state_in_scene(scene: Scene, raw: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A state check as a person wrote it (``{"slack.message": {"channel": "$slack_support"}}``),
    checked against ``scene``'s refs: (its normalised form, the problems, each ``path: message``)."""
    problems = Problems("check")
    normalised = validate_state(dict(raw), "state", Validator(problems, _namespace(scene)))
    return normalised or {}, _problem_texts(problems)


def process_in_scene(scene: Scene, raw: Mapping[str, Any]) -> tuple[Check | None, list[str]]:
    """A process check as a person wrote it (``{"revealed": ["laura.workspace"]}``, one kind), checked
    against ``scene``'s people, facts, decisions and refs: (the validated check, the problems)."""
    problems = Problems("check")
    check = validate_check({"id": "check", **dict(raw)}, "", Validator(problems, _namespace(scene)))
    texts = _problem_texts(problems)
    if check is not None and check.kind not in PROCESS_KINDS:
        texts.append(f"{check.kind} is not a process check; one of {', '.join(PROCESS_KINDS)}")
    return (None if texts else check), texts


# Scene object (by id, dropped when the scene is) -> marshal of what its simulators built:
# (states, ids, the clock's ts counter). See World.build.
_BUILT: dict[int, bytes | None] = {}


def _remember_build(scene: Scene, world: World) -> None:
    key = id(scene)
    if key in _BUILT:
        return
    try:
        _BUILT[key] = marshal.dumps((world.states, world.ids, world.clock._ts_counter))
    except ValueError:
        _BUILT[key] = None  # built afresh every time
    weakref.finalize(scene, _BUILT.pop, key, None)


def _copy(value: Any) -> Any:
    """A deep copy of the tools' state (dicts and lists copied, everything else shared). marshal's
    round trip makes the same copy about twice as fast for plain data (the seed copy was about a third
    of a 200-record build, bench/README.md "Worlds"); anything marshal does not take is copied by hand."""
    try:
        return marshal.loads(marshal.dumps(value))
    except ValueError:
        return _copy_by_hand(value)


def _copy_by_hand(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy_by_hand(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy_by_hand(v) for v in value]
    return value
