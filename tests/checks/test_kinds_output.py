"""json_schema and latency kinds: table-driven, no database."""

from __future__ import annotations

import pytest

from checks.kinds import ConfigError, Evidence, Outcome, evaluate, get_kind

PASS, FAIL, INDET = Outcome.PASS, Outcome.FAIL, Outcome.INDETERMINATE

ORDER_SCHEMA = {
    "type": "object",
    "properties": {
        "orderId": {"type": "string", "pattern": "^EC-[0-9]+$"},
        "total": {"type": "number", "minimum": 0},
        "items": {"type": "array", "items": {"type": "object", "required": ["sku"]}},
        "date": {"type": "string", "format": "date"},
    },
    "required": ["orderId"],
    "additionalProperties": False,
}


def check(kind: str, config: dict, **evidence):
    evidence.setdefault("output", "")
    return evaluate(kind, get_kind(kind).validate_config(config), Evidence(**evidence))


@pytest.mark.parametrize(
    ("output", "outcome", "where"),
    [
        ('{"orderId": "EC-1"}', PASS, None),
        ('  {"orderId": "EC-1", "total": 3.5, "items": [{"sku": "A"}]}\n', PASS, None),
        ('{"orderId": "EC-1", "date": "2024-02-30"}', FAIL, "/date"),  # formats are asserted
        ('{"orderId": "EC-1", "date": "2024-02-29"}', PASS, None),
        ('{"orderId": "X-1"}', FAIL, "/orderId"),
        ('{"total": 1}', FAIL, "top level"),
        ('{"orderId": "EC-1", "items": [{"sku": "A"}, {}]}', FAIL, "/items/1"),
        ('{"orderId": "EC-1", "extra": true}', FAIL, "top level"),
        ("[1, 2]", FAIL, "top level"),
        ("", FAIL, "not valid JSON"),
        ('```json\n{"orderId": "EC-1"}\n```', FAIL, "not valid JSON"),  # code fences are not JSON
        ("{'orderId': 'EC-1'}", FAIL, "not valid JSON"),
        ('{"orderId": "EC-1"} trailing', FAIL, "not valid JSON"),
        ('{"orderId": "Zoë"}', FAIL, "/orderId"),
    ],
)
def test_json_schema(output, outcome, where):
    verdict = check("json_schema", {"schema": ORDER_SCHEMA}, output=output)
    assert verdict.outcome == outcome, verdict.explanation
    if where:
        assert where in verdict.actual


def test_json_schema_counts_problems():
    verdict = check(
        "json_schema",
        {"schema": {"type": "array", "items": {"type": "integer"}}},
        output='["a", "b", 3, "c"]',
    )
    assert verdict.outcome == FAIL
    assert "(and 2 more problems)" in verdict.explanation
    assert verdict.details["problems"] == 3


def test_json_schema_missing_output_is_indeterminate():
    assert check("json_schema", {"schema": {}}, output=None).outcome == INDET


def test_json_schema_empty_schema_accepts_any_json():
    assert check("json_schema", {"schema": {}}, output="null").outcome == PASS


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({}, "required"),
        ({"schema": "object"}, "must be a JSON Schema object"),
        ({"schema": []}, "must be a JSON Schema object"),
        ({"schema": {"type": "objekt"}}, "is not a valid JSON Schema"),
        ({"schema": {"type": "object", "required": "name"}}, "is not a valid JSON Schema"),
        ({"schema": {"minimum": "3"}}, "is not a valid JSON Schema"),
        (
            {"schema": {"$schema": "http://json-schema.org/draft-07/schema#", "type": 3}},
            "is not a valid JSON Schema",
        ),
        ({"schema": {"$ref": "https://example.com/order.json"}}, "refers to another document"),
        ({"schema": {"properties": {"a": {"$ref": "defs.json#/a"}}}}, "refers to another document"),
    ],
)
def test_json_schema_config_errors(config, message):
    with pytest.raises(ConfigError) as caught:
        get_kind("json_schema").validate_config(config)
    assert message in caught.value.errors["schema"]


def test_json_schema_other_drafts_are_accepted():
    config = {"schema": {"$schema": "http://json-schema.org/draft-07/schema#", "type": "integer"}}
    assert check("json_schema", config, output="3").outcome == PASS
    assert check("json_schema", config, output="3.5").outcome == FAIL


@pytest.mark.parametrize(
    ("max_ms", "latency", "outcome"),
    [
        (1000, 999.9, PASS),
        (1000, 1000, PASS),  # at most: the limit itself passes
        (1000, 1000.0001, FAIL),
        (1000, 0, PASS),
        (1, 2, FAIL),
        (1000, None, INDET),  # not measured
        (1000, "fast", INDET),
        (1000, -5, INDET),
        (1000, float("nan"), INDET),
        (1000, float("inf"), INDET),
        (1000, True, INDET),
    ],
)
def test_latency(max_ms, latency, outcome):
    verdict = check("latency", {"max_ms": max_ms}, latency_ms=latency)
    assert verdict.outcome == outcome, verdict.explanation


def test_latency_explanation_never_hides_the_difference():
    verdict = check("latency", {"max_ms": 2000}, latency_ms=2000.0004)
    assert verdict.explanation == "Expected a latency of at most 2,000 ms, but it was 2000.0004 ms."
    verdict = check("latency", {"max_ms": 2000}, latency_ms=2350)
    assert verdict.explanation == "Expected a latency of at most 2,000 ms, but it was 2,350 ms."


@pytest.mark.parametrize("config", [{}, {"max_ms": 0}, {"max_ms": -1}, {"max_ms": "100"}, {"max_ms": 1.5}])
def test_latency_config_errors(config):
    with pytest.raises(ConfigError) as caught:
        get_kind("latency").validate_config(config)
    assert "max_ms" in caught.value.errors


def test_json_schema_internal_refs_work():
    schema = {
        "$id": "https://example.com/order",
        "$defs": {"sku": {"type": "string", "minLength": 2}},
        "type": "object",
        "properties": {
            "sku": {"$ref": "#/$defs/sku"},
            "again": {"$ref": "https://example.com/order#/$defs/sku"},
        },
    }
    assert check("json_schema", {"schema": schema}, output='{"sku": "AB", "again": "CD"}').outcome == PASS
    assert check("json_schema", {"schema": schema}, output='{"sku": "A"}').outcome == FAIL
