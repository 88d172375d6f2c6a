"""toolCalls evidence parsing, input conditions, tool_usage and tool_sequence: table-driven, no database."""

from __future__ import annotations

import pytest

from checks.kinds import ConfigError, Evidence, Outcome, evaluate, get_kind
from checks.kinds.conditions import MISSING, condition_met, json_equal, lookup
from checks.kinds.evidence import MISSING_TOOL_CALLS, parse_tool_calls

PASS, FAIL, INDET = Outcome.PASS, Outcome.FAIL, Outcome.INDETERMINATE


def call(name: str, status: str = "succeeded", node: str | None = None, **input_):
    item = {"name": name, "status": status, "input": input_}
    if node is not None:
        item["node"] = node
    return item


REFUND_FLOW = [
    call("search_kb", q="refund policy"),
    call("lookup_order", orderId="EC-1042", items=[{"sku": "A1", "qty": 2}], tags=["vip", "eu"], note=""),
    call("lookup_order", status="failed", orderId="EC-9999"),
    call("issue_refund", status="requested", node="billing", amount=12.5, confirmed=True),
]


def usage(config: dict, tool_calls=REFUND_FLOW):
    kind = get_kind("tool_usage")
    return kind.evaluate(kind.validate_config(config), Evidence(output="", tool_calls=tool_calls))


# --- evidence parsing -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (None, MISSING_TOOL_CALLS),
        ({"name": "x"}, "toolCalls is an object, not a list"),
        ("lookup_order", "toolCalls is a string, not a list"),
        ([1], "toolCalls[0] is a number, not an object"),
        ([call("a"), "b"], "toolCalls[1] is a string, not an object"),
        ([{"status": "succeeded"}], "toolCalls[0] has no name"),
        ([{"name": "", "status": "succeeded"}], "toolCalls[0] has an empty name"),
        ([{"name": 7, "status": "succeeded"}], "toolCalls[0] has a name that is a number"),
        ([call("a"), {"name": "b"}], "toolCalls[1] has no status"),
        ([{"name": "a", "status": "done"}], "toolCalls[0] has an unknown status 'done'"),
        ([{"name": "a", "status": "Succeeded"}], "unknown status"),
        ([{"name": "a", "status": "succeeded", "node": 3}], "toolCalls[0] has a node that is a number"),
    ],
)
def test_malformed_tool_calls_are_named(raw, problem):
    parsed = parse_tool_calls(raw)
    assert parsed.calls == ()
    assert problem in parsed.problem


def test_empty_tool_calls_are_determinate():
    assert parse_tool_calls([]) == ((), "")


def test_tool_calls_parse_once_per_evidence():
    evidence = Evidence(output="", tool_calls=REFUND_FLOW)
    from checks.kinds.evidence import tool_calls_of

    assert tool_calls_of(evidence) is tool_calls_of(evidence)


@pytest.mark.parametrize(
    "raw",
    [None, {"a": 1}, [None], [{"name": "a"}], [{"name": "a", "status": "ok"}], [{"status": "failed"}]],
)
@pytest.mark.parametrize(
    ("kind", "config"),
    [
        ("tool_usage", {"tool": "a", "count": 0}),
        ("tool_usage", {"tool": "a", "mode": "at_most", "count": 5}),
        ("tool_usage", {"tool": "a", "mode": "first"}),
        ("tool_sequence", {"tools": ["a", "b"]}),
    ],
)
def test_missing_or_malformed_tool_calls_are_never_pass_or_fail(raw, kind, config):
    verdict = evaluate(kind, get_kind(kind).validate_config(config), Evidence(output="x", tool_calls=raw))
    assert verdict.outcome == INDET
    assert verdict.actual in verdict.explanation
    if raw is None:
        assert verdict.actual == "the agent did not report tool activity"


# --- dot paths and conditions -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "path", "found"),
    [
        ({"a": {"b": [{"c": 1}]}}, "a.b.0.c", 1),
        ({"a": {"b": [{"c": 1}]}}, "a.b.1.c", MISSING),
        ({"a": {"b": [{"c": 1}]}}, "a.b.x", MISSING),
        ({"a": {"b": [{"c": 1}]}}, "a.b.-1", MISSING),
        ({"a": {"0": "zero"}}, "a.0", "zero"),  # digits are an object key when the value is an object
        ({"a": None}, "a", None),
        ({"a": None}, "a.b", MISSING),
        ({"a": "text"}, "a.b", MISSING),
        ("not an object", "a", MISSING),
        (None, "a", MISSING),
        ({"a": ["x"]}, "a.٠", MISSING),  # a non-ASCII digit is not an index
    ],
)
def test_lookup(value, path, found):
    assert lookup(value, path) == found if found is not MISSING else lookup(value, path) is MISSING


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        (1, 1.0, True),
        (True, 1, False),
        (False, 0, False),
        (None, None, True),
        (None, "", False),
        ({"a": [1, 2]}, {"a": [1, 2]}, True),
        ({"a": [1, 2]}, {"a": [2, 1]}, False),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        ([True], [1], False),
        ("1", 1, False),
    ],
)
def test_json_equal(a, b, equal):
    assert json_equal(a, b) is equal
    assert json_equal(b, a) is equal


INPUT = {
    "orderId": "EC-1042",
    "amount": 12.5,
    "qty": 2,
    "confirmed": True,
    "items": [{"sku": "A1", "qty": 2}, {"sku": "B2"}],
    "tags": ["vip", "eu", 3],
    "empty_text": "",
    "empty_list": [],
    "nothing": None,
    "zero": 0,
    "no": False,
    "customer": {"name": "Zoë Ångström"},
}


@pytest.mark.parametrize(
    ("field", "op", "value", "met"),
    [
        ("orderId", "equals", "EC-1042", True),
        ("orderId", "equals", "ec-1042", False),
        ("qty", "equals", 2, True),
        ("qty", "equals", "2", True),  # a string value equals a number whose JSON text it is
        ("qty", "equals", 2.0, True),
        ("qty", "equals", "2.0", True),
        ("qty", "equals", "02", False),
        ("qty", "equals", " 2", False),
        ("amount", "equals", "12.5", True),
        ("confirmed", "equals", "true", True),
        ("confirmed", "equals", True, True),
        ("confirmed", "equals", 1, False),
        ("confirmed", "equals", "True", False),
        ("zero", "equals", False, False),
        ("nothing", "equals", None, True),
        ("nothing", "equals", "null", False),
        ("items.0", "equals", {"sku": "A1", "qty": 2}, True),
        ("items.0.sku", "equals", "A1", True),  # nested field
        ("items.1.qty", "equals", 2, False),  # missing nested field
        ("customer.name", "equals", "Zoë Ångström", True),
        ("orderId", "contains", "1042", True),
        ("orderId", "contains", 1042, True),  # a non-string value is looked for as its JSON text
        ("orderId", "contains", "EC-10420", False),
        ("tags", "contains", "vip", True),  # list inputs: element membership
        ("tags", "contains", "vi", False),  # not a substring of an element
        ("tags", "contains", 3, True),
        ("tags", "contains", "3", True),
        ("items", "contains", {"sku": "B2"}, True),
        ("qty", "contains", 2, False),  # numbers contain nothing
        ("customer", "contains", "name", False),  # objects contain nothing
        ("customer.name", "contains", "Ång", True),
        ("orderId", "has_value", None, True),
        ("zero", "has_value", None, True),
        ("no", "has_value", None, True),
        ("empty_text", "has_value", None, False),
        ("empty_list", "has_value", None, False),
        ("nothing", "has_value", None, False),
        ("missing", "has_value", None, False),  # missing field with has_value
        ("orderId", "matches", r"^EC-\d+$", True),
        ("orderId", "matches", r"\d{5}", False),
        ("qty", "matches", "^2$", True),  # non-string: its JSON text
        ("tags", "matches", '"eu"', True),
        ("customer.name", "matches", "^Zo.", True),
        ("missing", "matches", ".*", False),  # a missing field fails every condition
        ("missing", "equals", None, False),
        ("missing", "contains", "", False),
        ("orderId.deeper", "equals", "x", False),
    ],
)
def test_condition(field, op, value, met):
    config = get_kind("tool_usage").validate_config(
        {"tool": "t", "count": 1, "inputs": [{"field": field, "op": op, "value": value}]}
    )
    assert condition_met(config["inputs"][0], INPUT) is met


@pytest.mark.parametrize("tool_input", [None, "a string", 3, [1, 2], {"other": 1}])
def test_conditions_on_odd_inputs_fail_without_error(tool_input):
    verdict = usage(
        {"tool": "t", "count": 1, "inputs": [{"field": "a.b", "op": "has_value"}]},
        [{"name": "t", "status": "succeeded", "input": tool_input}],
    )
    assert verdict.outcome == FAIL


# --- tool_usage -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "outcome", "evidence"),
    [
        ({"tool": "lookup_order", "count": 1}, PASS, (1, 2)),  # failed calls count: attempted, any status
        ({"tool": "lookup_order", "count": 2}, PASS, (1, 2)),
        ({"tool": "lookup_order", "count": 3}, FAIL, (1, 2)),
        ({"tool": "lookup_order", "count": 0}, PASS, (1, 2)),
        ({"tool": "missing_tool", "count": 0}, PASS, ()),  # count 0: always met
        ({"tool": "missing_tool", "count": 1}, FAIL, ()),
        ({"tool": "lookup_order", "mode": "at_most", "count": 2}, PASS, (1, 2)),
        ({"tool": "lookup_order", "mode": "at_most", "count": 1}, FAIL, (1, 2)),
        ({"tool": "lookup_order", "mode": "at_most", "count": 0}, FAIL, (1, 2)),
        ({"tool": "missing_tool", "mode": "at_most", "count": 0}, PASS, ()),
        ({"tool": "lookup_order", "mode": "exactly", "count": 2}, PASS, (1, 2)),
        ({"tool": "lookup_order", "mode": "exactly", "count": 1}, FAIL, (1, 2)),
        ({"tool": "missing_tool", "mode": "exactly", "count": 0}, PASS, ()),
        ({"tool": "issue_refund", "mode": "exactly", "count": 1}, PASS, (3,)),  # requested counts too
        ({"tool": "Lookup_Order", "count": 1}, FAIL, ()),  # tool names are exact
        ({"tool": "search_kb", "mode": "first"}, PASS, (0,)),
        ({"tool": "lookup_order", "mode": "first"}, FAIL, (0,)),
        ({"tool": "issue_refund", "mode": "last"}, PASS, (3,)),
        ({"tool": "lookup_order", "mode": "last"}, FAIL, (3,)),
        (
            {
                "tool": "lookup_order",
                "count": 1,
                "inputs": [{"field": "orderId", "op": "equals", "value": "EC-1042"}],
            },
            PASS,
            (1,),
        ),
        (
            {
                "tool": "lookup_order",
                "mode": "exactly",
                "count": 1,
                "inputs": [{"field": "orderId", "op": "matches", "value": "^EC-"}],
            },
            FAIL,
            (1, 2),
        ),
        (
            {
                "tool": "lookup_order",
                "count": 1,
                "inputs": [
                    {"field": "items.0.qty", "op": "equals", "value": "2"},
                    {"field": "tags", "op": "contains", "value": "eu"},
                ],
            },
            PASS,
            (1,),
        ),
        (
            {
                "tool": "lookup_order",
                "count": 1,
                "inputs": [{"field": "orderId", "op": "has_value"}, {"field": "note", "op": "has_value"}],
            },
            FAIL,
            (),
        ),
        (
            {
                "tool": "search_kb",
                "mode": "first",
                "inputs": [{"field": "q", "op": "contains", "value": "refund"}],
            },
            PASS,
            (0,),
        ),
        (
            {
                "tool": "search_kb",
                "mode": "first",
                "inputs": [{"field": "q", "op": "contains", "value": "shipping"}],
            },
            FAIL,
            (0,),
        ),
        ({"tool": "issue_refund", "count": 1, "node": "billing"}, PASS, (3,)),
        ({"tool": "issue_refund", "count": 1, "node": "support"}, FAIL, ()),
        ({"tool": "lookup_order", "count": 1, "node": "billing"}, FAIL, ()),
        ({"tool": "issue_refund", "mode": "first", "node": "billing"}, PASS, (3,)),  # first within the node
        ({"tool": "issue_refund", "mode": "first", "node": "support"}, FAIL, ()),  # no calls in that node
    ],
)
def test_tool_usage(config, outcome, evidence):
    verdict = usage(config)
    assert verdict.outcome == outcome, verdict.explanation
    assert verdict.evidence == evidence
    assert verdict.expected in verdict.explanation and verdict.actual in verdict.explanation


@pytest.mark.parametrize("mode", ["first", "last"])
def test_first_or_last_with_no_calls_at_all_fails(mode):
    verdict = usage({"tool": "lookup_order", "mode": mode}, [])
    assert verdict.outcome == FAIL
    assert (
        verdict.explanation == f"Expected the {mode} tool call to be lookup_order, but no tools were called."
    )


@pytest.mark.parametrize(
    ("mode", "count", "outcome"),
    [
        ("at_least", 0, PASS),
        ("at_least", 1, FAIL),
        ("at_most", 0, PASS),
        ("exactly", 0, PASS),
        ("exactly", 1, FAIL),
    ],
)
def test_counting_with_no_calls_at_all(mode, count, outcome):
    assert usage({"tool": "lookup_order", "mode": mode, "count": count}, []).outcome == outcome


def test_tool_usage_explanation():
    verdict = usage({"tool": "lookup_order", "count": 1}, [call("search_kb")])
    assert (
        verdict.explanation
        == "Expected lookup_order to be called at least 1 time, but it was called 0 times."
    )
    verdict = usage(
        {"tool": "lookup_order", "count": 1, "inputs": [{"field": "orderId", "op": "equals", "value": "X"}]}
    )
    assert verdict.explanation == (
        'Expected lookup_order with orderId equal to "X" to be called at least 1 time, '
        "but it was called 0 times with matching input (2 calls of lookup_order in total)."
    )


def test_unicode_tool_names_and_inputs():
    calls = [call("répondre", message="Grüße, 世界")]
    assert (
        usage(
            {
                "tool": "répondre",
                "count": 1,
                "inputs": [{"field": "message", "op": "matches", "value": "世界$"}],
            },
            calls,
        ).outcome
        == PASS
    )


@pytest.mark.parametrize(
    ("config", "errors"),
    [
        ({}, {"tool": "this field is required", "count": "this field is required for mode at_least"}),
        ({"mode": "first"}, {"tool": "this field is required"}),
        ({"tool": "  ", "count": 1}, {"tool": "must not be empty"}),
        ({"tool": "a"}, {"count": "this field is required for mode at_least"}),
        ({"tool": "a", "mode": "exactly"}, {"count": "this field is required for mode exactly"}),
        ({"tool": "a", "count": -1}, {"count": "must be 0 or more"}),
        ({"tool": "a", "count": "3"}, {"count": "must be a whole number, not a string"}),
        ({"tool": "a", "count": True}, {"count": "must be a whole number, not a boolean"}),
        ({"tool": "a", "count": 1.5}, {"count": "must be a whole number, not a number"}),
        (
            {"tool": "a", "mode": "sometimes"},
            {"mode": "must be one of at_least, at_most, exactly, first, last"},
        ),
        ({"tool": "a", "mode": "first", "colour": 1}, {"colour": None}),
        (
            {"tool": "a", "count": 1, "inputs": {"field": "x"}},
            {"inputs": "must be a list of conditions, not an object"},
        ),
        (
            {"tool": "a", "count": 1, "inputs": [{"field": "", "op": "equals", "value": 1}]},
            {"inputs.0.field": None},
        ),
        (
            {"tool": "a", "count": 1, "inputs": [{"field": "a..b", "op": "equals", "value": 1}]},
            {"inputs.0.field": "'a..b' is not a dot path (empty segment)"},
        ),
        (
            {"tool": "a", "count": 1, "inputs": [{"field": "x", "op": "like", "value": 1}]},
            {"inputs.0.op": None},
        ),
        ({"tool": "a", "count": 1, "inputs": [{"field": "x", "op": "equals"}]}, {"inputs.0.value": None}),
        (
            {"tool": "a", "count": 1, "inputs": [{"field": "x", "op": "contains", "value": None}]},
            {"inputs.0.value": "this field is required"},
        ),
        (
            {"tool": "a", "count": 1, "inputs": [{"field": "x", "op": "matches", "value": "[a-"}]},
            {"inputs.0.value": None},
        ),
        (
            {"tool": "a", "count": 1, "inputs": [{"field": "x", "op": "matches", "value": r"(\w)\1"}]},
            {"inputs.0.value": None},
        ),
        (
            {"tool": "a", "count": 1, "inputs": [{"field": "x", "op": "matches", "value": 5}]},
            {"inputs.0.value": "must be a string (a regular expression)"},
        ),
        (
            {"tool": "a", "count": 1, "inputs": [{"field": "x", "op": "equals", "value": 1, "extra": 2}]},
            {"inputs.0.extra": None},
        ),
        ({"tool": "a", "count": 1, "inputs": ["x"]}, {"inputs.0": None}),
        (
            {"tool": "a", "count": 1, "inputs": [{"field": "x", "op": "has_value"}] * 21},
            {"inputs": "at most 20 conditions"},
        ),
    ],
)
def test_tool_usage_config_errors(config, errors):
    with pytest.raises(ConfigError) as caught:
        get_kind("tool_usage").validate_config(config)
    assert set(caught.value.errors) == set(errors)
    for field, message in errors.items():
        if message is not None:
            assert caught.value.errors[field] == message


def test_tool_usage_config_is_normalised():
    kind = get_kind("tool_usage")
    assert kind.validate_config({"tool": "a", "count": 2}) == {
        "tool": "a",
        "mode": "at_least",
        "count": 2,
        "inputs": [],
        "node": None,
    }
    # first/last take no count; a blank node from a form means no node; has_value drops a value
    assert kind.validate_config(
        {
            "tool": "a",
            "mode": "last",
            "count": 1,
            "node": "",
            "inputs": [{"field": " x.y ", "op": "has_value", "value": "ignored"}],
        }
    ) == {
        "tool": "a",
        "mode": "last",
        "count": None,
        "inputs": [{"field": "x.y", "op": "has_value", "value": None}],
        "node": None,
    }
    assert kind.validate_config({"tool": "a", "count": 3.0})["count"] == 3


def test_validate_config_does_not_alias_the_raw_input():
    raw = {"tool": "a", "count": 1, "inputs": [{"field": "x", "op": "equals", "value": [1]}]}
    config = get_kind("tool_usage").validate_config(raw)
    config["inputs"][0]["value"].append(2)
    assert raw["inputs"][0]["value"] == [1]


# --- tool_sequence ----------------------------------------------------------------------------


def sequence(config: dict, tool_calls=REFUND_FLOW):
    return evaluate(
        "tool_sequence",
        get_kind("tool_sequence").validate_config(config),
        Evidence(output="", tool_calls=tool_calls),
    )


@pytest.mark.parametrize(
    ("config", "outcome", "evidence"),
    [
        ({"tools": ["search_kb", "lookup_order"]}, PASS, (0, 1)),
        ({"tools": ["search_kb", "issue_refund"]}, PASS, (0, 3)),  # other calls between are fine
        ({"tools": ["lookup_order", "lookup_order"]}, PASS, (1, 2)),  # a repeated name needs two calls
        ({"tools": ["lookup_order", "lookup_order", "lookup_order"]}, FAIL, (1, 2)),
        ({"tools": ["issue_refund", "search_kb"]}, FAIL, (3,)),  # wrong order
        ({"tools": ["lookup_order", "search_kb"]}, FAIL, (1,)),
        ({"tools": ["nothing", "search_kb"]}, FAIL, ()),
        ({"tools": ["search_kb", "lookup_order", "issue_refund"]}, PASS, (0, 1, 3)),
        (
            {"tools": ["search_kb", "issue_refund"], "node": "billing"},
            FAIL,
            (),
        ),  # search_kb is not in billing
    ],
)
def test_tool_sequence(config, outcome, evidence):
    verdict = sequence(config)
    assert verdict.outcome == outcome, verdict.explanation
    assert verdict.evidence == evidence


def test_tool_sequence_explanations():
    assert sequence({"tools": ["a", "b"]}, []).explanation == (
        "Expected the tools a → b to be called in this order, but no tools were called."
    )
    assert sequence({"tools": ["issue_refund", "search_kb"]}).explanation == (
        "Expected the tools issue_refund → search_kb to be called in this order, but no call of search_kb "
        "followed issue_refund (tool call 3); the calls were "
        "search_kb, lookup_order, lookup_order, issue_refund."
    )


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({}, "tools"),
        ({"tools": ["a"]}, "tools"),
        ({"tools": "a,b"}, "tools"),
        ({"tools": ["a", ""]}, "tools.1"),
        ({"tools": ["a", 3]}, "tools.1"),
        ({"tools": ["a", "b"], "node": 4}, "node"),
        ({"tools": ["a"] * 51}, "tools"),
    ],
)
def test_tool_sequence_config_errors(config, field):
    with pytest.raises(ConfigError) as caught:
        get_kind("tool_sequence").validate_config(config)
    assert field in caught.value.errors
