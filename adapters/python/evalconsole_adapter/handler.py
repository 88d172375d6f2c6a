"""``wrap(fn)``: any Python agent callable → an ``evalconsole/1`` protocol handler."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
from collections.abc import Mapping
from typing import Any, Callable, Optional

from .protocol import normalize_tool_calls, parse_request, scenario_messages, to_jsonable
from .recorder import ToolRecorder


@dataclasses.dataclass(frozen=True)
class Context:
    """What an agent function may ask for with a ``context`` parameter."""

    run: str
    sample: str
    attempt: int
    scenario: dict[str, Any]
    request: dict[str, Any]
    recorder: Optional[ToolRecorder]


async def _await(awaitable: Any) -> Any:
    return await awaitable


def _run_awaitable(awaitable: Any) -> Any:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_await(awaitable))
    raise RuntimeError(
        "the agent is async and an event loop is running here: use `await handler.acall(request)`"
    )


def _accepts_context(fn: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "context" or p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


def _is_async(fn: Callable[..., Any]) -> bool:
    # Reads the __call__ method, not a callability test (what B004 guards against): an object whose __call__
    # is async is an async agent.
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004
    )


def build_reply(result: Any, recorded: Optional[list[dict[str, Any]]] = None) -> dict[str, Any]:
    """The reply body for what an agent function returned.

    ``str`` → the output; ``(output, tool_calls)`` → both; a dict → its ``output``, ``toolCalls``
    (or ``tool_calls``), ``messages`` and ``trace``. When the result carries no tool calls, the
    ``recorded`` ones are used (``[]`` when a recorder was open and nothing ran); with neither,
    ``toolCalls`` is left out ("unknown").
    """
    tool_calls: Any = None
    extra: dict[str, Any] = {}
    if isinstance(result, str):
        output: Any = result
    elif isinstance(result, tuple) and len(result) == 2:
        output, tool_calls = result
    elif isinstance(result, Mapping):
        if "output" not in result:
            raise TypeError("the agent's reply dict has no 'output'")
        output = result["output"]
        tool_calls = result.get("toolCalls", result.get("tool_calls"))
        for key in ("messages", "trace"):
            if result.get(key) is not None:
                if not isinstance(result[key], (list, tuple)):
                    raise TypeError(f"the agent's reply {key!r} must be a list")
                extra[key] = to_jsonable(result[key])
    else:
        raise TypeError(
            f"the agent returned {type(result).__name__}; "
            "return a str, (output, tool_calls) or a dict with 'output'"
        )
    if output is None:
        output = ""
    if not isinstance(output, str):
        raise TypeError(f"the agent's output must be a str, not {type(output).__name__}")

    reply: dict[str, Any] = {"output": output}
    if tool_calls is None:
        tool_calls = recorded
    if tool_calls is not None:
        reply["toolCalls"] = normalize_tool_calls(tool_calls)
    reply.update(extra)
    return reply


class Handler:
    """An ``evalconsole/1`` handler: ``handler(request_json) -> reply_json``.

    Raises :class:`~evalconsole_adapter.ProtocolError` for a bad request and lets the agent's own
    exceptions through (the HTTP apps turn them into 400 and 500). ``await handler.acall(...)``
    runs a sync agent in a worker thread and an async one on the running loop.
    """

    def __init__(self, fn: Callable[..., Any], recorder: Optional[ToolRecorder] = None) -> None:
        if not callable(fn):
            raise TypeError("wrap() needs a callable agent(messages, scenario)")
        self.fn = fn
        self.recorder = recorder
        self._context = _accepts_context(fn)
        self._async = _is_async(fn)
        functools_name = getattr(fn, "__name__", None)
        if functools_name:
            self.__name__ = functools_name

    def __repr__(self) -> str:
        return f"<evalconsole handler for {self.fn!r}>"

    def _recording(self) -> Any:
        return self.recorder if self.recorder is not None else contextlib.nullcontext(None)

    def _call_fn(self, request: dict[str, Any]) -> Any:
        scenario = request["scenario"]
        messages = scenario_messages(scenario)
        if self._context:
            context = Context(
                run=request["run"],
                sample=request["sample"],
                attempt=request["attempt"],
                scenario=scenario,
                request=request,
                recorder=self.recorder,
            )
            return self.fn(messages, scenario, context=context)
        return self.fn(messages, scenario)

    def __call__(self, request_json: Any) -> dict[str, Any]:
        request = parse_request(request_json)
        with self._recording() as calls:
            result = self._call_fn(request)
            if inspect.isawaitable(result):
                result = _run_awaitable(result)
            recorded = list(calls) if calls is not None else None
        return build_reply(result, recorded)

    async def acall(self, request_json: Any) -> dict[str, Any]:
        request = parse_request(request_json)
        if self._async:
            with self._recording() as calls:
                result = await self._call_fn(request)
                recorded = list(calls) if calls is not None else None
            return build_reply(result, recorded)

        def work() -> Any:
            with self._recording() as calls:
                result = self._call_fn(request)
                if inspect.isawaitable(result):
                    result = asyncio.run(_await(result))
                return result, (list(calls) if calls is not None else None)

        result, recorded = await asyncio.to_thread(work)
        return build_reply(result, recorded)


def wrap(fn: Callable[..., Any], *, recorder: Optional[ToolRecorder] = None) -> Handler:
    """Turn ``fn(messages, scenario) -> str | (output, tool_calls) | dict`` into a protocol handler.

    ``messages`` is the scenario's ``[{"role", "content"}]`` list (or its input as one user
    message), ``scenario`` the scenario dict (``name``, ``input``, ``messages``, ``metadata``).
    ``fn`` may be async, and may take a ``context`` keyword (:class:`Context`: run, sample, attempt).
    With ``recorder``, every request opens a fresh recording and the calls of its wrapped tools
    become ``toolCalls`` (``[]`` when none ran) unless ``fn`` returns tool calls itself.
    """
    return Handler(fn, recorder=recorder)
