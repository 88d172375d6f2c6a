"""The base of every simulated tool: a route table, authentication, the tool's own error shapes, the
tool's state as a plain JSON-able dict, and its state checks and fault effects.

A tool module subclasses :class:`Simulator` and names the class in its ``Tool(simulator=...)``
registration. The world never names a tool: it builds each tool's state with :meth:`Simulator.build`,
answers a call with :meth:`Simulator.call`, and asks :meth:`Simulator.state_check` for a check.

Routes are ``(METHOD, "/repos/{owner}/{repo}/contents/{path+}", "handler_name")``: ``{name}`` is one
path segment, ``{name+}`` the rest of the path (one or more segments). A handler takes the request and
the path parameters as keyword arguments and returns a :class:`Response`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from .http import BadBody, Request, Response
from .results import StateResult

if TYPE_CHECKING:  # pragma: no cover
    from .scene import Record, Scene
    from .world import World

__all__ = ["BuildContext", "Route", "Simulator"]


@dataclass(frozen=True)
class Route:
    method: str
    pattern: re.Pattern[str]
    handler: str


def compile_route(method: str, template: str, handler: str) -> Route:
    regex = ""
    for part in re.split(r"(\{[a-z_]+\+?\})", template):
        if part.startswith("{") and part.endswith("}"):
            name = part[1:-1]
            regex += f"(?P<{name[:-1]}>.+)" if name.endswith("+") else f"(?P<{name}>[^/]+)"
        else:
            regex += re.escape(part)
    return Route(method.upper(), re.compile(regex + r"/?\Z"), handler)


@dataclass(frozen=True)
class BuildContext:
    """What :meth:`Simulator.build` reads: the scene, this tool's seed records by collection, and the
    world (for ids, the clock and refs)."""

    scene: Scene
    records: Mapping[str, Mapping[str, Record]]
    world: World


class Simulator:
    """One simulated tool inside one world. ``state`` is owned by the world and stored with it."""

    tool: ClassVar[str] = ""
    routes: ClassVar[tuple[tuple[str, str, str], ...]] = ()
    # Appended to the tool's root for the base URL an agent's SDK takes (Slack: "api/").
    sdk_path: ClassVar[str] = ""
    _compiled: ClassVar[tuple[Route, ...]] = ()
    # The handlers that never change the tool's state: by default those of the GET routes (a tool
    # whose reads are not GETs, Slack, names them). A call one of them answers, or one refused before
    # any handler ran (a bad credential, a coverage gap), leaves ``wrote`` False: the world then does
    # not count the tool as touched by it, and a store need not compare its state (World.call).
    reads: ClassVar[frozenset[str]] = frozenset()
    wrote: bool = True  # whether the last call may have changed the state

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._compiled = tuple(compile_route(*r) for r in cls.routes)
        if "reads" not in cls.__dict__:
            cls.reads = frozenset(handler for method, _, handler in cls.routes if method.upper() == "GET")

    def __init__(self, world: World, state: dict[str, Any]) -> None:
        self.world = world
        self.state = state

    # -- building ---------------------------------------------------------------------------------
    @classmethod
    def build(cls, ctx: BuildContext) -> dict[str, Any]:
        """The tool's starting state from its seed records (JSON-able: it is stored with the world)."""
        return {}

    # -- answering --------------------------------------------------------------------------------
    def call(self, request: Request) -> Response:
        """Authenticate, route and answer one call, in the tool's own shapes."""
        self.wrote = False
        denied = self.authenticate(request)
        if denied is not None:
            return denied
        for route in self._compiled:
            match = route.pattern.match(request.path)
            if match is None:
                continue
            if route.method not in (request.method, "*"):
                continue
            self.wrote = route.handler not in self.reads
            try:
                return getattr(self, route.handler)(request, **match.groupdict())
            except BadBody as exc:
                return self.bad_body(request, str(exc))
        return self.gap(request)

    def authenticate(self, request: Request) -> Response | None:
        """None when the call carries this world's credential; otherwise the tool's own refusal."""
        return None

    def gap(self, request: Request) -> Response:
        """An endpoint this simulator does not implement: the tool's 404 shape, marked a coverage gap."""
        return Response(404, {"message": "Not Found"}, coverage_gap=True)

    def bad_body(self, request: Request, message: str) -> Response:
        return Response(400, {"message": message})

    @property
    def credential(self) -> dict[str, str]:
        return self.world.credentials.get(self.tool, {})

    # -- judging ----------------------------------------------------------------------------------
    def state_check(self, name: str, spec: Mapping[str, Any]) -> StateResult:
        """Evaluate the state check ``<tool>.<name>`` on the tool's current state."""
        raise NotImplementedError(f"{self.tool}.{name} is not a state check of this simulator")

    def apply_effect(self, name: str, spec: Mapping[str, Any]) -> None:
        """Apply the fault effect ``<tool>.<name>`` (a monitor state, a message, an incident)."""
        raise NotImplementedError(f"{self.tool}.{name} is not an effect of this simulator")

    def final_state(self) -> dict[str, Any]:
        """The tool's state as ``world.json`` shows it."""
        return self.state
