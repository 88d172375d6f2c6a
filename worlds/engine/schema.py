"""Closed schemas for scene records, and the registry of tools that declare them.

A field is a :class:`Field` (type, required, and for refs the kinds it must point at); a record kind is
a :class:`RecordKind` (its ref kind, the collection it is written under and its fields). A tool module
builds one :class:`Tool` and passes it to :func:`register`; ``worlds/engine/tools/__init__.py``
imports each tool module on its own line, so a new tool is a new module plus one import line.

:class:`Validator` checks a value against a field, collecting every problem and normalising as it
goes: durations become ``timedelta``, refs become the ref name they resolve to (``"slack_support"``),
facts ``("laura", "beta_on")``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from core.registry import Registry, UnknownName

from .durations import DurationError, parse_duration
from .problems import Problems, join_path
from .refs import Namespace, RefError

__all__ = [
    "Field",
    "RecordKind",
    "StateCheck",
    "Tool",
    "UnknownTool",
    "Validator",
    "all_tools",
    "get_tool",
    "register",
]

TYPES = frozenset(
    [
        "str",
        "bool",
        "int",
        "number",
        "choice",
        "duration",
        "signed_duration",
        "ref",
        "refs",
        "strs",
        "str_or_strs",
        "text_or_null",
        "object",
        "objects",
        "records",
        "map",
        "ref_map",
        "person",
        "fact",
        "facts",
        "any",
    ]
)


@dataclass(frozen=True)
class Field:
    """One field. ``kinds``: for ref types, the record kinds accepted (``slack.user``, or ``user`` for
    any tool's). ``schema``: for object/objects/records. ``item``: the value field of map/ref_map.
    ``record``: for ``records`` (nested record maps such as a repo's commits), the kind declared."""

    type: str
    required: bool = False
    kinds: tuple[str, ...] = ()
    choices: tuple[str, ...] = ()
    schema: Mapping[str, Field] | None = None
    item: Field | None = None
    record: str = ""
    minimum: float | None = None
    maximum: float | None = None
    nonempty: bool = False

    def __post_init__(self) -> None:
        if self.type not in TYPES:
            raise ValueError(f"unknown field type {self.type!r}")


@dataclass(frozen=True)
class RecordKind:
    """A record kind of a tool: ``kind`` is the ref kind (``user``), ``collection`` the key it is
    written under in ``world.<tool>`` (``users``)."""

    kind: str
    collection: str
    fields: Mapping[str, Field]
    # rules across fields: (normalised record, its path, the validator, the record as written)
    cleaner: Callable[[dict[str, Any], str, Validator, dict[str, Any]], None] | None = None


@dataclass(frozen=True)
class StateCheck:
    """A state check a tool answers (``slack.message``): its fields, which field a bare value stands
    for (``datadog.monitor: $m`` → ``monitor``), which fields a list value gives in order
    (``github.file_at: [repo, revision, path]``), and an optional cleaner for rules across fields."""

    fields: Mapping[str, Field]
    scalar: str = ""
    positional: tuple[str, ...] = ()
    cleaner: Callable[[dict[str, Any], str, Validator], None] | None = None


@dataclass(frozen=True, eq=False)
class Tool:
    """A simulated tool, declared by one module in ``worlds/engine/tools/``.

    ``records``: its record kinds (``world.<tool>.<collection>``); ``state_checks``: check name after
    ``<tool>.`` → shape; ``has_bot``: its users must hold exactly one ``bot: true`` (the agent's own
    account); ``effects``: the fault effects it applies (``<tool>.<effect>`` → fields);
    ``simulator``: the class that builds the tool's state and answers its HTTP calls
    (:class:`worlds.engine.simulator.Simulator`), so the engine never names a tool.
    """

    name: str
    records: tuple[RecordKind, ...] = ()
    state_checks: Mapping[str, StateCheck] = field(default_factory=dict)
    has_bot: bool = False
    effects: Mapping[str, Mapping[str, Field]] = field(default_factory=dict)  # fault effects it applies
    extra: Mapping[str, Field] = field(default_factory=dict)  # world.<tool> keys that are not records
    # The HTTP simulator (a worlds.engine.simulator.Simulator subclass); None: not simulated yet.
    simulator: type | None = None

    def record_kind(self, collection: str) -> RecordKind | None:
        return next((r for r in self.records if r.collection == collection), None)


class UnknownTool(UnknownName):
    """No tool is registered under this name."""


_REGISTRY: Registry[Tool] = Registry("tool", "tools", UnknownTool)


def register(tool: Tool) -> Tool:
    """Add a tool to the registry and return it; a second tool with the same name is refused."""
    return _REGISTRY.add(tool)


def get_tool(name: str) -> Tool:
    return _REGISTRY.named(name)


def all_tools() -> list[Tool]:
    return list(_REGISTRY.values())


def json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"


class Validator:
    """Checks values against fields, adding every problem to ``problems``; returns normalised values
    (``None`` where a value was bad)."""

    def __init__(self, problems: Problems, namespace: Namespace) -> None:
        self.problems = problems
        self.ns = namespace

    def add(self, path: str, message: str) -> None:
        self.problems.add(path, message)

    def obj(
        self, schema: Mapping[str, Field], value: Any, path: str, *, what: str = ""
    ) -> dict[str, Any] | None:
        """A closed object: unknown fields and missing required ones are problems."""
        if not isinstance(value, dict):
            self.add(path, f"must be an object, not {json_type(value)}")
            return None
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key not in schema:
                allowed = ", ".join(schema) or "none"
                self.add(
                    join_path(path, key), f"unknown field{' for ' + what if what else ''}; allowed: {allowed}"
                )
                continue
            out[key] = self.value(schema[key], item, join_path(path, key))
        for key, spec in schema.items():
            if spec.required and key not in value:
                self.add(path, f"{key} is required")
            elif spec.required and value[key] is None:
                self.add(join_path(path, key), "is required")
        return out

    def ref(self, value: Any, path: str, kinds: tuple[str, ...], *, bare_person: bool = False) -> str | None:
        try:
            return self.ns.resolve(value, kinds, bare_person=bare_person).ref
        except RefError as exc:
            self.add(path, str(exc))
            return None

    def value(self, spec: Field, value: Any, path: str) -> Any:  # noqa: C901 - one branch per type
        t = spec.type
        if value is None:
            return None  # "not set"; obj() reports required fields
        if t == "any":
            return value
        if t == "str":
            if not isinstance(value, str):
                return self._bad(path, f"must be a string, not {json_type(value)}")
            if spec.nonempty and not value.strip():
                return self._bad(path, "must not be empty")
            return value
        if t == "text_or_null":
            return value if isinstance(value, str) else self._bad(path, "must be text (or null to delete)")
        if t == "bool":
            return (
                value if isinstance(value, bool) else self._bad(path, f"must be true or false, not {value!r}")
            )
        if t in ("int", "number"):
            if isinstance(value, float) and t == "int" and value.is_integer():
                value = int(value)
            ok = isinstance(value, int) or (
                t == "number" and isinstance(value, float) and math.isfinite(value)
            )
            if isinstance(value, bool) or not ok:
                return self._bad(
                    path, f"must be a {'whole ' if t == 'int' else ''}number, not {json_type(value)}"
                )
            if (
                spec.minimum is not None
                and value < spec.minimum
                or spec.maximum is not None
                and value > spec.maximum
            ):
                return self._bad(path, f"must be between {spec.minimum:g} and {spec.maximum:g}, not {value}")
            return value
        if t == "choice":
            if value not in spec.choices:
                return self._bad(path, f"must be one of {', '.join(spec.choices)}, not {value!r}")
            return value
        if t in ("duration", "signed_duration"):
            try:
                return parse_duration(value, signed=t == "signed_duration")
            except DurationError as exc:
                return self._bad(path, str(exc))
        if t in ("ref", "person"):
            return self.ref(value, path, spec.kinds or ("person",), bare_person=t == "person")
        if t == "fact":
            try:
                return self.ns.fact(value)
            except RefError as exc:
                return self._bad(path, str(exc))
        if t in ("refs", "strs", "facts", "objects"):
            if not isinstance(value, list):
                return self._bad(path, f"must be a list, not {json_type(value)}")
            if spec.nonempty and not value:
                return self._bad(path, "must not be empty")
            inner = {
                "refs": Field("ref", kinds=spec.kinds),
                "strs": Field("str"),
                "facts": Field("fact"),
                "objects": Field("object", schema=spec.schema),
            }[t]
            return [
                self.value(inner, v, join_path(path, i))
                if v is not None
                else self._bad(join_path(path, i), "must not be null")
                for i, v in enumerate(value)
            ]
        if t == "str_or_strs":
            if isinstance(value, str):
                return [value]
            return self.value(Field("strs", nonempty=True), value, path)
        if t == "object":
            return self.obj(spec.schema or {}, value, path)
        if t in ("map", "records"):
            if not isinstance(value, dict):
                return self._bad(path, f"must be an object, not {json_type(value)}")
            item = spec.item if t == "map" else Field("object", schema=spec.schema)
            return {
                k: self.value(item, v, join_path(path, k))
                if v is not None or item.type == "text_or_null"
                else self._bad(join_path(path, k), "must not be null")
                for k, v in value.items()
            }
        if t == "ref_map":
            if not isinstance(value, dict):
                return self._bad(path, f"must be an object, not {json_type(value)}")
            out = {}
            for k, v in value.items():
                ref = self.ref(k, join_path(path, k), spec.kinds)
                out[ref] = self.value(spec.item, v, join_path(path, k)) if spec.item else v
            return out
        raise AssertionError(t)

    def _bad(self, path: str, message: str) -> None:
        self.add(path, message)
        return None
