"""The clock, the trace, the event log, credentials, the call budget and ids."""

import json
import random
import re
from datetime import UTC, datetime, timedelta

import pytest

from worlds.engine import ids
from worlds.engine.budget import CALL_BUDGET, CallBudget
from worlds.engine.clock import Clock, iso, parse_start
from worlds.engine.credentials import make_credentials, matches, secret_values
from worlds.engine.events import EventLog
from worlds.engine.http import Request, Response
from worlds.engine.trace import BODY_LIMIT, PartialHistory, Trace, cut

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def test_call_k_happens_at_start_plus_k_per_call():
    clock = Clock(START, timedelta(seconds=2))
    assert clock.now == START
    assert [clock.tick() for _ in range(3)] == [START + timedelta(seconds=s) for s in (2, 4, 6)]
    assert clock.call_time(10) == START + timedelta(seconds=20)
    assert clock.at(timedelta(minutes=-10)) == datetime(2026, 3, 2, 8, 50, tzinfo=UTC)


def test_iso_and_slack_ts():
    clock = Clock(START)
    assert clock.iso() == "2026-03-02T09:00:00Z"
    assert iso(START + timedelta(milliseconds=500)) == "2026-03-02T09:00:00.500Z"
    assert [clock.slack_ts(), clock.slack_ts()] == ["1772442000.000001", "1772442000.000002"]
    clock.tick()
    assert clock.slack_ts() == "1772442001.000003"


@pytest.mark.parametrize(
    "text, expected", [("2026-03-02T09:00:00Z", START), ("2026-03-02T10:00:00+01:00", START)]
)
def test_clock_start(text, expected):
    assert parse_start(text) == expected


@pytest.mark.parametrize("bad", ["2026-03-02T09:00:00", "tomorrow", 5])
def test_clock_start_needs_an_iso_time_with_a_zone(bad):
    with pytest.raises(ValueError):
        parse_start(bad)


def _call(trace, **kw):
    base = dict(at=START, tool="slack", method="post", path="/api/chat.postMessage", status=200)
    return trace.record(**{**base, **kw})


@pytest.mark.parametrize(
    "kw, worked",
    [
        ({}, True),
        ({"status": 404}, False),
        ({"status": 399}, True),
        ({"coverage_gap": True, "status": 200}, False),
        ({"slack_ok": False}, False),
        ({"slack_ok": True}, True),
        ({"tool": "github", "path": "/graphql", "graphql_errors_only": True}, False),
    ],
)
def test_a_call_worked(kw, worked):
    assert _call(Trace(), **kw).worked is worked


def test_trace_entries_are_numbered_and_never_store_credentials():
    creds = {"slack": {"token": "xoxb-1-2-secret"}, "datadog": {"api_key": "k" * 32, "app_key": "a" * 40}}
    trace = Trace(secret_values(creds))
    first = _call(
        trace,
        request={"token": "xoxb-1-2-secret", "channel": "C1", "text": "my xoxb-1-2-secret"},
        response={"ok": True},
        slack_ok=True,
    )
    second = _call(
        trace,
        tool="datadog",
        method="GET",
        path="/api/v1/monitor",
        query={"api_key": ["k" * 32], "application_key": ["a" * 40], "page": ["1"]},
    )
    assert [e.seq for e in trace] == [1, 2]
    assert first.method == "POST"
    assert first.request == {"channel": "C1", "text": "my [redacted]"}
    assert second.query == {"page": ["1"]}
    assert second.slack_ok is None
    dumped = str(trace.to_list())
    assert "secret" not in dumped and "k" * 32 not in dumped
    assert trace.to_list()[0]["at"] == "2026-03-02T09:00:00Z" and trace.to_list()[0]["worked"] is True


def test_bodies_are_cut_at_10_kb_and_marked():
    trace = Trace()
    small = _call(trace, request={"text": "x" * 100}, response="y" * BODY_LIMIT)
    big = _call(trace, request={"text": "x" * 20_000}, response="é" * 20_000)
    assert (small.request_truncated, small.response_truncated) == (False, False)
    assert big.request_truncated and big.response_truncated
    assert len(big.request.encode()) == BODY_LIMIT and len(big.response.encode()) <= BODY_LIMIT
    assert set(big.to_dict()) == {
        "seq",
        "at",
        "tool",
        "method",
        "path",
        "query",
        "status",
        "request",
        "response",
        "request_truncated",
        "response_truncated",
        "coverage_gap",
        "slack_ok",
        "graphql_errors_only",
        "worked",
    }


def _whole_cut(body, secrets=()):
    """What the trace stored before it read the wire: the whole body encoded, redacted, then cut."""
    text = json.dumps(body, ensure_ascii=False, sort_keys=False, default=str)
    redacted = text
    for secret in secrets:
        redacted = redacted.replace(secret, "[redacted]")
    if redacted != text:
        body, text = json.loads(redacted), redacted
    raw = text.encode()
    if len(raw) <= BODY_LIMIT:
        return body, False
    return raw[:BODY_LIMIT].decode("utf-8", errors="ignore"), True


def test_a_cut_from_the_wire_stores_what_encoding_the_whole_body_stored():
    # cut() settles small bodies from the wire's length and cuts big ones from their first items:
    # on ~350 random bodies either side of 10 KB (non-ASCII, "," and ":" inside strings, a secret in a
    # body, envelopes of records) it stores exactly the text and flag the whole encoding gave.
    rng = random.Random(16)
    token = make_credentials(["slack"])["slack"]["token"]
    texts = ["é" * 40, "a, b: c" * 12, "x" * 300, token, "€😀" * 30, "plain"]

    def value(depth, scale):
        roll = rng.random()
        if depth > 2 or roll < 0.4:
            return rng.choice([1, 2.5, True, None, -0.0, 10**20, rng.choice(texts) * scale])
        if roll < 0.7:
            return [value(depth + 1, scale) for _ in range(rng.randint(0, 12))]
        return {
            f"{rng.choice(['k', 'ü', 'a b', 'x:y'])}{i}": value(depth + 1, scale)
            for i in range(rng.randint(0, 12))
        }

    counts = {False: 0, True: 0}
    for _ in range(600):
        body = value(0, rng.choice([1, 2, 8]))
        if not isinstance(body, dict | list):
            continue
        secrets = rng.choice([(), (token,), ("ghp_" + "z" * 36, token)])
        wire = Response(200, body).content()
        expected = _whole_cut(body, secrets)
        got = cut(body, secrets, wire)
        assert json.dumps(got) == json.dumps(expected)
        counts[expected[1]] += 1
    assert counts[False] > 50 and counts[True] > 50, counts


def test_events_are_numbered_with_simulated_time_in_order():
    log = EventLog()
    log.add("message", START, channel="slack_support")
    log.add("revealed", START, fact="laura.workspace")
    log.add("decided", START + timedelta(seconds=1), person="mike")
    assert [(e.n, e.type) for e in log] == [(1, "message"), (2, "revealed"), (3, "decided")]
    assert log.to_list()[1] == {
        "n": 2,
        "at": "2026-03-02T09:00:00Z",
        "type": "revealed",
        "fact": "laura.workspace",
    }
    with pytest.raises(ValueError, match="before the last event"):
        log.add("message", START)
    with pytest.raises(ValueError, match="unknown event type"):
        log.add("mystery", START + timedelta(seconds=2))


def test_a_history_that_forgot_its_items_numbers_on_and_refuses_to_be_read_whole():
    log, trace = EventLog(), Trace()
    log.add("message", START, channel="slack_support")
    trace.record(at=START, tool="crm", method="get", path="/crm/1", status=200)
    with pytest.raises(ValueError, match="continue_from needs an empty event log"):
        log.continue_from(5, START)
    with pytest.raises(ValueError, match="continue_from needs an empty trace"):
        trace.continue_from(5)
    log.forget()
    trace.forget()
    assert (len(log), log.events, len(trace), trace.entries) == (1, [], 1, [])
    with pytest.raises(PartialHistory, match="the event log holds events after 1 only"):
        list(log)
    with pytest.raises(PartialHistory, match="the trace holds entries after 1 only"):
        trace.to_list()
    with pytest.raises(ValueError, match="before the last event"):
        log.add("message", START - timedelta(seconds=1))  # time order carries on over what was forgotten
    assert log.add("message", START).n == 2
    assert trace.record(at=START, tool="crm", method="get", path="/crm/2", status=200).seq == 2
    resumed = EventLog()
    resumed.continue_from(7, START)
    assert resumed.add("decided", START, person="mike").n == 8 and len(resumed) == 8


FORMATS = {
    "slack": {"token": r"xoxb-\d{12}-\d{13}-[A-Za-z0-9]{24}"},
    "github": {"token": r"ghp_[A-Za-z0-9]{36}"},
    "datadog": {"api_key": r"[0-9a-f]{32}", "app_key": r"[0-9a-f]{40}"},
    "pagerduty": {"token": r"[A-Za-z0-9_+-]{20}"},
    "okta": {"token": r"00[A-Za-z0-9_-]{40}"},
}


def test_credentials_are_random_per_world_in_each_tools_format():
    one, two = make_credentials([*FORMATS, "crm"]), make_credentials(FORMATS)
    assert set(one) == set(FORMATS)  # other tools get none
    for tool, fields in FORMATS.items():
        for name, pattern in fields.items():
            assert re.fullmatch(pattern, one[tool][name]), (tool, name, one[tool][name])
            assert one[tool][name] != two[tool][name]
    assert matches(one["slack"]["token"], one["slack"]["token"])
    assert not matches(two["slack"]["token"], one["slack"]["token"]) and not matches(None, "x")


def test_the_501st_call_ends_the_trial():
    budget = CallBudget()
    assert all(budget.take() for _ in range(CALL_BUDGET))
    assert not budget.exceeded and budget.remaining == 0
    assert budget.take() is False  # the 501st: traced, 429, the trial ends
    assert budget.exceeded and budget.calls == 501
    assert budget.take() is False and budget.calls == 501


def test_ids_are_deterministic_and_shaped_like_the_real_ones():
    assert ids.slack_id("scene-a", "slack_laura") == ids.slack_id("scene-a", "slack_laura")
    assert ids.slack_id("scene-a", "slack_laura") != ids.slack_id("scene-b", "slack_laura")
    assert re.fullmatch(r"U[A-Z2-7]{10}", ids.slack_id("s", "u"))
    assert re.fullmatch(r"C[A-Z2-7]{10}", ids.slack_id("s", "c", "channel"))
    assert re.fullmatch(r"D[A-Z2-7]{10}", ids.slack_id("s", "c", "dm"))
    assert re.fullmatch(r"P[A-Z4-7]{6}", ids.pagerduty_id("s", "pd_mike"))
    assert re.fullmatch(r"00u[0-9A-Za-z]{17}", ids.okta_id("s", "okta_jane"))
    assert 10_000_000 <= ids.github_id("s", "gh_ben") < 100_000_000
    assert len({ids.slack_id("s", f"u{i}") for i in range(1000)}) == 1000


@pytest.mark.parametrize(
    "raw, path",
    [("//api/v1/monitor", "/api/v1/monitor"), ("api/chat.postMessage", "/api/chat.postMessage"), ("", "/")],
)
def test_leading_slashes_collapse_so_the_trace_sees_the_tools_own_path(raw, path):
    # an SDK given the base URL with its trailing slash joins it with a path that starts with one
    assert Request.make("GET", raw).path == path
