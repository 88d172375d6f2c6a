"""Check kinds: pure evaluators in a registry. No Django imports anywhere in this package.

Adding a kind is a new module that calls ``register(Kind(...))`` plus one import line below.
"""

# ruff: noqa: I001 - the kind imports stay in registration order (the order pickers show)
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .base import ConfigError, Context, Evidence, FieldSpec, Outcome, Verdict
from .registry import Kind, UnknownKind, all_kinds, get_kind, kind_choices, register

# One import per kind module; registration order is the order pickers show.
from . import text_includes  # noqa: E402,F401
from . import text_equals  # noqa: E402,F401
from . import tool_usage  # noqa: E402,F401
from . import trace  # noqa: E402,F401
from . import text_matches  # noqa: E402,F401
from . import json_schema  # noqa: E402,F401
from . import latency  # noqa: E402,F401
from . import tool_sequence  # noqa: E402,F401
from . import ai_judge  # noqa: E402,F401
from . import state  # noqa: E402,F401
from . import process  # noqa: E402,F401

__all__ = [
    "ConfigError",
    "Context",
    "Evidence",
    "FieldSpec",
    "Kind",
    "Outcome",
    "UnknownKind",
    "Verdict",
    "all_kinds",
    "evaluate",
    "get_kind",
    "kind_choices",
    "register",
    "validate_config",
]


def evaluate(
    kind_name: str, config: Mapping[str, Any], evidence: Evidence, ctx: Context | None = None
) -> Verdict:
    """Evaluate an (already validated) config of kind ``kind_name``. Raises UnknownKind only."""
    return get_kind(kind_name).evaluate(config, evidence, ctx)


def validate_config(kind_name: str, raw: Mapping[str, Any]) -> dict[str, Any]:
    """Normalised config for ``kind_name``; raises UnknownKind or ConfigError."""
    return get_kind(kind_name).validate_config(raw)
