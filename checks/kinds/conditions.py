"""Input conditions of tool_usage: dot paths into a tool call's input and the four operators.

- ``equals``: JSON equality (booleans never equal numbers; 1 equals 1.0); a string ``value`` also
  equals a number or boolean whose JSON text it is (``"42"`` equals 42, ``"true"`` equals true).
- ``contains``: substring of a string field (a non-string value is looked for as its JSON text), or
  an element of a list field (by the ``equals`` rule). Other field types do not contain anything.
- ``has_value``: the field exists and is not null, ``""`` or ``[]``.
- ``matches``: an RE2 pattern found anywhere in the field's text (a non-string field is matched
  against its compact JSON text); anchor with ``^…$``.

A missing field (or a path through a non-container) fails every condition and never errors.
Paths are dot-separated; a segment of ASCII digits indexes a list (``items.0.sku``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from . import regex
from ._common import bounded_list, json_text, json_type

__all__ = [
    "MISSING",
    "OPS",
    "clean_inputs",
    "condition_met",
    "describe_condition",
    "json_equal",
    "lookup",
]

OPS = ("equals", "contains", "has_value", "matches")
MAX_CONDITIONS = 20
MISSING: Any = type("Missing", (), {"__repr__": lambda self: "MISSING", "__slots__": ()})()

# JSON number grammar (stdlib re is safe here: the expression is unambiguous, so matching is linear).
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


def lookup(value: Any, path: str) -> Any:
    """The value at dot ``path`` inside ``value``, or MISSING."""
    for segment in path.split("."):
        if type(value) is dict or isinstance(value, Mapping):
            if segment not in value:
                return MISSING
            value = value[segment]
        elif isinstance(value, list | tuple):
            if not (segment.isascii() and segment.isdigit()):
                return MISSING
            position = int(segment)
            if position >= len(value):
                return MISSING
            value = value[position]
        else:
            return MISSING
    return value


def json_equal(a: Any, b: Any) -> bool:
    """Equality of two JSON values (bool is not a number; 1 == 1.0; objects by keys and values)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return False


def _equals(actual: Any, want: Any) -> bool:
    if json_equal(actual, want):
        return True
    if isinstance(want, str):  # "a string value also equals a number or boolean whose JSON text it is"
        if isinstance(actual, bool):
            return want == ("true" if actual else "false")
        if isinstance(actual, int | float) and _JSON_NUMBER.fullmatch(want):
            return json.loads(want) == actual
    return False


def _text_of(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return str(value)


def condition_met(condition: Mapping[str, Any], tool_input: Any) -> bool:
    """Whether one validated condition holds for one call's input. Never raises on any input."""
    actual = lookup(tool_input, condition["field"])
    if actual is MISSING:
        return False
    op = condition["op"]
    want = condition.get("value")
    if op == "equals":
        return _equals(actual, want)
    if op == "has_value":
        return actual is not None and actual != "" and not (isinstance(actual, list | tuple) and not actual)
    if op == "contains":
        if isinstance(actual, str):
            return _text_of(want) in actual
        if isinstance(actual, list | tuple):
            return any(_equals(item, want) for item in actual)
        return False
    if op == "matches":
        return regex.search(want, _text_of(actual)) is not None
    return False


_OP_TEXT = {"equals": "equal to", "contains": "containing", "matches": "matching"}


def describe_condition(condition: Mapping[str, Any]) -> str:
    """E.g. ``orderId equal to "EC-1042"``, ``items containing 3``, ``note with a value``."""
    field, op, value = condition["field"], condition["op"], condition.get("value")
    if op == "has_value":
        return f"{field} with a value"
    shown = regex.show(value, 80) if op == "matches" else json_text(value, 80)
    return f"{field} {_OP_TEXT.get(op, op)} {shown}"


def clean_inputs(raw: Any, errors: dict[str, str], name: str = "inputs") -> list[dict[str, Any]]:
    """Validate and normalise the ``inputs`` list; report problems as ``inputs.<i>.<key>``."""
    cleaned: list[dict[str, Any]] = []
    items = bounded_list(raw, errors, name, MAX_CONDITIONS, "conditions", "a list of conditions")
    for i, item in enumerate(items):
        where = f"{name}.{i}"
        if not isinstance(item, Mapping):
            errors[where] = f"must be an object with field, op and value, not {json_type(item)}"
            continue
        for key in item:
            if key not in ("field", "op", "value"):
                errors[f"{where}.{key}"] = "unknown key; a condition has field, op and value"
        field = item.get("field")
        if not isinstance(field, str) or not field.strip():
            errors[f"{where}.field"] = (
                "this field is required (a dot path into the tool input, e.g. order.id)"
            )
        else:
            field = field.strip()
            if any(not segment for segment in field.split(".")):
                errors[f"{where}.field"] = f"{field!r} is not a dot path (empty segment)"
        op = item.get("op")
        if op not in OPS:
            errors[f"{where}.op"] = f"must be one of {', '.join(OPS)}"
        value = item.get("value")
        if op == "has_value":
            value = None  # has_value takes no value; a leftover form value is dropped
        elif op == "equals":
            if "value" not in item:
                errors[f"{where}.value"] = "this field is required (use null to require null)"
        elif op == "contains":
            if value is None:
                errors[f"{where}.value"] = "this field is required"
        elif op == "matches":
            problem = regex.pattern_problem(value)
            if problem:
                errors[f"{where}.value"] = problem
        cleaned.append({"field": field, "op": op, "value": value})
    return cleaned
