"""The kind registry and the engine's interface: no database."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import checks.kinds as kinds
from checks.kinds import (
    ConfigError,
    Context,
    Evidence,
    FieldSpec,
    Outcome,
    UnknownKind,
    Verdict,
    all_kinds,
    evaluate,
    get_kind,
    kind_choices,
    register,
)
from checks.kinds.registry import Kind

REPO = Path(__file__).resolve().parents[2]
FUZZ_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "400"))  # raise for a longer fuzz run

EXPECTED_KINDS = [
    "text_includes",
    "text_equals",
    "tool_usage",
    "trace",
    "text_matches",
    "json_schema",
    "latency",
    "tool_sequence",
]

# One valid config per kind, for the properties below.
SAMPLE_CONFIGS = {
    "text_includes": [{"text": "a"}, {"text": "A", "case_sensitive": False}],
    "text_equals": [{"expected": "a"}, {"expected": ""}],
    "tool_usage": [
        {"tool": "a", "count": 1},
        {"tool": "a", "mode": "exactly", "count": 0, "node": "n"},
        {"tool": "a", "mode": "first", "inputs": [{"field": "x.0", "op": "equals", "value": "1"}]},
        {
            "tool": "a",
            "mode": "last",
            "inputs": [
                {"field": "x", "op": "contains", "value": 1},
                {"field": "y", "op": "matches", "value": "a+"},
                {"field": "z", "op": "has_value"},
            ],
        },
    ],
    "trace": [{"called": "*"}, {"called": ["GET /a/*", "* /b"], "not_called": "DELETE *", "status": "any"}],
    "text_matches": [{"pattern": "a|b"}, {"pattern": "^x", "case_sensitive": False}],
    "json_schema": [{"schema": {"type": "object", "required": ["a"]}}],
    "latency": [{"max_ms": 100}],
    "tool_sequence": [{"tools": ["a", "b"]}, {"tools": ["a", "a"], "node": "n"}],
}


def test_every_kind_is_registered_in_order():
    # Kinds added later (ai_judge, ...) come after these, in their own import order.
    assert [k.name for k in all_kinds()][: len(EXPECTED_KINDS)] == EXPECTED_KINDS
    assert kind_choices() == [(k.name, k.label) for k in all_kinds()]
    assert set(SAMPLE_CONFIGS) == set(EXPECTED_KINDS)


@pytest.mark.parametrize("kind", [get_kind(name) for name in EXPECTED_KINDS], ids=lambda k: k.name)
def test_kind_declares_its_interface(kind):
    assert kind.label and kind.description
    assert all(isinstance(f, FieldSpec) for f in kind.fields)
    assert kind.needs and kind.needs <= {"output", "tool_calls", "trace", "latency", "messages"}
    schema = kind.json_schema
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert set(schema["properties"]) == {f.name for f in kind.fields}
    json.dumps(schema)
    import jsonschema

    jsonschema.Draft202012Validator.check_schema(schema)
    for config in SAMPLE_CONFIGS[kind.name]:
        normalised = kind.validate_config(config)
        assert set(normalised) == set(kind.field_names)  # defaults filled
        assert kind.validate_config(normalised) == normalised  # idempotent
        json.dumps(normalised)  # storable in a JSONField
        jsonschema.validate(config, schema)  # the published schema accepts what we accept


def test_get_kind_unknown_is_a_clear_key_error():
    with pytest.raises(UnknownKind) as caught:
        get_kind("text_contains")
    assert isinstance(caught.value, KeyError)
    assert str(caught.value).startswith("unknown check kind 'text_contains'; known kinds: text_includes")
    with pytest.raises(KeyError):
        evaluate("nope", {}, Evidence(output=""))
    with pytest.raises(UnknownKind):
        get_kind(["unhashable"])


def test_register_rejects_duplicates_and_non_kinds():
    with pytest.raises(ValueError, match="already registered"):
        register(get_kind("text_includes"))
    with pytest.raises(TypeError):
        register("text_includes")


def test_register_adds_a_kind_in_one_call():
    def _evaluate(config, evidence, ctx=None):
        return Verdict(Outcome.PASS, "x", "x", "Expected x, and x.")

    kind = Kind(
        name="_test_only",
        label="Test",
        fields=(FieldSpec("a", "A", "int", default=1),),
        evaluator=_evaluate,
        needs=frozenset({"messages"}),
    )
    try:
        assert register(kind) is kind
        assert get_kind("_test_only").validate_config({}) == {"a": 1}
        assert kinds.evaluate("_test_only", {"a": 1}, Evidence(output="")).outcome == Outcome.PASS
    finally:
        from checks.kinds import registry

        registry._REGISTRY.pop("_test_only")


def test_field_spec_rejects_unknown_types():
    with pytest.raises(ValueError):
        FieldSpec("a", "A", "number")
    with pytest.raises(ValueError):
        FieldSpec("a", "A", "choice")


@pytest.mark.parametrize("raw", [None, [], "text", 3, ["text", "a"]])
def test_config_must_be_an_object(raw):
    with pytest.raises(ConfigError) as caught:
        get_kind("text_includes").validate_config(raw)
    assert list(caught.value.errors) == ["config"]


def test_config_error_joins_fields():
    error = ConfigError({"text": "this field is required", "inputs.0.value": "bad"})
    assert str(error) == "text: this field is required; inputs.0.value: bad"
    assert isinstance(error, ValueError)
    assert ConfigError("whole thing").errors == {"config": "whole thing"}


def test_internal_failure_is_an_error_verdict_not_an_exception():
    verdict = get_kind("tool_usage").evaluate({"tool": "a"}, Evidence(output="", tool_calls=[]))  # no mode
    assert verdict.outcome == Outcome.ERROR
    assert "KeyError" in verdict.explanation
    assert get_kind("text_includes").evaluate({"text": "a"}, "not evidence").outcome == Outcome.ERROR


def test_verdict_as_dict_is_json():
    verdict = evaluate(
        "tool_usage",
        get_kind("tool_usage").validate_config({"tool": "a", "count": 1}),
        Evidence(output="", tool_calls=[{"name": "a", "status": "failed"}]),
    )
    data = json.loads(json.dumps(verdict.as_dict()))
    assert data == {
        "outcome": "pass",
        "expected": "a to be called at least 1 time",
        "actual": "it was called 1 time",
        "explanation": "Expected a to be called at least 1 time, and it was called 1 time.",
        "evidence": [0],
        "details": {"count": 1, "calls_of_tool": 1},
    }


def test_context_is_optional_and_ignored_by_pure_kinds():
    config = get_kind("text_includes").validate_config({"text": "a"})
    evidence = Evidence(output="abc")
    assert evaluate(
        "text_includes", config, evidence, Context(judge=object(), cache={}, settings={"x": 1})
    ) == evaluate("text_includes", config, evidence)


def test_evidence_memo_is_not_a_field():
    from dataclasses import asdict

    evidence = Evidence(output="x", tool_calls=[])
    evaluate(
        "tool_usage", {"tool": "a", "mode": "at_least", "count": 0, "inputs": [], "node": None}, evidence
    )
    assert asdict(evidence) == {
        "output": "x",
        "messages": (),
        "tool_calls": [],
        "trace": None,
        "latency_ms": None,
        "metadata": {},
        "world": None,
    }
    assert evidence == Evidence(output="x", tool_calls=[])


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)
tool_call_like = st.fixed_dictionaries(
    {},
    optional={
        "name": st.sampled_from(["a", "b", ""]) | json_values,
        "status": st.sampled_from(["requested", "succeeded", "failed"]) | json_values,
        "input": json_values | st.fixed_dictionaries({"x": json_values, "y": json_values, "z": json_values}),
        "node": st.sampled_from(["n", None]) | json_values,
    },
)
trace_like = st.fixed_dictionaries(
    {},
    optional={
        "method": st.sampled_from(["GET", "post", "DELETE", ""]) | json_values,
        "path": st.sampled_from(["/a/b", "/b?x=1", "a/c", ""]) | json_values,
        "status": st.sampled_from([200, 404, 500, None]) | json_values,
    },
)
evidences = st.builds(
    Evidence,
    output=st.text(max_size=40) | json_values,
    tool_calls=st.none() | json_values | st.lists(tool_call_like | json_values, max_size=6),
    trace=st.none() | json_values | st.lists(trace_like | json_values, max_size=6),
    latency_ms=st.none() | st.floats(allow_nan=True) | st.integers() | st.text(max_size=3),
)
configs = st.sampled_from([(name, config) for name, items in SAMPLE_CONFIGS.items() for config in items])


@settings(max_examples=FUZZ_EXAMPLES)
@given(configs, evidences)
def test_evaluate_never_raises_and_never_errors_on_any_evidence(named_config, evidence):
    name, raw = named_config
    kind = get_kind(name)
    verdict = kind.evaluate(kind.validate_config(raw), evidence)
    assert isinstance(verdict, Verdict)
    assert verdict.outcome in (Outcome.PASS, Outcome.FAIL, Outcome.INDETERMINATE), verdict.explanation
    assert verdict.explanation.startswith("Expected ") and verdict.explanation.endswith(".")
    json.dumps(verdict.as_dict())


# Pure CPU: generating nested JSON values is what is slow on a loaded machine (up to ~20 ms an example
# when idle), so neither a deadline nor the too_slow health check says anything about the code.
@settings(max_examples=300)
@given(st.sampled_from(EXPECTED_KINDS), st.dictionaries(st.text(max_size=10), json_values, max_size=5))
def test_validate_config_only_raises_config_error(name, raw):
    try:
        config = get_kind(name).validate_config(raw)
    except ConfigError as exc:
        assert exc.errors and all(isinstance(v, str) and v for v in exc.errors.values())
    else:
        json.dumps(config)


def test_engine_imports_no_django():
    code = (
        "import sys; import checks.kinds, runs.outcomes; "
        "bad = sorted(m for m in sys.modules if m == 'django' or m.startswith('django.') "
        "or m.startswith('django_') or m.startswith('rest_framework')); "
        "print(','.join(bad))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""


NUMBER_FIELDS = [(k.name, f.name) for k in all_kinds() for f in k.fields if f.type == "int"]


def test_the_kinds_number_fields_are_known():
    assert set(NUMBER_FIELDS) >= {("tool_usage", "count"), ("latency", "max_ms"), ("ai_judge", "votes")}


@pytest.mark.parametrize(("kind_name", "field"), NUMBER_FIELDS)
@pytest.mark.parametrize("value", [10**30, -(10**30)])
def test_every_number_in_a_config_is_bounded_and_the_error_names_the_bound(kind_name, field, value):
    base = SAMPLE_CONFIGS[kind_name][0] if kind_name in SAMPLE_CONFIGS else {"prompt": "x"}
    with pytest.raises(ConfigError) as caught:
        get_kind(kind_name).validate_config({**base, field: value})
    message = caught.value.errors[field]
    assert any(ch.isdigit() for ch in message), message  # e.g. "must be at most 1,000"


@pytest.mark.parametrize(
    ("kind_name", "config", "field", "message"),
    [
        ("tool_usage", {"tool": "a", "count": 1001}, "count", "must be at most 1,000"),
        ("latency", {"max_ms": 600_001}, "max_ms", "must be at most 600,000"),
        ("latency", {"max_ms": 0}, "max_ms", "must be 1 or more"),
    ],
)
def test_number_bounds(kind_name, config, field, message):
    with pytest.raises(ConfigError) as caught:
        get_kind(kind_name).validate_config(config)
    assert caught.value.errors == {field: message}


def test_numbers_at_their_bounds_are_accepted():
    assert get_kind("tool_usage").validate_config({"tool": "a", "count": 1000})["count"] == 1000
    assert get_kind("latency").validate_config({"max_ms": 600_000})["max_ms"] == 600_000
