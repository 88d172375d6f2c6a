"""The ``evalconsole/1`` request and reply shapes (standard library only).

Request: ``{"protocol": "evalconsole/1", "run", "sample", "attempt",
"scenario": {"name", "input", "messages": [{"role", "content"}], "metadata"}}``.
Reply: ``{"output": str, "toolCalls": [{"name", "status", "input"?, "output"?, "error"?, "node"?}]}``
where ``toolCalls: []`` means "captured, none ran" and a missing key means "unknown".
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from typing import Any, Optional

PROTOCOL = "evalconsole/1"
ROLES = ("system", "user", "assistant", "tool")
TOOL_STATUSES = ("requested", "succeeded", "failed")


class ProtocolError(ValueError):
    """A request body that is not a valid ``evalconsole/1`` request (HTTP 400)."""

    def __init__(self, message: str, field: Optional[str] = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field

    def as_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"error": self.message}
        if self.field:
            body["field"] = self.field
        return body


def _optional_id(body: Mapping, key: str) -> str:
    value = body.get(key)
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise ProtocolError(f"{key} must be a string", key)


def parse_request(body: Any) -> dict[str, Any]:
    """Validate a decoded JSON body; return a clean copy with defaults filled in.

    Raises :class:`ProtocolError` naming the offending field.
    """
    if not isinstance(body, Mapping):
        raise ProtocolError("request body must be a JSON object")
    protocol = body.get("protocol")
    if protocol is not None and protocol != PROTOCOL:
        raise ProtocolError(f"unsupported protocol {json.dumps(protocol)}; expected {PROTOCOL!r}", "protocol")
    attempt = body.get("attempt", 1)
    if attempt is None:
        attempt = 1
    if not isinstance(attempt, int) or isinstance(attempt, bool) or attempt < 1:
        raise ProtocolError("attempt must be a positive integer", "attempt")

    raw = body.get("scenario")
    if not isinstance(raw, Mapping):
        raise ProtocolError("scenario must be an object", "scenario")
    name = raw.get("name") or ""
    if not isinstance(name, str):
        raise ProtocolError("scenario.name must be a string", "scenario.name")
    text = raw.get("input")
    if text is not None and not isinstance(text, str):
        raise ProtocolError("scenario.input must be a string", "scenario.input")
    metadata = raw.get("metadata")
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, Mapping):
        raise ProtocolError("scenario.metadata must be an object", "scenario.metadata")
    raw_messages = raw.get("messages")
    if raw_messages is None:
        raw_messages = []
    if not isinstance(raw_messages, list):
        raise ProtocolError("scenario.messages must be a list", "scenario.messages")
    messages: list[dict[str, str]] = []
    for index, message in enumerate(raw_messages):
        where = f"scenario.messages[{index}]"
        if not isinstance(message, Mapping):
            raise ProtocolError(f"{where} must be an object", where)
        if message.get("role") not in ROLES:
            raise ProtocolError(f"{where}.role must be one of {', '.join(ROLES)}", f"{where}.role")
        if not isinstance(message.get("content"), str):
            raise ProtocolError(f"{where}.content must be a string", f"{where}.content")
        messages.append({"role": message["role"], "content": message["content"]})
    if not messages and text is None:
        raise ProtocolError("scenario needs input or messages", "scenario")

    return {
        "protocol": PROTOCOL,
        "run": _optional_id(body, "run"),
        "sample": _optional_id(body, "sample"),
        "attempt": attempt,
        "scenario": {"name": name, "input": text, "messages": messages, "metadata": dict(metadata)},
    }


def scenario_messages(scenario: Mapping) -> list[dict[str, str]]:
    """The conversation for the agent: the scenario's messages, else its input as one user message."""
    messages = scenario.get("messages") or []
    if messages:
        return [{"role": m["role"], "content": m["content"]} for m in messages]
    return [{"role": "user", "content": scenario.get("input") or ""}]


def to_jsonable(value: Any, _depth: int = 0) -> Any:
    """A JSON-safe copy: dataclasses and pydantic models become dicts, sets and tuples lists,
    non-finite floats and unknown objects strings."""
    if _depth > 50:
        return repr(value)
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v, _depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
        return [to_jsonable(v, _depth + 1) for v in items]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_jsonable(dataclasses.asdict(value), _depth + 1)
    dump = getattr(value, "model_dump", None)  # pydantic v2
    if callable(dump):
        try:
            return to_jsonable(dump(mode="json"), _depth + 1)
        except Exception:  # noqa: BLE001 - fall back to repr below
            pass
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    return str(value)


def error_message(error: BaseException) -> str:
    """The text reported for a failed call: the exception's message, else its type name."""
    text = str(error)
    if not text and error.args:
        text = repr(error.args[0])
    return text or type(error).__name__


def normalize_tool_calls(tool_calls: Any) -> list[dict[str, Any]]:
    """Check and JSON-clean a list of tool-call dicts (raises TypeError for a malformed one)."""
    if not isinstance(tool_calls, (list, tuple)):
        raise TypeError(f"tool calls must be a list, not {type(tool_calls).__name__}")
    clean: list[dict[str, Any]] = []
    for index, call in enumerate(tool_calls):
        if not isinstance(call, Mapping):
            raise TypeError(f"tool call {index} must be a dict, not {type(call).__name__}")
        name = call.get("name")
        if not isinstance(name, str) or not name:
            raise TypeError(f"tool call {index} needs a non-empty name")
        status = call.get("status")
        if status not in TOOL_STATUSES:
            raise TypeError(
                f"tool call {index} ({name}) has status {status!r}; expected one of {TOOL_STATUSES}"
            )
        item: dict[str, Any] = {"name": name, "status": status}
        for key in ("input", "output"):
            if key in call:
                item[key] = to_jsonable(call[key])
        if call.get("error") is not None:
            item["error"] = str(call["error"])
        if call.get("node") is not None:
            item["node"] = str(call["node"])
        clean.append(item)
    return clean
