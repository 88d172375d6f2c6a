"""Describing JSON values in messages. Standard library only: ``checks.kinds`` imports it and must
stay free of Django."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["json_type"]


def json_type(value: object) -> str:
    """What kind of JSON value ``value`` is, for a sentence: "null", "a boolean", "a number",
    "a string", "a list", "an object" (anything else: "a <type name>")."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return f"a {type(value).__name__}"
