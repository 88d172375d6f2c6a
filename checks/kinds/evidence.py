"""Validation of the agent-reported ``toolCalls`` and ``trace`` (DESIGN.md "Calling an agent").

The raw value is never trusted: ``None`` (key missing) means "unknown", ``[]`` means "captured, none
happened", anything else must have the documented shape. A problem is reported as text naming the
item index; kinds turn it into an INDETERMINATE verdict. Parsing happens once per Evidence.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from ._common import json_type
from .base import Evidence

__all__ = [
    "MISSING_TOOL_CALLS",
    "MISSING_TRACE",
    "TOOL_STATUSES",
    "ParsedToolCalls",
    "ParsedTrace",
    "ToolCall",
    "TraceEntry",
    "parse_tool_calls",
    "parse_trace",
    "parse_world_trace",
    "tool_calls_of",
    "trace_of",
]

MISSING_TOOL_CALLS = "the agent did not report tool activity"
MISSING_TRACE = "the agent did not report its API calls"
TOOL_STATUSES = ("requested", "succeeded", "failed")
_TOOL_STATUS_SET = frozenset(TOOL_STATUSES)


class ToolCall(NamedTuple):
    index: int
    name: str
    status: str
    input: Any  # as reported (normally an object); missing -> None
    node: str | None


class TraceEntry(NamedTuple):
    index: int
    method: str  # upper-cased
    path: str  # query string removed, always starting with "/"
    status: int | None  # None: no HTTP response (timeout, connection error)
    tool: str | None
    # The tool answered but did not do it: a coverage gap, Slack ``ok: false``, a GraphQL answer of
    # only ``errors`` (a world's trace records these; an agent may report them too).
    refused: bool = False

    @property
    def worked(self) -> bool:
        """A working call: an HTTP response with a status below 400 that the tool did not refuse."""
        return self.status is not None and 100 <= self.status < 400 and not self.refused


class ParsedToolCalls(NamedTuple):
    calls: tuple[ToolCall, ...]
    problem: str  # "" when usable


class ParsedTrace(NamedTuple):
    entries: tuple[TraceEntry, ...]
    problem: str


def _parse_list(raw: object, name: str, missing: str, parse_item: Callable[[int, Mapping], Any]) -> Any:
    """``(items, "")``: each object of the reported list ``name`` read by ``parse_item(index, item)``
    (the item, or the problem as text after ``name[index]``); ``((), problem)`` at the first problem."""
    if raw is None:
        return (), missing
    if not isinstance(raw, list | tuple):
        return (), f"the reported {name} is {json_type(raw)}, not a list"
    parsed: list[Any] = []
    append = parsed.append
    # `type(x) is dict/str` first: the ABC isinstance checks are the slow part of a hot loop.
    for index, item in enumerate(raw):
        if type(item) is not dict and not isinstance(item, Mapping):
            return (), f"{name}[{index}] is {json_type(item)}, not an object"
        one = parse_item(index, item)
        if type(one) is str:
            return (), f"{name}[{index}] {one}"
        append(one)
    return tuple(parsed), ""


def parse_tool_calls(raw: object) -> ParsedToolCalls:
    return ParsedToolCalls(*_parse_list(raw, "toolCalls", MISSING_TOOL_CALLS, _tool_call))


def parse_trace(raw: object) -> ParsedTrace:
    return ParsedTrace(*_parse_list(raw, "trace", MISSING_TRACE, _trace_entry))


_new = tuple.__new__  # builds a NamedTuple without its Python-level __new__ (3x faster)


def _tool_call(index: int, item: Mapping) -> ToolCall | str:
    name = item.get("name")
    if (type(name) is not str and not isinstance(name, str)) or not name:
        if name is None:
            return "has no name"
        return "has an empty name" if name == "" else f"has a name that is {json_type(name)}, not a string"
    status = item.get("status")
    if (type(status) is not str and not isinstance(status, str)) or status not in _TOOL_STATUS_SET:
        if status is None:
            what = "has no status"
        elif isinstance(status, str):
            what = f"has an unknown status {status!r}"
        else:
            what = f"has a status that is {json_type(status)}"
        return f"{what} (expected requested, succeeded or failed)"
    node = item.get("node")
    if node is not None and type(node) is not str and not isinstance(node, str):
        return f"has a node that is {json_type(node)}, not a string"
    return _new(ToolCall, (index, name, status, item.get("input"), node or None))


def _trace_entry(index: int, item: Mapping) -> TraceEntry | str:
    method = item.get("method")
    if (type(method) is not str and not isinstance(method, str)) or not method.strip():
        if method is None or method == "":
            return "has no method"
        return f"has a method that is {json_type(method)}, not a string"
    path = item.get("path")
    if type(path) is not str and not isinstance(path, str):
        return "has no path" if path is None else f"has a path that is {json_type(path)}, not a string"
    if "status" not in item:
        return "has no status"
    status = item["status"]
    if (
        status is not None
        and not (type(status) is int and 0 <= status <= 999)
        and (isinstance(status, bool) or not isinstance(status, int) or not 0 <= status <= 999)
    ):
        # (fast path above for a plain int; booleans are not status codes, int subclasses are)
        return f"has a status that is not an HTTP status code ({_short(status)})"
    tool = item.get("tool")
    if tool is not None and not isinstance(tool, str):
        return f"has a tool that is {json_type(tool)}, not a string"
    cut = path.find("?")
    if cut >= 0:
        path = path[:cut]
    if not path.startswith("/"):
        path = "/" + path  # paths are relative to the tool's base URL; "a/b" and "/a/b" are one path
    refused = _refused(item)
    if isinstance(refused, str):
        return refused
    return _new(TraceEntry, (index, method.strip().upper(), path, status, tool, refused))


def _refused(item: Mapping[str, Any]) -> bool | str:
    """The optional flags of a trace item (``coverage_gap``, ``slack_ok``, ``graphql_errors_only``,
    ``worked``) folded into "the tool refused it"; a problem text for a flag that is not a boolean."""
    refused = False
    for name, bad in (
        ("coverage_gap", True),
        ("slack_ok", False),
        ("graphql_errors_only", True),
        ("worked", False),
    ):
        value = item.get(name)
        if value is None:
            continue
        if not isinstance(value, bool):
            return f"has {name} that is {json_type(value)}, not true or false"
        refused = refused or value is bad
    return refused


def parse_world_trace(entries: Any) -> ParsedTrace:
    """A world's recorded trace (objects or dicts with ``seq``, ``method``, ``path``, ``status``,
    ``tool`` and the worked flags), indexed by ``seq`` so evidence cites the world's trace entries.
    The world wrote it, so it is read as is."""
    parsed: list[TraceEntry] = []
    for entry in entries:
        get = entry.get if isinstance(entry, Mapping) else lambda name, e=entry: getattr(e, name, None)
        flags = {name: get(name) for name in ("coverage_gap", "slack_ok", "graphql_errors_only")}
        path = str(get("path") or "/").split("?", 1)[0]
        parsed.append(
            TraceEntry(
                int(get("seq")),
                str(get("method")).upper(),
                path if path.startswith("/") else "/" + path,
                get("status"),
                get("tool"),
                _refused(flags) is True,
            )
        )
    return ParsedTrace(tuple(parsed), "")


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "…"


def _memoised(evidence: Evidence, part: str, parse: Callable[[object], Any]) -> Any:
    """``parse(evidence.<part>)``, computed once per Evidence (memoised under the part's name)."""
    memo = evidence.memo()
    parsed = memo.get(part)
    if parsed is None:
        parsed = memo[part] = parse(getattr(evidence, part))
    return parsed


def tool_calls_of(evidence: Evidence) -> ParsedToolCalls:
    """Parsed ``evidence.tool_calls``, memoised on the Evidence."""
    return _memoised(evidence, "tool_calls", parse_tool_calls)


def trace_of(evidence: Evidence) -> ParsedTrace:
    """Parsed ``evidence.trace``, memoised on the Evidence. A sample with a world reads the world's
    recorded trace instead (what really happened, not what the agent reports)."""
    memo = evidence.memo()
    parsed = memo.get("trace")
    if parsed is None:
        world = getattr(evidence, "world", None)
        parsed = memo["trace"] = (
            parse_trace(evidence.trace) if world is None else parse_world_trace(world.trace)
        )
    return parsed
