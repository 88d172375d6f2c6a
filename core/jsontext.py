"""Can a JSON value be stored? One screen for pages, API, admin and ingestion (no Django, no DRF)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MAX_JSON_DEPTH = 32  # what pages and the API accept; live tasks allow deeper traces (monitors.services)


def json_text_problem(value: Any, depth: int = 0, *, max_depth: int = MAX_JSON_DEPTH) -> str | None:
    """Why a JSON value cannot be stored (a NUL byte, a lone surrogate, NaN, too deep), or None."""
    if depth > max_depth:
        return f"is nested more than {max_depth} levels deep"
    if isinstance(value, str):
        if "\x00" in value:
            return "must not contain NUL characters (\\u0000)"
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return "must not contain lone surrogate characters"
        return None
    if isinstance(value, Mapping):
        for key, item in value.items():
            problem = json_text_problem(str(key), depth + 1, max_depth=max_depth) or json_text_problem(
                item, depth + 1, max_depth=max_depth
            )
            if problem:
                return problem
        return None
    if isinstance(value, list | tuple):
        for item in value:
            problem = json_text_problem(item, depth + 1, max_depth=max_depth)
            if problem:
                return problem
        return None
    if isinstance(value, float) and value != value:  # NaN never comes from strict JSON, but be sure
        return "must not contain NaN"
    return None
