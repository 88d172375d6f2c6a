"""ToolRecorder: calls, inputs, outputs and exceptions of wrapped tools."""

from __future__ import annotations

import asyncio
import dataclasses
import threading

import pytest

from evalconsole_adapter import ToolRecorder


def test_decorator_forms_and_names():
    recorder = ToolRecorder()

    @recorder.tool
    def plain(a, b=2):
        return a + b

    @recorder.tool(name="renamed")
    def original(x):
        return x

    def late(q):
        return q.upper()

    wrapped_late = recorder.tool(late)

    with recorder as calls:
        assert plain(1) == 3
        assert original(x="v") == "v"
        assert wrapped_late("q") == "Q"

    assert calls == [
        {"name": "plain", "status": "succeeded", "input": {"a": 1}, "output": 3},
        {"name": "renamed", "status": "succeeded", "input": {"x": "v"}, "output": "v"},
        {"name": "late", "status": "succeeded", "input": {"q": "q"}, "output": "Q"},
    ]
    assert plain.__name__ == "plain"  # functools.wraps


def test_exception_is_recorded_as_failed_and_reraised():
    recorder = ToolRecorder()

    @recorder.tool
    def boom(order_id):
        raise ValueError(f"bad id {order_id}")

    with recorder as calls, pytest.raises(ValueError, match="bad id 7"):
        boom(7)

    assert calls == [{"name": "boom", "status": "failed", "input": {"order_id": 7}, "error": "bad id 7"}]


def test_exception_without_message_reports_its_type():
    recorder = ToolRecorder()

    @recorder.tool
    def boom():
        raise TimeoutError()

    with recorder as calls, pytest.raises(TimeoutError):
        boom()
    assert calls[0]["error"] == "TimeoutError"


def test_empty_list_when_no_tool_ran():
    recorder = ToolRecorder()
    recorder.tool(lambda: None)
    with recorder as calls:
        pass
    assert calls == []


def test_calls_outside_a_recording_are_not_recorded():
    recorder = ToolRecorder()
    tool = recorder.tool(lambda x: x * 2)
    assert tool(2) == 4
    assert recorder.calls == []
    assert not recorder.active


def test_varargs_kwargs_methods_and_non_json_values():
    recorder = ToolRecorder()

    @dataclasses.dataclass
    class Order:
        id: str
        tags: set

    class Shop:
        @recorder.tool
        def find(self, order_id, *extra, **options):
            return Order(order_id, {"b", "a"})

    with recorder as calls:
        Shop().find("EC-1", 1, 2, verbose=True)

    assert calls == [
        {"name": "find", "status": "succeeded",
         "input": {"order_id": "EC-1", "extra": [1, 2], "verbose": True},
         "output": {"id": "EC-1", "tags": ["a", "b"]}},
    ]


def test_manual_record():
    recorder = ToolRecorder()
    assert recorder.record("ignored") is None  # no recording open
    with recorder as calls:
        recorder.record("search", {"q": "x"}, output=[1])
        recorder.record("fetch", {"url": "u"}, error=ConnectionError("refused"))
        recorder.record("handoff", {"team": "billing"}, status="requested", node="router")
    assert calls == [
        {"name": "search", "status": "succeeded", "input": {"q": "x"}, "output": [1]},
        {"name": "fetch", "status": "failed", "input": {"url": "u"}, "error": "refused"},
        {"name": "handoff", "status": "requested", "input": {"team": "billing"}, "node": "router"},
    ]
    with recorder, pytest.raises(ValueError):
        recorder.record("x", status="done")


def test_nested_recordings_restore_the_outer_one():
    recorder = ToolRecorder()
    tool = recorder.tool(lambda: "x")
    with recorder as outer:
        tool()
        with recorder as inner:
            tool()
        tool()
    assert len(outer) == 2
    assert len(inner) == 1


def test_concurrent_threads_do_not_mix_calls():
    recorder = ToolRecorder()
    barrier = threading.Barrier(2)

    @recorder.tool
    def work(n):
        barrier.wait(timeout=5)
        return n

    results = {}

    def run(n):
        with recorder as calls:
            work(n)
            work(n)
        results[n] = [c["input"]["n"] for c in calls]

    threads = [threading.Thread(target=run, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {0: [0, 0], 1: [1, 1]}


def test_async_tools_in_concurrent_tasks():
    recorder = ToolRecorder()

    @recorder.tool
    async def fetch(n):
        await asyncio.sleep(0.01)
        if n == 2:
            raise RuntimeError("two")
        return n

    async def one(n):
        with recorder as calls:
            await asyncio.gather(fetch(n), return_exceptions=True)
        return calls

    async def main():
        return await asyncio.gather(one(1), one(2))

    first, second = asyncio.run(main())
    assert first == [{"name": "fetch", "status": "succeeded", "input": {"n": 1}, "output": 1}]
    assert second == [{"name": "fetch", "status": "failed", "input": {"n": 2}, "error": "two"}]
