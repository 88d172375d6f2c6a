"""The kind registry: stable names mapped to a config schema and a pure evaluator.

A kind module builds one :class:`Kind` and passes it to :func:`register`; ``checks/kinds/__init__.py``
imports each kind module on its own line, so adding a kind is a new module plus one import line.
Kind names are stored data (``CheckVersion.kind``): renaming one needs a data migration.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from core.jsonvalue import json_type
from core.registry import Registry, UnknownName

from .base import ConfigError, Context, Evidence, FieldSpec, Outcome, Verdict

__all__ = [
    "Kind",
    "UnknownKind",
    "all_kinds",
    "get_kind",
    "kind_choices",
    "register",
]

Evaluator = Callable[[Mapping[str, Any], Evidence, "Context | None"], Verdict]
# A cleaner gets the config with generic checks done and defaults filled, normalises it in place and
# adds messages to ``errors`` (field -> message). Fields already in ``errors`` hold None.
Cleaner = Callable[[dict[str, Any], dict[str, str]], None]

EVIDENCE_PARTS = frozenset({"output", "tool_calls", "trace", "latency", "messages"})


@dataclass(frozen=True, eq=False)
class Kind:
    """A check kind.

    Attributes: ``name`` (stable, stored), ``label`` (human), ``fields`` (for HTML forms),
    ``json_schema`` (JSON Schema of the config, for the OpenAPI docs), ``needs`` (the evidence parts
    it reads: output, tool_calls, trace, latency, messages), ``description`` (one line for pickers).
    """

    name: str
    label: str
    fields: tuple[FieldSpec, ...]
    evaluator: Evaluator = field(repr=False)
    needs: frozenset[str] = frozenset()
    json_schema: dict[str, Any] = field(default_factory=dict, repr=False)
    description: str = ""
    cleaner: Cleaner | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        unknown = set(self.needs) - EVIDENCE_PARTS
        if unknown:
            raise ValueError(f"kind {self.name!r}: unknown evidence parts {sorted(unknown)}")
        names = [f.name for f in self.fields]
        if len(names) != len(set(names)):
            raise ValueError(f"kind {self.name!r}: duplicate field names")

    @property
    def field_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    def default_config(self) -> dict[str, Any]:
        """Every field at its default (required fields without a default hold None)."""
        return {f.name: copy.deepcopy(f.default) for f in self.fields}

    def validate_config(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        """Return the normalised config (defaults filled, values canonical).

        Raises ConfigError naming each bad field. Unknown keys are an error. ``None`` (JSON null) for
        a field means "not set": the default applies, or a required field is reported missing.
        """
        if not isinstance(raw, Mapping):
            raise ConfigError({"config": f"must be a JSON object, not {json_type(raw)}"})
        errors: dict[str, str] = {}
        known = set(self.field_names)
        for key in raw:
            if key not in known:
                allowed = ", ".join(self.field_names)
                errors[str(key)] = f"unknown field for kind {self.name}; allowed fields: {allowed}"
        config: dict[str, Any] = {}
        for spec in self.fields:
            value = raw.get(spec.name)
            if value == "" and spec.type in ("text", "textarea", "choice") and not spec.required:
                value = None  # a blank optional form input means "not set"
            if value is None:
                if spec.required:
                    errors[spec.name] = "this field is required"
                config[spec.name] = copy.deepcopy(spec.default)
                continue
            problem, value = _check_type(spec, value)
            if problem:
                errors[spec.name] = problem
                value = None
            config[spec.name] = value
        if self.cleaner is not None:
            self.cleaner(config, errors)
        if errors:
            raise ConfigError(errors)
        return config

    def evaluate(self, config: Mapping[str, Any], evidence: Evidence, ctx: Context | None = None) -> Verdict:
        """Evaluate a validated config on one sample's evidence. Never raises.

        Malformed evidence gives INDETERMINATE naming the problem; an unexpected internal exception
        gives ERROR with the reason.
        """
        try:
            return self.evaluator(config, evidence, ctx)
        except Exception as exc:  # noqa: BLE001 - the engine must turn any failure into a verdict
            reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            return Verdict(
                outcome=Outcome.ERROR,
                expected=f"the {self.name} check to be evaluated",
                actual=f"it failed with an internal error ({reason})",
                explanation=(
                    f"Expected the {self.name} check to be evaluated, "
                    f"but it failed with an internal error ({reason})."
                ),
                details={"error": reason},
            )


def _check_type(spec: FieldSpec, value: Any) -> tuple[str, Any]:
    """Generic per-type check. Returns (problem or "", normalised value)."""
    kind = spec.type
    if kind in ("text", "textarea"):
        if not isinstance(value, str):
            return f"must be a string, not {json_type(value)}", None
        return "", value
    if kind == "bool":
        if not isinstance(value, bool):
            return f"must be true or false, not {json_type(value)}", None
        return "", value
    if kind == "int":
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            return f"must be a whole number, not {json_type(value)}", None
        if spec.minimum is not None and value < spec.minimum:
            return f"must be {spec.minimum:,} or more", None
        if spec.maximum is not None and value > spec.maximum:
            return f"must be at most {spec.maximum:,}", None
        return "", value
    if kind == "choice":
        if not isinstance(value, str) or value not in spec.choices:
            return f"must be one of {', '.join(spec.choices)}", None
        return "", value
    # list and json: structure is checked by the kind's cleaner; keep a private copy.
    return "", copy.deepcopy(value)


class UnknownKind(UnknownName):
    """No kind is registered under this name."""


_REGISTRY: Registry[Kind] = Registry("check kind", "kinds", UnknownKind)


def register(kind: Kind) -> Kind:
    """Add a kind to the registry and return it. A second kind with the same name is refused."""
    if not isinstance(kind, Kind):
        raise TypeError(f"register() takes a Kind, not {type(kind).__name__}")
    return _REGISTRY.add(kind)


def get_kind(name: str) -> Kind:
    """The kind registered as ``name``; raises UnknownKind (a KeyError) otherwise."""
    return _REGISTRY.named(name)


def all_kinds() -> list[Kind]:
    """Every registered kind, in registration order."""
    return list(_REGISTRY.values())


def kind_choices() -> list[tuple[str, str]]:
    """``(name, label)`` pairs for select widgets, in registration order."""
    return [(kind.name, kind.label) for kind in _REGISTRY.values()]
