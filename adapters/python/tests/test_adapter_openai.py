"""from_openai_messages(): tool evidence from OpenAI-style message lists."""

from __future__ import annotations

import json

import pytest

from evalconsole_adapter import from_openai_messages, split_openai_reply, wrap


def assistant_calls(*calls):
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for cid, name, args in calls
        ],
    }


def tool_result(call_id, content, **extra):
    return {"role": "tool", "tool_call_id": call_id, "content": content, **extra}


def test_matches_results_by_tool_call_id():
    messages = [
        {"role": "user", "content": "Where are EC-1042 and EC-1043?"},
        assistant_calls(
            ("a", "lookup_order", {"orderId": "EC-1042"}), ("b", "lookup_order", {"orderId": "EC-1043"})
        ),
        tool_result("b", '{"found": true, "status": "processing"}'),  # answered out of order
        tool_result("a", '{"found": true, "status": "shipped"}'),
        {"role": "assistant", "content": "One shipped, one processing."},
    ]

    assert from_openai_messages(messages) == [
        {"name": "lookup_order", "status": "succeeded", "input": {"orderId": "EC-1042"},
         "output": {"found": True, "status": "shipped"}},
        {"name": "lookup_order", "status": "succeeded", "input": {"orderId": "EC-1043"},
         "output": {"found": True, "status": "processing"}},
    ]


def test_call_without_result_is_requested():
    messages = [assistant_calls(("a", "escalate", {"reason": "refund"}))]
    assert from_openai_messages(messages) == [
        {"name": "escalate", "status": "requested", "input": {"reason": "refund"}},
    ]


def test_no_tool_calls_is_empty_list():
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello"}]
    assert from_openai_messages(messages) == []


@pytest.mark.parametrize(
    ("result", "error"),
    [
        (tool_result("a", '{"error": "order not found"}'), "order not found"),
        (tool_result("a", '{"error": {"message": "timeout", "code": 504}}'), "timeout"),
        (tool_result("a", "Error: order not found"), "Error: order not found"),
        (
            tool_result("a", "Traceback (most recent call last): ..."),
            "Traceback (most recent call last): ...",
        ),
        (tool_result("a", "it broke", is_error=True), "it broke"),
        (tool_result("a", "it broke", status="error"), "it broke"),
        (tool_result("a", "", status="error"), "tool reported an error"),
        (tool_result("a", "whatever", error="rate limited"), "rate limited"),
    ],
)
def test_results_that_signal_an_error_are_failed(result, error):
    calls = from_openai_messages([assistant_calls(("a", "lookup_order", {"orderId": "EC-1"})), result])
    assert calls == [
        {"name": "lookup_order", "status": "failed", "input": {"orderId": "EC-1"}, "error": error}
    ]


@pytest.mark.parametrize(
    ("content", "output"),
    [
        ("shipped", "shipped"),
        ('{"found": false, "error": null}', {"found": False, "error": None}),
        ("[1, 2]", [1, 2]),
        ("42", 42),
        ("errors are rare", "errors are rare"),
        ([{"type": "text", "text": '{"a": '}, {"type": "text", "text": "1}"}], {"a": 1}),
    ],
)
def test_successful_result_values(content, output):
    calls = from_openai_messages([assistant_calls(("a", "t", {})), tool_result("a", content)])
    assert calls == [{"name": "t", "status": "succeeded", "input": {}, "output": output}]


def test_unparseable_arguments_are_kept_as_text():
    message = {
        "role": "assistant",
        "tool_calls": [{"id": "a", "function": {"name": "t", "arguments": "{oops"}}],
    }
    assert from_openai_messages([message])[0]["input"] == "{oops"


def test_legacy_function_call_and_function_result():
    messages = [
        {"role": "assistant", "content": None, "function_call": {"name": "lookup", "arguments": '{"id": 1}'}},
        {"role": "function", "name": "lookup", "content": '{"ok": true}'},
    ]
    assert from_openai_messages(messages) == [
        {"name": "lookup", "status": "succeeded", "input": {"id": 1}, "output": {"ok": True}},
    ]


def test_responses_api_items():
    items = [
        {"type": "message", "role": "user", "content": "EC-1042?"},
        {
            "type": "function_call",
            "call_id": "c1",
            "name": "lookup_order",
            "arguments": '{"orderId": "EC-1042"}',
        },
        {"type": "function_call_output", "call_id": "c1", "output": '{"status": "shipped"}'},
        {"type": "function_call", "call_id": "c2", "name": "notify", "arguments": "{}"},
    ]
    assert from_openai_messages(items) == [
        {"name": "lookup_order", "status": "succeeded", "input": {"orderId": "EC-1042"},
         "output": {"status": "shipped"}},
        {"name": "notify", "status": "requested", "input": {}},
    ]


def test_custom_error_rule():
    messages = [assistant_calls(("a", "t", {})), tool_result("a", '{"ok": false}')]
    calls = from_openai_messages(messages, error_of=lambda m, v: "not ok" if v.get("ok") is False else None)
    assert calls[0]["status"] == "failed"
    assert calls[0]["error"] == "not ok"


def test_openai_sdk_message_objects():
    chat = pytest.importorskip("openai.types.chat")
    message = chat.ChatCompletionMessage.model_validate(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "a",
                    "type": "function",
                    "function": {"name": "lookup_order", "arguments": '{"orderId": "X"}'},
                }
            ],
        }
    )
    calls = from_openai_messages([message, tool_result("a", "ok")])
    assert calls == [
        {"name": "lookup_order", "status": "succeeded", "input": {"orderId": "X"}, "output": "ok"}
    ]


def test_split_openai_reply_in_a_wrapped_agent():
    def agent(messages, scenario):
        turn = [
            assistant_calls(("a", "lookup_order", {"orderId": "EC-1042"})),
            tool_result("a", '{"status": "shipped"}'),
            {"role": "assistant", "content": "Order EC-1042 has shipped."},
        ]
        return split_openai_reply(turn)

    reply = wrap(agent)({"scenario": {"input": "EC-1042?"}})
    assert reply == {
        "output": "Order EC-1042 has shipped.",
        "toolCalls": [{"name": "lookup_order", "status": "succeeded", "input": {"orderId": "EC-1042"},
                       "output": {"status": "shipped"}}],
    }


def test_split_openai_reply_ending_on_a_tool_call_has_empty_output():
    output, calls = split_openai_reply([
        {"role": "assistant", "content": "earlier text"},
        assistant_calls(("a", "t", {})),
    ])
    assert output == ""
    assert calls[0]["status"] == "requested"
