"""state: a condition on the final state of the sample's world (``slack.message``, ``github.issue``...).

The config is the scene form of a state check: one ``"<tool>.<check>"`` key (or ``fault_resolved``)
whose value is the selector object (a list or a ref for the positional and scalar forms), with any
other fields beside it (``{"datadog.monitor": "$m", "is": "OK"}``). This package sits below
``worlds`` and cannot import it, so the shape is checked minimally here; the refs and fields are
validated against each scene of the test that holds the check (WORLDS.md "In the console").

A sample played in a world carries it as ``evidence.world`` (duck-typed:
``.state_check(name, spec, written=True)``, refs as written,
answering passed, expected, actual, explanation and evidence); a sample without one is
INDETERMINATE ("this sample has no world").
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from typing import Any

from ._common import indeterminate, json_type
from .base import ConfigError, Context, Evidence, FieldSpec, Outcome, Verdict
from .registry import Kind, register

NO_WORLD = "this sample has no world"
_NAME = re.compile(r"[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*|fault_resolved")
_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_name(config: Mapping[str, Any]) -> str:
    """The ``<tool>.<check>`` key of a validated config."""
    return next(key for key in config if _NAME.fullmatch(key))


def spec_of(config: Mapping[str, Any]) -> dict[str, Any]:
    """The selector and the fields beside it, as one object (``{"monitor": "$m", "is": "OK"}``
    keeps the positional and scalar forms under the check's name)."""
    name = check_name(config)
    inner = config[name]
    spec: dict[str, Any] = dict(inner) if isinstance(inner, Mapping) else {name: inner}
    for key, value in config.items():
        if key != name:
            spec.setdefault(key, value)
    return spec


class StateKind(Kind):
    """A kind whose one config key is the state check's name, so the generic field check (fixed
    field names) gives way to this shape check."""

    def validate_config(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        if not isinstance(raw, Mapping):
            raise ConfigError({"config": f"must be a JSON object, not {json_type(raw)}"})
        if set(raw) == {"state"} and isinstance(raw["state"], Mapping):
            raw = raw["state"]  # the builder's one JSON field holds the scene form
        names = [key for key in raw if isinstance(key, str) and _NAME.fullmatch(key)]
        if len(names) != 1:
            raise ConfigError(
                {
                    "config": 'name exactly one state check, as "<tool>.<check>" (e.g. slack.message)'
                    if not names
                    else f"one state check per check, not {', '.join(names)}"
                }
            )
        errors: dict[str, str] = {}
        name = names[0]
        inner = raw[name]
        if inner is None or not isinstance(inner, Mapping | list | str):
            errors[name] = f"must be an object (or a list or a ref), not {json_type(inner)}"
        for key in raw:
            if key != name and not (isinstance(key, str) and _FIELD.fullmatch(key)):
                errors[str(key)] = "unknown field: fields beside the state check are plain names"
        if errors:
            raise ConfigError(errors)
        return copy.deepcopy(dict(raw))


def _evaluate(config: Mapping[str, Any], evidence: Evidence, ctx: Context | None = None) -> Verdict:
    name = check_name(config)
    return world_check(
        evidence,
        f"the world's {name} to hold",
        lambda world: world.state_check(name, spec_of(config), written=True),
    )


def world_check(evidence: Evidence, expected: str, ask: Callable[[Any], Any]) -> Verdict:
    """A check that the sample's world answers: `ask(world)`'s result as a verdict, or indeterminate
    (expecting `expected`) when the sample played no scene."""
    world = getattr(evidence, "world", None)
    if world is None:
        return indeterminate(expected, NO_WORLD)
    return world_verdict(ask(world))


def world_verdict(result: Any) -> Verdict:
    """A world's answer to a check (passed, expected, actual, explanation, evidence, events) as a
    verdict: pass or fail, citing the trace seqs as evidence and the events in the details."""
    return Verdict(
        Outcome.PASS if result.passed else Outcome.FAIL,
        result.expected,
        result.actual,
        result.explanation,
        tuple(result.evidence),
        {"events": list(getattr(result, "events", ()) or ())},
    )


KIND = StateKind(
    name="state",
    label="World state",
    description="The final state of the sample's world meets a condition (scene tests only).",
    fields=(
        FieldSpec(
            "state",
            "State check",
            "json",
            required=True,
            help='One "<tool>.<check>" key and its selector, e.g. {"slack.message": {"channel": "$c"}}.',
        ),
    ),
    json_schema={
        "type": "object",
        "minProperties": 1,
        "description": 'One "<tool>.<check>" key (slack.message, github.issue, ...) and its selector; '
        "refs are validated against each scene of the test.",
    },
    evaluator=_evaluate,
)
register(KIND)
