"""trace kind and trace evidence parsing: table-driven, no database."""

from __future__ import annotations

import pytest

from checks.kinds import ConfigError, Evidence, Outcome, evaluate, get_kind
from checks.kinds.evidence import MISSING_TRACE, parse_trace
from checks.kinds.trace import glob_match

PASS, FAIL, INDET = Outcome.PASS, Outcome.FAIL, Outcome.INDETERMINATE


def entry(method: str, path: str, status: int | None = 200, **extra):
    return {"method": method, "path": path, "status": status, **extra}


TRACE = [
    entry("GET", "/repos/acme/orders/issues/13?per_page=50"),  # 0: query string ignored
    entry("post", "/repos/acme/orders/issues/13/comments", 201),  # 1: lower-case method
    entry("POST", "/repos/acme/orders/issues", 422),  # 2: failed attempt
    entry("DELETE", "/crm/contacts/7", 403),  # 3: failed forbidden attempt
    entry("POST", "/api/chat.postMessage", 200, tool="slack"),  # 4
    entry("GET", "/health", None),  # 5: no response
]


def trace(config: dict, raw=TRACE):
    return evaluate("trace", get_kind("trace").validate_config(config), Evidence(output="", trace=raw))


@pytest.mark.parametrize(
    ("config", "outcome", "evidence"),
    [
        ({"called": "GET /repos/acme/orders/issues/13"}, PASS, (0,)),
        ({"called": "get /repos/acme/orders/issues/13"}, PASS, (0,)),  # method ignores case
        ({"called": "GET /repos/acme/orders/issues"}, FAIL, ()),  # the path is exact
        ({"called": "GET /repos/acme/orders/issues/*"}, PASS, (0,)),
        ({"called": "* /api/chat.postMessage"}, PASS, (4,)),  # * as method
        ({"called": "*"}, PASS, (0, 1, 4)),  # any working call
        ({"called": "POST /repos/*"}, PASS, (1,)),  # * spans /; 422 does not count
        ({"called": "POST /repos/*/issues"}, FAIL, (2,)),  # only a failed attempt: evidence shows it
        ({"called": "POST /repos/*/issues", "status": "any"}, PASS, (2,)),
        (
            {"called": ["GET /repos/acme/orders/issues/13", "POST /repos/acme/orders/issues/13/comments"]},
            PASS,
            (0, 1),
        ),
        (
            {"called": ["POST /repos/acme/orders/issues/13/comments", "GET /repos/acme/orders/issues/13"]},
            PASS,
            (0, 1),
        ),  # a list does not check order
        ({"called": ["GET /repos/acme/orders/issues/13", "PUT /x"]}, FAIL, ()),
        ({"called": "GET /health"}, FAIL, (5,)),  # no response is not a working call
        ({"called": "GET /health", "status": "any"}, PASS, (5,)),
        ({"not_called": "DELETE /crm/*"}, FAIL, (3,)),  # failed attempts count for not_called
        ({"not_called": ["POST /crm/*", "PATCH /crm/*"]}, PASS, ()),
        ({"not_called": "*"}, FAIL, (0, 1, 2, 3, 4, 5)),
        ({"not_called": "GET /repos/acme/orders/issues/13"}, FAIL, (0,)),  # query string ignored
        ({"called": "GET /repos/*", "not_called": "DELETE /crm/*"}, FAIL, (3,)),  # both must hold
        ({"called": "GET /repos/*", "not_called": "PUT /crm/*"}, PASS, (0,)),
        ({"called": "GET repos/acme/orders/issues/13"}, PASS, (0,)),  # a leading / is implied
        ({"called": "POST /api/chat.*"}, PASS, (4,)),
        ({"called": "POST /api/chat*postMessage"}, PASS, (4,)),
        ({"called": "POST /api/chat.postMessageX"}, FAIL, ()),
    ],
)
def test_trace(config, outcome, evidence):
    verdict = trace(config)
    assert verdict.outcome == outcome, verdict.explanation
    assert verdict.evidence == evidence
    assert verdict.expected in verdict.explanation and verdict.actual in verdict.explanation


def test_trace_with_no_calls_is_determinate():
    assert trace({"called": "*"}, []).outcome == FAIL
    assert trace({"not_called": "*"}, []).outcome == PASS


def test_trace_explanations():
    assert trace({"called": "POST /repos/*/issues"}).explanation == (
        'Expected the agent to make a working call (status below 400) matching "POST /repos/*/issues", '
        'but no working call matched "POST /repos/*/issues" (1 failed attempt: '
        "trace entry 2 (POST /repos/acme/orders/issues → 422))."
    )
    assert trace({"not_called": "DELETE /crm/*"}).explanation == (
        'Expected the agent to make no call matching "DELETE /crm/*", '
        'but 1 call matched "DELETE /crm/*": trace entry 3 (DELETE /crm/contacts/7 → 403).'
    )


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (None, MISSING_TRACE),
        ({"method": "GET"}, "trace is an object, not a list"),
        (["GET /x"], "trace[0] is a string, not an object"),
        ([entry("GET", "/a"), {"path": "/x", "status": 200}], "trace[1] has no method"),
        ([{"method": "", "path": "/x", "status": 200}], "trace[0] has no method"),
        ([{"method": "GET", "status": 200}], "trace[0] has no path"),
        ([{"method": "GET", "path": 3, "status": 200}], "trace[0] has a path that is a number"),
        ([{"method": "GET", "path": "/x"}], "trace[0] has no status"),
        ([entry("GET", "/x", "200")], "trace[0] has a status that is not an HTTP status code"),
        ([entry("GET", "/x", True)], "not an HTTP status code"),
        ([entry("GET", "/x", 1000)], "not an HTTP status code"),
        ([entry("GET", "/x", tool=5)], "trace[0] has a tool that is a number"),
    ],
)
def test_malformed_trace_is_indeterminate(raw, problem):
    assert problem in parse_trace(raw).problem
    for config in ({"called": "*"}, {"not_called": "*"}, {"called": "*", "status": "any"}):
        verdict = trace(config, raw)
        assert verdict.outcome == INDET
        assert problem in verdict.actual


@pytest.mark.parametrize(
    ("glob", "text", "matched"),
    [
        ("/a", "/a", True),
        ("/a", "/ab", False),
        ("/a/*", "/a/", True),
        ("/a/*", "/a/b/c", True),
        ("/*/c", "/a/b/c", True),
        ("/*/c", "/c", False),
        ("*x*x*x*", "xxx", True),
        ("*x*x*x*", "xx", False),
        ("/a*b*c", "/abbbbc", True),
        ("/a*b*c", "/acb", False),
        ("/a*a", "/a", False),  # prefix and suffix may not overlap
        ("/é*ü", "/é/ö/ü", True),
    ],
)
def test_glob_match(glob, text, matched):
    assert glob_match(tuple(glob.split("*")), text) is matched


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({}, "called"),
        ({"called": [], "not_called": []}, "called"),
        ({"called": "GET"}, "called.0"),
        ({"called": "GET /a b"}, "called.0"),
        ({"called": "G3T /a"}, "called.0"),
        ({"called": ["GET /a", "/b"]}, "called.1"),
        ({"called": "GET /a?x=1"}, "called.0"),
        ({"called": 5}, "called"),
        ({"called": [5]}, "called.0"),
        ({"not_called": "PATCH"}, "not_called.0"),
        ({"called": "*", "status": "all"}, "status"),
        ({"not_called": "*", "status": "any"}, "status"),
        ({"called": "*", "calls": "*"}, "calls"),
        ({"called": ["GET /a"] * 51}, "called"),
        ({"called": "GET /" + "a" * 1000}, "called.0"),
    ],
)
def test_trace_config_errors(config, field):
    with pytest.raises(ConfigError) as caught:
        get_kind("trace").validate_config(config)
    assert field in caught.value.errors


def test_trace_config_says_what_a_pattern_list_must_be():
    for value, message in (
        (5, "must be a pattern or a list of patterns, not a number"),
        (["GET /a"] * 51, "at most 50 patterns"),
    ):
        with pytest.raises(ConfigError) as caught:
            get_kind("trace").validate_config({"called": value})
        assert caught.value.errors["called"] == message


def test_trace_config_is_normalised():
    kind = get_kind("trace")
    assert kind.validate_config({"called": " GET /a "}) == {
        "called": ["GET /a"],
        "not_called": [],
        "status": None,
    }
    assert kind.validate_config({"not_called": ["*"], "status": ""}) == {
        "called": [],
        "not_called": ["*"],
        "status": None,
    }
    assert kind.validate_config({"called": "*", "status": "any"})["status"] == "any"
