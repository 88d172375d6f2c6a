"""process: what happened between the agent and the people of the sample's world (``revealed``,
``knows``, ``told``, ``decided``, ``message``, ``never``, ``before``, ``within``).

The config is the scene form of one process check: ``{"revealed": ["laura.workspace"]}``,
``{"message": {"to": "laura", "from": "$slack_bot"}}``... This package sits below ``worlds`` and
cannot import it, so the shape is checked minimally here; the people, facts, decisions and refs are
validated against each scene of the test that holds the check (WORLDS.md "In the console").

A sample played in a world carries it as ``evidence.world`` (duck-typed: ``.process_check(kind,
value)`` answering passed, expected, actual, explanation, evidence and events); a sample without one
is INDETERMINATE ("this sample has no world").
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from ._common import json_type
from .base import ConfigError, Context, Evidence, FieldSpec, Verdict
from .registry import Kind, register
from .state import world_check

PROCESS_KINDS = ("revealed", "knows", "told", "decided", "message", "never", "before", "within")


def process_kind(config: Mapping[str, Any]) -> str:
    """The process kind a validated config names."""
    return next(key for key in config if key in PROCESS_KINDS)


class ProcessKind(Kind):
    """A kind whose one config key is the process check's kind (the generic fixed fields give way)."""

    def validate_config(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        if not isinstance(raw, Mapping):
            raise ConfigError({"config": f"must be a JSON object, not {json_type(raw)}"})
        if set(raw) == {"process"} and isinstance(raw["process"], Mapping):
            raw = raw["process"]  # the builder's one JSON field holds the scene form
        kinds = [key for key in raw if key in PROCESS_KINDS]
        others = [str(key) for key in raw if key not in PROCESS_KINDS]
        if len(kinds) != 1 or others:
            raise ConfigError(
                {
                    "config": f"name exactly one process check ({', '.join(PROCESS_KINDS)}), e.g. "
                    '{"revealed": ["laura.workspace"]}'
                    + (f"; unknown: {', '.join(others)}" if others else "")
                }
            )
        if raw[kinds[0]] is None:
            raise ConfigError({kinds[0]: "must not be null"})
        return copy.deepcopy(dict(raw))


def _evaluate(config: Mapping[str, Any], evidence: Evidence, ctx: Context | None = None) -> Verdict:
    kind = process_kind(config)
    return world_check(
        evidence, f"the world's {kind} check to hold", lambda world: world.process_check(kind, config[kind])
    )


KIND = ProcessKind(
    name="process",
    label="People and process",
    description="Who was asked, who learned or decided what, which messages reached whom, in what order "
    "and how fast (scene tests with people only).",
    fields=(
        FieldSpec(
            "process",
            "Process check",
            "json",
            required=True,
            help='One process check in its scene form, e.g. {"revealed": ["laura.workspace"]} or '
            '{"within": {"event": {"message": {"to": "laura"}}, "limit": "30m"}}.',
        ),
    ),
    json_schema={
        "type": "object",
        "minProperties": 1,
        "maxProperties": 1,
        "description": "One process check (revealed, knows, told, decided, message, never, before, within) "
        "in its scene form; people, facts and refs are validated against each scene of the test.",
    },
    evaluator=_evaluate,
)
register(KIND)
