"""Recording tool calls as evalconsole evidence.

    recorder = ToolRecorder()

    @recorder.tool
    def lookup_order(order_id: str) -> dict: ...

    with recorder as calls:          # a fresh list for this block ([] if no tool ran)
        run_my_agent(...)
    calls  # [{"name": "lookup_order", "status": "succeeded", "input": {...}, "output": {...}}]

Recordings live in a ``ContextVar``: concurrent requests (threads or asyncio tasks) each get their
own list. A wrapped tool called outside any recording runs normally and is not recorded.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any, Callable, Optional, TypeVar, overload

from .protocol import TOOL_STATUSES, error_message, to_jsonable

F = TypeVar("F", bound=Callable[..., Any])

ToolCall = dict[str, Any]


def _call_input(signature: Optional[inspect.Signature], args: tuple, kwargs: dict) -> Any:
    """The call's arguments by parameter name (``self``/``cls`` dropped, ``**kwargs`` merged)."""
    if signature is None:
        return {"args": list(args), **kwargs} if args else dict(kwargs)
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:
        return {"args": list(args), **kwargs} if args else dict(kwargs)
    result: dict[str, Any] = {}
    for name, value in bound.arguments.items():
        param = signature.parameters[name]
        if param.kind is inspect.Parameter.VAR_KEYWORD:
            result.update(value)
        elif name in ("self", "cls") and param.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD and not result:
            continue
        else:
            result[name] = value
    return result


class ToolRecorder:
    """Captures calls of wrapped tool functions: name, input, output or error, status."""

    def __init__(self) -> None:
        self._current: ContextVar[Optional[list[ToolCall]]] = ContextVar(
            f"evalconsole_tools_{id(self)}", default=None
        )
        self._tokens: ContextVar[tuple[Any, ...]] = ContextVar(f"evalconsole_tokens_{id(self)}", default=())

    # ---- recordings -----------------------------------------------------------------------

    def __enter__(self) -> list[ToolCall]:
        calls: list[ToolCall] = []
        token = self._current.set(calls)
        self._tokens.set(self._tokens.get() + (token,))
        return calls

    def __exit__(self, *exc: Any) -> None:
        tokens = self._tokens.get()
        if not tokens:
            raise RuntimeError("ToolRecorder exited more often than entered")
        self._tokens.set(tokens[:-1])
        self._current.reset(tokens[-1])

    @property
    def active(self) -> bool:
        """Whether a recording is open in this context."""
        return self._current.get() is not None

    @property
    def calls(self) -> list[ToolCall]:
        """The calls recorded so far in the open recording ([] when none is open)."""
        current = self._current.get()
        return list(current) if current is not None else []

    # ---- recording calls ------------------------------------------------------------------

    def record(
        self,
        name: str,
        input: Any = None,  # noqa: A002 - the protocol's field name
        *,
        output: Any = None,
        error: Any = None,
        status: Optional[str] = None,
        node: Optional[str] = None,
    ) -> Optional[ToolCall]:
        """Record one call by hand. ``status`` defaults to ``failed`` when ``error`` is given, else
        ``succeeded``. Returns the entry, or None when no recording is open."""
        current = self._current.get()
        if current is None:
            return None
        if status is None:
            status = "failed" if error is not None else "succeeded"
        if status not in TOOL_STATUSES:
            raise ValueError(f"status must be one of {TOOL_STATUSES}, not {status!r}")
        entry: ToolCall = {"name": name, "status": status, "input": to_jsonable(input)}
        if status == "succeeded":
            entry["output"] = to_jsonable(output)
        if error is not None:
            entry["error"] = error_message(error) if isinstance(error, BaseException) else str(error)
        if node is not None:
            entry["node"] = node
        current.append(entry)
        return entry

    def _start(
        self, name: str, args: tuple, kwargs: dict, signature: Optional[inspect.Signature]
    ) -> Optional[ToolCall]:
        current = self._current.get()
        if current is None:
            return None
        entry: ToolCall = {
            "name": name,
            "status": "requested",
            "input": to_jsonable(_call_input(signature, args, kwargs)),
        }
        current.append(entry)
        return entry

    @staticmethod
    def _succeeded(entry: Optional[ToolCall], output: Any) -> None:
        if entry is not None:
            entry["status"] = "succeeded"
            entry["output"] = to_jsonable(output)

    @staticmethod
    def _failed(entry: Optional[ToolCall], error: BaseException) -> None:
        if entry is not None:
            entry["status"] = "failed"
            entry["error"] = error_message(error)

    @overload
    def tool(self, fn: F) -> F: ...

    @overload
    def tool(self, fn: None = None, *, name: Optional[str] = None) -> Callable[[F], F]: ...

    def tool(self, fn: Optional[F] = None, *, name: Optional[str] = None) -> Any:
        """Wrap a tool function (sync or async) so its calls are recorded.

        Usable as ``@recorder.tool``, ``@recorder.tool(name="lookup_order")`` or
        ``recorder.tool(fn)``. Exceptions are recorded as ``failed`` and re-raised.
        """
        if fn is None:
            return lambda f: self.tool(f, name=name)
        tool_name = name or getattr(fn, "__name__", None) or type(fn).__name__
        try:
            signature: Optional[inspect.Signature] = inspect.signature(fn)
        except (TypeError, ValueError):
            signature = None

        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                with self._recording(tool_name, args, kwargs, signature) as succeeded:
                    return succeeded(await fn(*args, **kwargs))

            return async_wrapper

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self._recording(tool_name, args, kwargs, signature) as succeeded:
                return succeeded(fn(*args, **kwargs))

        return wrapper

    @contextlib.contextmanager
    def _recording(
        self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], signature: Optional[inspect.Signature]
    ) -> Iterator[Callable[[Any], Any]]:
        """Record one call of a tool: the block hands its result to the yielded ``succeeded`` (which
        records and returns it); an exception leaving the block is recorded as ``failed`` and re-raised."""
        entry = self._start(name, args, kwargs, signature)

        def succeeded(result: Any) -> Any:
            self._succeeded(entry, result)
            return result

        try:
            yield succeeded
        except BaseException as exc:
            self._failed(entry, exc)
            raise
