"""wrap(): agent callables → evalconsole/1 replies, with tool evidence."""

from __future__ import annotations

import asyncio

import pytest

from evalconsole_adapter import ProtocolError, ToolRecorder, wrap


def request(text: str = "Where is order EC-1042?", **scenario) -> dict:
    return {
        "protocol": "evalconsole/1",
        "run": "run-1",
        "sample": "sample-1",
        "attempt": 1,
        "scenario": {
            "name": "order status",
            "input": text,
            "messages": [{"role": "user", "content": text}],
            "metadata": {},
            **scenario,
        },
    }


@pytest.fixture
def recorder() -> ToolRecorder:
    return ToolRecorder()


@pytest.fixture
def lookup_order(recorder):
    @recorder.tool
    def lookup_order(orderId: str) -> dict:  # noqa: N803
        if orderId != "EC-1042":
            raise LookupError(f"order {orderId} not found")
        return {"found": True, "status": "shipped"}

    return lookup_order


def test_recorded_tool_that_succeeds(recorder, lookup_order):
    def agent(messages, scenario):
        order = lookup_order(orderId="EC-1042")
        return f"Order is {order['status']}."

    reply = wrap(agent, recorder=recorder)(request())

    assert reply == {
        "output": "Order is shipped.",
        "toolCalls": [
            {"name": "lookup_order", "status": "succeeded", "input": {"orderId": "EC-1042"},
             "output": {"found": True, "status": "shipped"}},
        ],
    }


def test_recorded_tool_that_raises(recorder, lookup_order):
    def agent(messages, scenario):
        try:
            lookup_order("EC-9999")
        except LookupError:
            return "Not found."
        return "?"

    reply = wrap(agent, recorder=recorder)(request())

    assert reply == {
        "output": "Not found.",
        "toolCalls": [
            {"name": "lookup_order", "status": "failed", "input": {"orderId": "EC-9999"},
             "error": "order EC-9999 not found"},
        ],
    }


def test_no_tool_called_reports_empty_list(recorder, lookup_order):
    reply = wrap(lambda messages, scenario: "Hello!", recorder=recorder)(request("hi"))

    assert reply == {"output": "Hello!", "toolCalls": []}


def test_without_recorder_a_plain_string_leaves_tool_calls_unknown():
    reply = wrap(lambda messages, scenario: "Hello!")(request("hi"))

    assert reply == {"output": "Hello!"}


def test_each_request_gets_a_fresh_recording(recorder, lookup_order):
    def agent(messages, scenario):
        if "EC-1042" in messages[-1]["content"]:
            lookup_order("EC-1042")
        return "ok"

    handle = wrap(agent, recorder=recorder)
    assert len(handle(request("EC-1042"))["toolCalls"]) == 1
    assert handle(request("hello"))["toolCalls"] == []
    assert recorder.calls == []  # nothing left open afterwards


def test_tuple_return_with_explicit_tool_calls():
    def agent(messages, scenario):
        return "Done.", [{"name": "search", "status": "succeeded", "input": {"q": "x"}, "output": [1, 2]}]

    reply = wrap(agent)(request())

    assert reply == {
        "output": "Done.",
        "toolCalls": [{"name": "search", "status": "succeeded", "input": {"q": "x"}, "output": [1, 2]}],
    }


def test_tuple_with_empty_list_reports_none_ran():
    assert wrap(lambda m, s: ("Hi", []))(request()) == {"output": "Hi", "toolCalls": []}


def test_dict_return_passes_protocol_keys_through(recorder, lookup_order):
    def agent(messages, scenario):
        lookup_order("EC-1042")
        return {
            "output": "Shipped.",
            "trace": [{"method": "GET", "path": "/orders/EC-1042", "status": 200}],
            "messages": messages + [{"role": "assistant", "content": "Shipped."}],
            "ignored": "not part of the protocol",
        }

    reply = wrap(agent, recorder=recorder)(request())

    assert reply["output"] == "Shipped."
    assert [c["status"] for c in reply["toolCalls"]] == ["succeeded"]  # recorder fills missing toolCalls
    assert reply["trace"] == [{"method": "GET", "path": "/orders/EC-1042", "status": 200}]
    assert reply["messages"][-1] == {"role": "assistant", "content": "Shipped."}
    assert "ignored" not in reply


def test_dict_tool_calls_win_over_recorder_and_snake_case_is_accepted(recorder, lookup_order):
    def agent(messages, scenario):
        lookup_order("EC-1042")
        return {"output": "x", "tool_calls": [{"name": "other", "status": "requested"}]}

    reply = wrap(agent, recorder=recorder)(request())
    assert reply["toolCalls"] == [{"name": "other", "status": "requested"}]


def test_messages_and_scenario_given_to_the_agent():
    seen = {}

    def agent(messages, scenario):
        seen["messages"] = messages
        seen["scenario"] = scenario
        return "ok"

    conversation = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello"},
        {"role": "user", "content": "EC-1042?"},
    ]
    wrap(agent)(request(messages=conversation, metadata={"tier": "gold"}, name="multi"))

    assert seen["messages"] == conversation
    assert seen["scenario"]["name"] == "multi"
    assert seen["scenario"]["metadata"] == {"tier": "gold"}


def test_input_becomes_one_user_message_when_there_are_no_messages():
    seen = {}
    handler = wrap(lambda messages, scenario: seen.setdefault("m", messages) and "ok")
    handler(request("Just this", messages=[]))
    assert seen["m"] == [{"role": "user", "content": "Just this"}]


def test_context_keyword_gets_run_sample_attempt():
    seen = {}

    def agent(messages, scenario, context):
        seen.update(run=context.run, sample=context.sample, attempt=context.attempt)
        return "ok"

    wrap(agent)({**request(), "attempt": 3})

    assert seen == {"run": "run-1", "sample": "sample-1", "attempt": 3}


def test_async_agent_and_async_tool(recorder):
    @recorder.tool
    async def fetch_status(orderId: str) -> str:  # noqa: N803
        await asyncio.sleep(0)
        return "shipped"

    async def agent(messages, scenario):
        return f"It is {await fetch_status('EC-1042')}."

    handle = wrap(agent, recorder=recorder)
    expected = {
        "output": "It is shipped.",
        "toolCalls": [{"name": "fetch_status", "status": "succeeded", "input": {"orderId": "EC-1042"},
                       "output": "shipped"}],
    }
    assert handle(request()) == expected  # sync call runs the coroutine
    assert asyncio.run(handle.acall(request())) == expected


def test_sync_agent_through_acall_runs_in_a_thread(recorder, lookup_order):
    def agent(messages, scenario):
        lookup_order("EC-1042")
        return "ok"

    reply = asyncio.run(wrap(agent, recorder=recorder).acall(request()))
    assert reply["toolCalls"][0]["status"] == "succeeded"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([], "must be a JSON object"),
        ({"protocol": "evalconsole/1"}, "scenario must be an object"),
        ({**request(), "protocol": "other/1"}, "unsupported protocol"),
        ({"scenario": {"messages": []}}, "needs input or messages"),
        ({"scenario": {"messages": [{"role": "robot", "content": "x"}]}}, "role must be one of"),
        ({"scenario": {"messages": [{"role": "user", "content": 1}]}}, "content must be a string"),
        ({"scenario": {"input": "x"}, "attempt": 0}, "attempt must be a positive integer"),
    ],
)
def test_bad_requests_raise_protocol_error(body, message):
    with pytest.raises(ProtocolError, match=message):
        wrap(lambda m, s: "never")(body)


def test_tool_role_messages_are_accepted():
    messages = [{"role": "user", "content": "x"}, {"role": "tool", "content": "{}"}]
    assert wrap(lambda m, s: m[-1]["role"])(request(messages=messages)) == {"output": "tool"}


@pytest.mark.parametrize(
    ("result", "message"),
    [
        (42, "return a str"),
        ({"no": "output"}, "no 'output'"),
        (("ok", [{"status": "succeeded"}]), "needs a non-empty name"),
        (("ok", [{"name": "t", "status": "done"}]), "has status 'done'"),
        ((5, []), "output must be a str"),
    ],
)
def test_unusable_agent_results_raise_type_error(result, message):
    with pytest.raises(TypeError, match=message):
        wrap(lambda m, s: result)(request())


def test_agent_exceptions_propagate():
    def agent(messages, scenario):
        raise RuntimeError("model down")

    with pytest.raises(RuntimeError, match="model down"):
        wrap(agent)(request())
