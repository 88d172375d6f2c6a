"""Tool evidence from an OpenAI-style message list.

Chat Completions: assistant messages with ``tool_calls`` (``{"id", "function": {"name",
"arguments"}}``) answered by ``{"role": "tool", "tool_call_id", "content"}`` messages; the legacy
``function_call`` / ``{"role": "function", "name"}`` pair works too. Responses API items
(``{"type": "function_call", "call_id", "name", "arguments"}`` and
``{"type": "function_call_output", "call_id", "output"}``) are read as well.

A call whose result is present is ``succeeded`` with the result as ``output`` (JSON-decoded when
the content is JSON), or ``failed`` when the result signals an error; a call without a result is
``requested``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, Callable, Optional

from .protocol import to_jsonable

_ERROR_PREFIX = re.compile(r"^\s*(error|exception|traceback)\b[:\s]", re.IGNORECASE)


def _as_mapping(item: Any) -> Optional[Mapping]:
    if isinstance(item, Mapping):
        return item
    dump = getattr(item, "model_dump", None)  # openai SDK objects are pydantic models
    if callable(dump):
        try:
            data = dump()
        except Exception:  # noqa: BLE001
            return None
        return data if isinstance(data, Mapping) else None
    return None


def _parse_arguments(arguments: Any) -> Any:
    if isinstance(arguments, str):
        if not arguments.strip():
            return {}
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    return {} if arguments is None else to_jsonable(arguments)


def _content_value(content: Any) -> Any:
    """A tool result's content: JSON-decoded when it is JSON text, text parts joined."""
    if isinstance(content, list):
        texts = [p.get("text") for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str)]
        if len(texts) == len(content):
            content = "".join(texts)
        else:
            return to_jsonable(content)
    if isinstance(content, str):
        stripped = content.strip()
        if (
            stripped[:1] in ("{", "[", '"')
            or stripped in ("true", "false", "null")
            or _looks_numeric(stripped)
        ):
            try:
                return json.loads(stripped)
            except ValueError:
                return content
        return content
    return to_jsonable(content)


def _looks_numeric(text: str) -> bool:
    return bool(re.fullmatch(r"-?\d+(\.\d+)?([eE][-+]?\d+)?", text))


def default_error_of(message: Mapping, value: Any) -> Optional[str]:
    """The error a tool result signals, or None when it succeeded.

    Signals: ``"is_error": true`` or ``"status": "error"`` on the message (LangChain, Anthropic
    style), an ``"error"`` field on the message, a JSON object result with a non-empty ``"error"``,
    or text starting with ``Error:`` / ``Exception:`` / ``Traceback``.
    """
    flagged = message.get("is_error") is True or message.get("status") in ("error", "failed")
    explicit = message.get("error")
    if explicit not in (None, "", False):
        return explicit if isinstance(explicit, str) else json.dumps(to_jsonable(explicit))
    if isinstance(value, Mapping) and value.get("error") not in (None, "", False):
        err = value["error"]
        if isinstance(err, Mapping) and isinstance(err.get("message"), str):
            return err["message"]
        return err if isinstance(err, str) else json.dumps(to_jsonable(err))
    if isinstance(value, str) and _ERROR_PREFIX.match(value):
        return value.strip()
    if flagged:
        return value if isinstance(value, str) and value else "tool reported an error"
    return None


def from_openai_messages(
    messages: Iterable[Any],
    *,
    error_of: Callable[[Mapping, Any], Optional[str]] = default_error_of,
) -> list[dict[str, Any]]:
    """``toolCalls`` entries for every tool call in ``messages``, in call order.

    Pass only the messages your agent produced in this turn (not an earlier history whose calls
    you do not want counted). ``error_of(message, value)`` decides whether a tool result is an
    error (default: :func:`default_error_of`). ``[]`` when no tool was called.
    """
    calls: list[dict[str, Any]] = []
    by_id: dict[str, dict[str, Any]] = {}
    pending_by_name: dict[str, list[dict[str, Any]]] = {}  # legacy function_call without ids

    def add(call_id: Optional[str], name: Any, arguments: Any) -> None:
        if not isinstance(name, str) or not name:
            return
        entry: dict[str, Any] = {"name": name, "status": "requested", "input": _parse_arguments(arguments)}
        calls.append(entry)
        if call_id:
            by_id[str(call_id)] = entry
        else:
            pending_by_name.setdefault(name, []).append(entry)

    def resolve(entry: Optional[dict[str, Any]], message: Mapping, content: Any) -> None:
        if entry is None:
            return
        value = _content_value(content)
        error = error_of(message, value)
        entry.pop("output", None)
        entry.pop("error", None)
        if error is None:
            entry["status"] = "succeeded"
            entry["output"] = value
        else:
            entry["status"] = "failed"
            entry["error"] = error

    for raw in messages:
        message = _as_mapping(raw)
        if message is None:
            continue
        kind = message.get("type")
        role = message.get("role")
        if kind == "function_call":  # Responses API
            add(message.get("call_id") or message.get("id"), message.get("name"), message.get("arguments"))
        elif kind == "function_call_output":
            resolve(by_id.get(str(message.get("call_id"))), message, message.get("output"))
        elif role == "assistant":
            for raw_call in message.get("tool_calls") or []:
                call = _as_mapping(raw_call)
                if call is None:
                    continue
                fn = _as_mapping(call.get("function")) or call
                add(call.get("id"), fn.get("name"), fn.get("arguments"))
            legacy = _as_mapping(message.get("function_call"))
            if legacy is not None:
                add(None, legacy.get("name"), legacy.get("arguments"))
        elif role == "tool":
            resolve(by_id.get(str(message.get("tool_call_id"))), message, message.get("content"))
        elif role == "function":
            queue = pending_by_name.get(str(message.get("name")), [])
            resolve(queue.pop(0) if queue else None, message, message.get("content"))
    return calls


def split_openai_reply(messages: list[Any]) -> tuple[str, list[dict[str, Any]]]:
    """``(output, tool_calls)`` for a turn: the last assistant text and every tool call."""
    output = ""
    for raw in reversed(messages):
        message = _as_mapping(raw)
        if message is None or message.get("role") != "assistant":
            continue
        content = message.get("content")
        if isinstance(content, str):
            output = content
        elif isinstance(content, list):
            output = "".join(
                p.get("text", "")
                for p in content
                if isinstance(p, Mapping) and isinstance(p.get("text"), str)
            )
        break
    return output, from_openai_messages(messages)
