"""The `state` kind and the `trace` kind on a sample played in a world (pure: fake worlds, no DB)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from checks.kinds import ConfigError, Evidence, Outcome, evaluate, validate_config
from checks.kinds.evidence import parse_trace
from checks.kinds.state import NO_WORLD
from worlds.engine.results import StateResult


@dataclass
class Entry:
    seq: int
    method: str
    path: str
    status: int = 200
    tool: str = "crm"
    coverage_gap: bool = False
    slack_ok: bool | None = None
    graphql_errors_only: bool = False


@dataclass
class FakeWorld:
    trace: list = field(default_factory=list)
    asked: list = field(default_factory=list)
    answer: StateResult | None = None

    def state_check(self, name, spec, *, written=False):
        assert written, "a library check's refs are as the user wrote them"
        self.asked.append((name, spec))
        return self.answer


def test_state_without_a_world_is_indeterminate():
    config = validate_config("state", {"slack.message": {"channel": "$slack_support"}})
    verdict = evaluate("state", config, Evidence(output="hi"))
    assert verdict.outcome is Outcome.INDETERMINATE
    assert (verdict.expected, verdict.actual) == ("the world's slack.message to hold", NO_WORLD)


def test_a_process_check_without_a_world_is_indeterminate():
    config = validate_config("process", {"revealed": ["laura.workspace"]})
    verdict = evaluate("process", config, Evidence(output="hi"))
    assert verdict.outcome is Outcome.INDETERMINATE
    assert (verdict.expected, verdict.actual) == ("the world's revealed check to hold", NO_WORLD)


@pytest.mark.parametrize("passed, outcome", [(True, Outcome.PASS), (False, Outcome.FAIL)])
def test_state_asks_the_world(passed, outcome):
    answer = StateResult(passed, "a reply", "none", "Expected a reply; found none.", (3,), (7,))
    world = FakeWorld(answer=answer)
    config = validate_config("state", {"datadog.monitor": "$datadog_orders", "is": "OK"})
    verdict = evaluate("state", config, Evidence(output="", world=world))
    assert verdict.outcome is outcome
    assert (verdict.expected, verdict.actual, verdict.explanation) == (
        "a reply",
        "none",
        "Expected a reply; found none.",
    )
    assert verdict.evidence == (3,) and verdict.details == {"events": [7]}
    assert world.asked == [("datadog.monitor", {"datadog.monitor": "$datadog_orders", "is": "OK"})]


def test_state_passes_the_selector_and_the_fields_beside_it():
    world = FakeWorld(answer=StateResult(True, "x", "x", "x"))
    config = validate_config("state", {"slack.message": {"channel": "$c"}, "count_gte": 2})
    evaluate("state", config, Evidence(output="", world=world))
    assert world.asked == [("slack.message", {"channel": "$c", "count_gte": 2})]


@pytest.mark.parametrize(
    "raw, field_name",
    [
        ({}, "config"),
        ({"message": {}}, "config"),
        ({"slack.message": {}, "github.issue": {}}, "config"),
        ({"slack.message": 5}, "slack.message"),
        ({"slack.message": {}, "bad key!": 1}, "bad key!"),
        ([], "config"),
    ],
)
def test_state_config_shape(raw, field_name):
    with pytest.raises(ConfigError) as info:
        validate_config("state", raw)
    assert field_name in info.value.errors


def test_state_config_from_the_builder_field_is_the_scene_form():
    assert validate_config("state", {"state": {"slack.message": {"channel": "$c"}}}) == {
        "slack.message": {"channel": "$c"}
    }


def _trace_verdict(config, entries):
    world = FakeWorld(trace=entries)
    return evaluate("trace", validate_config("trace", config), Evidence(output="", trace=[], world=world))


@pytest.mark.parametrize(
    "flags",
    [{"coverage_gap": True}, {"slack_ok": False}, {"graphql_errors_only": True}, {"status": 404}],
)
def test_a_call_the_tool_refused_never_satisfies_called(flags):
    entry = Entry(1, "POST", "/api/chat.postMessage", **flags)
    verdict = _trace_verdict({"called": "POST /api/chat.postMessage"}, [entry])
    assert verdict.outcome is Outcome.FAIL
    assert verdict.evidence == (1,)
    any_status = _trace_verdict({"called": "POST /api/chat.postMessage", "status": "any"}, [entry])
    assert any_status.outcome is Outcome.PASS and any_status.evidence == (1,)


def test_the_world_trace_wins_over_the_reported_one_and_cites_seqs():
    world = FakeWorld(trace=[Entry(1, "GET", "/crm/a"), Entry(2, "POST", "/crm/b", status=500)])
    evidence = Evidence(output="", trace=[{"method": "GET", "path": "/other", "status": 200}], world=world)
    config = validate_config("trace", {"called": "GET /crm/*", "not_called": "POST /crm/*"})
    verdict = evaluate("trace", config, evidence)
    assert verdict.outcome is Outcome.FAIL  # the failed POST still counts for not_called
    assert verdict.evidence == (2,)
    assert "trace entry 2 (POST /crm/b → 500)" in verdict.actual


def test_a_world_trace_from_dicts():
    world = FakeWorld(trace=[{"seq": 4, "method": "get", "path": "/x?y=1", "status": 200, "slack_ok": True}])
    assert _trace_verdict({"called": "GET /x"}, world.trace).evidence == (4,)


def test_reported_traces_accept_the_worked_flags():
    parsed = parse_trace(
        [
            {"method": "GET", "path": "/a", "status": 200},
            {"method": "GET", "path": "/a", "status": 200, "coverage_gap": True},
            {"method": "GET", "path": "/a", "status": 200, "slack_ok": False},
            {"method": "GET", "path": "/a", "status": 200, "worked": False},
        ]
    )
    assert parsed.problem == ""
    assert [e.worked for e in parsed.entries] == [True, False, False, False]
    assert (
        "coverage_gap"
        in parse_trace([{"method": "GET", "path": "/a", "status": 200, "coverage_gap": 1}]).problem
    )
