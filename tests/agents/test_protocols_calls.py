"""agents.protocols against real loopback agents: shapes, retries, limits, failures (async and sync)."""

from __future__ import annotations

import asyncio
import email.utils
import functools
import json
import time

import pytest

from agents.protocols import (
    BACKOFF_BASE_S,
    AgentCallError,
    AgentTarget,
    build_request,
    call_agent,
    make_async_client,
    parse_retry_after,
    ping,
    ping_sync,
)
from tests.agents.helpers import scenario
from tests.support.fake_agent import FakeAgent
from tests.support.raw_server import RawServer, free_port, read_request


def target(url: str, **kw) -> AgentTarget:
    return AgentTarget(protocol=kw.pop("protocol", "evalconsole"), endpoint_url=url, **kw)


# ----------------------------------------------------------------------------- request bodies


def test_build_request_evalconsole_turns_input_into_one_user_message():
    body = build_request(
        target("http://x/"),
        scenario={"name": "n", "input": "hi", "metadata": {"k": 1}},
        run_id="7",
        sample_id="9",
        attempt=2,
    )
    assert body == {
        "protocol": "evalconsole/1",
        "run": "7",
        "sample": "9",
        "attempt": 2,
        "scenario": {
            "name": "n",
            "input": "hi",
            "messages": [{"role": "user", "content": "hi"}],
            "metadata": {"k": 1},
        },
    }


def test_build_request_keeps_given_messages_and_derives_input():
    messages = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "c"},
    ]
    body = build_request(
        target("http://x/"), scenario={"messages": messages}, run_id="1", sample_id="2", attempt=1
    )
    assert body["scenario"]["messages"] == messages
    assert body["scenario"]["input"] == "c"
    assert body["scenario"]["metadata"] == {} and body["scenario"]["name"] == ""


def test_build_request_openai_chat():
    t = target("http://x/v1", protocol="openai-chat", model="llama3")
    body = build_request(t, scenario={"input": "hi"}, run_id="1", sample_id="2", attempt=1)
    assert body == {"model": "llama3", "messages": [{"role": "user", "content": "hi"}]}


def test_target_validates_and_hides_headers():
    with pytest.raises(ValueError):
        AgentTarget(protocol="grpc", endpoint_url="http://x/")
    with pytest.raises(ValueError):
        AgentTarget(protocol="evalconsole", endpoint_url="http://x/", timeout_s=0)
    t = target("http://x/", headers={"Authorization": "Bearer secret-value"})
    assert "secret-value" not in repr(t)


# ----------------------------------------------------------------------------- happy paths


def test_evalconsole_happy_path(call, fake_agent):
    t = target(fake_agent.url, headers={"Authorization": "Bearer k-123"})
    reply = call(t, scenario=scenario("Where is my order EC-1042?"), run_id="r1", sample_id="s1")
    assert reply.output == "Order EC-1042 was found and is in transit."
    assert reply.tool_calls == [
        {
            "name": "lookup_order",
            "status": "succeeded",
            "input": {"orderId": "EC-1042"},
            "output": {"found": True, "status": "in_transit"},
        }
    ]
    assert reply.trace is None  # key missing -> unknown
    assert [(a.number, a.status_code, a.error) for a in reply.attempts] == [(1, 200, None)]
    assert reply.latency_ms == reply.attempts[0].latency_ms > 0
    assert reply.request["run"] == "r1" and reply.request["sample"] == "s1" and reply.request["attempt"] == 1
    assert "headers" not in reply.request and "k-123" not in repr(reply.request)
    seen = fake_agent.requests[-1]
    assert seen["headers"]["authorization"] == "Bearer k-123"
    assert seen["headers"]["content-type"] == "application/json"
    assert seen["json"] == reply.request


def test_evalconsole_reports_empty_lists_and_missing_keys_as_given(call, fake_agent):
    reply = call(target(fake_agent.url), scenario=scenario("hello", trace=[], messages=[{"role": "user"}]))
    assert reply.tool_calls == [] and reply.trace == [] and reply.messages == [{"role": "user"}]
    reply = call(target(fake_agent.url), scenario=scenario("hello", omit_tool_calls=True))
    assert reply.tool_calls is None
    reply = call(target(fake_agent.url), scenario=scenario("hello", tool_calls="not a list"))
    assert reply.tool_calls == "not a list"  # passed through raw: the engine decides it is malformed


def test_openai_chat_happy_path(call, fake_agent):
    t = target(
        fake_agent.openai_url,
        protocol="openai-chat",
        model="gpt-test",
        headers={"Authorization": "Bearer sk"},
    )
    reply = call(t, scenario={"input": "Where is EC-1042?"})
    assert reply.tool_calls == [
        {"name": "lookup_order", "status": "requested", "input": {"orderId": "EC-1042"}}
    ]
    assert reply.output == ""  # content null -> ""
    assert reply.request == {
        "model": "gpt-test",
        "messages": [{"role": "user", "content": "Where is EC-1042?"}],
    }
    assert reply.messages[0] == {"role": "user", "content": "Where is EC-1042?"}
    assert reply.messages[-1]["role"] == "assistant"
    assert fake_agent.requests[-1]["path"] == "/v1/chat/completions"
    reply = call(t, scenario={"input": "just chatting"})
    assert reply.output == "just chatting" and reply.tool_calls == []  # no tool_calls key -> none


def test_openai_chat_unparseable_arguments_stay_a_string(call):
    calls = [{"name": "search", "arguments": "{not json"}, {"name": "noop", "arguments": ""}]
    with FakeAgent(tool_calls=calls, output="done") as agent:
        t = target(agent.openai_url, protocol="openai-chat", model="m")
        reply = call(t, scenario={"input": "x"})
    assert reply.output == "done"
    assert reply.tool_calls == [
        {"name": "search", "status": "requested", "input": "{not json"},
        {"name": "noop", "status": "requested", "input": {}},
    ]


# ----------------------------------------------------------------------------- retries


def test_retries_500_then_succeeds_and_records_every_attempt(call, fake_agent, fake_sleep):
    reply = call(
        target(fake_agent.url, retries=2),
        scenario=scenario(fail_times=2),
        sample_id="s-500",
        sleep=fake_sleep,
    )
    assert [(a.number, a.status_code) for a in reply.attempts] == [(1, 500), (2, 500), (3, 200)]
    assert reply.attempts[0].error == "HTTP 500"
    assert reply.request["attempt"] == 3
    assert [r["json"]["attempt"] for r in fake_agent.requests] == [1, 2, 3]
    assert fake_agent.stats()["sample_attempts"]["s-500"] == 3
    # full jitter: each delay is uniform in [0, base * 2**(n-1)]
    assert len(fake_sleep.calls) == 2
    assert 0 <= fake_sleep.calls[0] <= BACKOFF_BASE_S and 0 <= fake_sleep.calls[1] <= 2 * BACKOFF_BASE_S


def test_500_always_names_status_and_attempts(call, fake_agent, fake_sleep):
    with pytest.raises(AgentCallError) as info:
        call(target(fake_agent.url, retries=2), scenario=scenario(status=500), sleep=fake_sleep)
    exc = info.value
    assert exc.message.startswith("the agent answered HTTP 500 after 3 attempts")
    assert str(exc) == exc.message
    assert [a.status_code for a in exc.attempts] == [500, 500, 500]
    assert exc.request["attempt"] == 3 and exc.kind == "http_status" and not exc.rate_limited


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_other_4xx_are_not_retried(call, fake_agent, fake_sleep, status):
    with pytest.raises(AgentCallError) as info:
        call(target(fake_agent.url, retries=3), scenario=scenario(status=status), sleep=fake_sleep)
    assert info.value.message.startswith(f"the agent answered HTTP {status}: ")
    assert len(info.value.attempts) == 1 and fake_sleep.calls == []


def test_redirects_are_not_followed(call, fake_agent):
    with pytest.raises(AgentCallError) as info:
        call(
            target(fake_agent.url),
            scenario=scenario(status=302, headers={"Location": "http://169.254.169.254/"}),
        )
    assert "HTTP 302" in info.value.message and "redirects are not followed" in info.value.message


def test_429_retry_after_seconds_is_honoured(call, fake_agent, fake_sleep):
    reply = call(
        target(fake_agent.url, retries=2),
        scenario=scenario(status_429_times=2, retry_after=3),
        sleep=fake_sleep,
    )
    assert fake_sleep.calls == [3.0, 3.0]
    assert [a.status_code for a in reply.attempts] == [429, 429, 200]


def test_429_retry_after_http_date(call, fake_agent, fake_sleep):
    when = email.utils.formatdate(time.time() + 5, usegmt=True)
    call(target(fake_agent.url), scenario=scenario(status_429_times=1, retry_after=when), sleep=fake_sleep)
    assert len(fake_sleep.calls) == 1 and 3.0 <= fake_sleep.calls[0] <= 5.0


def test_429_retry_after_is_capped(call, fake_agent, fake_sleep):
    call(
        target(fake_agent.url, timeout_s=30),
        scenario=scenario(status_429_times=1, retry_after=3600),
        sleep=fake_sleep,
    )
    assert fake_sleep.calls == [30.0]


def test_429_never_sleeps_beyond_the_budget(call, fake_agent, fake_sleep):
    t = target(fake_agent.url, timeout_s=1.0, retries=2, total_timeout_s=5.0)
    with pytest.raises(AgentCallError) as info:
        call(t, scenario=scenario(status_429_times=5, retry_after=20), sleep=fake_sleep)
    exc = info.value
    assert fake_sleep.calls == [] and len(exc.attempts) == 1
    assert exc.rate_limited and exc.retry_after_s == 20.0
    assert exc.message.startswith("the agent answered HTTP 429 (rate limited)")


def test_429_always_is_flagged_rate_limited(call, fake_agent, fake_sleep):
    with pytest.raises(AgentCallError) as info:
        call(
            target(fake_agent.url, retries=1),
            scenario=scenario(status_429_times=9, retry_after=1),
            sleep=fake_sleep,
        )
    assert info.value.rate_limited and len(info.value.attempts) == 2
    assert info.value.message.startswith("the agent answered HTTP 429 (rate limited) after 2 attempts")


def test_429_with_a_real_short_sleep(fake_agent):
    async def go():
        async with make_async_client() as client:
            started = time.monotonic()
            reply = await call_agent(
                target(fake_agent.url),
                scenario=scenario(status_429_times=1, retry_after=0.3),
                run_id="r",
                sample_id="real-sleep",
                client=client,
            )
            return reply, time.monotonic() - started

    reply, elapsed = asyncio.run(go())
    assert elapsed >= 0.3 and len(reply.attempts) == 2


def test_parse_retry_after():
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after(" 1.5 ") == 1.5
    assert parse_retry_after("-3") == 0.0
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None
    now = 1_000_000_000.0
    assert parse_retry_after(email.utils.formatdate(now + 10, usegmt=True), now=now) == 10.0
    assert parse_retry_after(email.utils.formatdate(now - 10, usegmt=True), now=now) == 0.0


# ----------------------------------------------------------------------------- failures


def test_timeout_names_the_timeout(call, fake_agent):
    started = time.monotonic()
    with pytest.raises(AgentCallError) as info:
        call(target(fake_agent.url, timeout_s=0.3, retries=0), scenario=scenario(hang=True))
    assert info.value.message == "timed out after 0.3 s"
    assert info.value.kind == "timeout" and info.value.attempts[0].status_code is None
    assert time.monotonic() - started < 2.0


def test_timeouts_are_retried(call, fake_agent, fake_sleep):
    with pytest.raises(AgentCallError) as info:
        call(target(fake_agent.url, timeout_s=0.2, retries=1), scenario=scenario(hang=True), sleep=fake_sleep)
    assert info.value.message == "timed out after 0.2 s (2 attempts)"
    assert len(fake_sleep.calls) == 1


def test_timeout_covers_a_trickling_reply(call):
    """httpx's timeouts are per read; an agent sending a byte every 50 ms must still time out."""

    def trickle(conn):
        read_request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
        for _ in range(200):
            conn.sendall(b" ")
            time.sleep(0.05)

    with RawServer(trickle) as server:
        started = time.monotonic()
        with pytest.raises(AgentCallError) as info:
            call(target(server.url, timeout_s=0.5, retries=0), scenario=scenario())
        assert info.value.kind == "timeout"
        assert time.monotonic() - started < 1.5


def test_malformed_json_is_not_retried(call, fake_agent, fake_sleep):
    with pytest.raises(AgentCallError) as info:
        call(target(fake_agent.url), scenario=scenario(malformed=True), sleep=fake_sleep)
    assert info.value.message.startswith("the reply is not valid JSON: ")
    assert info.value.kind == "not_json" and len(info.value.attempts) == 1 and fake_sleep.calls == []
    assert info.value.attempts[0].status_code == 200


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('{"result": "hi"}', "the reply is missing 'output'"),
        ('{"output": null}', "'output' is null, not a string"),
        ('{"output": 42}', "'output' is a number, not a string"),
        ('["output"]', "the reply is a list, not a JSON object"),
        ("", "the reply is not valid JSON: the body is empty"),
    ],
)
def test_reply_shape_errors(call, fake_agent, body, message):
    with pytest.raises(AgentCallError) as info:
        call(target(fake_agent.url), scenario=scenario(body=body))
    assert info.value.message == message


def test_empty_output_is_fine(call, fake_agent):
    assert call(target(fake_agent.url), scenario=scenario(output="")).output == ""


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('{"choices": []}', "the reply has no choices"),
        ('{"id": "x"}', "the reply is missing 'choices'"),
        ('{"choices": [{"text": "legacy"}]}', "the reply is missing 'choices[0].message'"),
    ],
)
def test_openai_shape_errors(call, fake_agent, body, message):
    t = target(
        fake_agent.openai_url,
        protocol="openai-chat",
        model="m",
        headers={"X-Fake": json.dumps({"body": body})},
    )
    with pytest.raises(AgentCallError) as info:
        call(t, scenario={"input": "x"})
    assert info.value.message == message


@pytest.mark.parametrize("chunked", [False, True])
def test_oversize_reply_is_cut_at_the_cap(call, fake_agent, chunked):
    total = 200_000_000
    started = time.monotonic()
    with pytest.raises(AgentCallError) as info:
        call(
            target(fake_agent.url, max_response_bytes=1_000_000, retries=2),
            scenario=scenario(huge_bytes=total, chunked=chunked),
        )
    assert info.value.message == "the reply is larger than 1000000 bytes"
    assert info.value.kind == "too_large" and len(info.value.attempts) == 1
    assert time.monotonic() - started < 5
    deadline = time.monotonic() + 5
    while fake_agent.stats()["in_flight"] and time.monotonic() < deadline:
        time.sleep(0.02)
    assert fake_agent.stats()["huge_bytes_sent"] < total / 10  # we hung up long before the end


def test_connection_refused(call, fake_sleep):
    with pytest.raises(AgentCallError) as info:
        call(target(f"http://127.0.0.1:{free_port()}/", retries=2), scenario=scenario(), sleep=fake_sleep)
    assert info.value.message == "connection refused (3 attempts)"
    assert info.value.kind == "connect" and len(fake_sleep.calls) == 2
    with pytest.raises(AgentCallError) as info:
        call(target(f"http://127.0.0.1:{free_port()}/", retries=0), scenario=scenario())
    assert info.value.message == "connection refused"


def test_dropped_connection_is_retried(call, fake_agent, fake_sleep):
    with pytest.raises(AgentCallError) as info:
        call(target(fake_agent.url, retries=1), scenario=scenario(drop=True), sleep=fake_sleep)
    assert info.value.message == "the agent closed the connection without answering (2 attempts)"
    assert info.value.kind == "dropped"


def test_dropped_once_then_answers(call, fake_sleep):
    served = []

    def flaky(conn):
        read_request(conn)
        served.append(1)
        if len(served) == 1:
            return  # hang up without a word
        body = b'{"output": "second time lucky"}'
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body)
        )

    with RawServer(flaky) as server:
        reply = call(target(server.url, retries=1), scenario=scenario(), sleep=fake_sleep)
    assert reply.output == "second time lucky" and [a.status_code for a in reply.attempts] == [None, 200]


def test_invalid_url_is_reported(call):
    with pytest.raises(AgentCallError) as info:
        call(target("ftp://example.com/agent"), scenario=scenario())
    assert info.value.kind == "invalid_url" and len(info.value.attempts) == 1


@pytest.mark.parametrize("port", ["99999", "65536", "0"])
def test_a_port_out_of_range_is_a_clear_error_not_an_exception_group(call, port):
    with pytest.raises(AgentCallError) as info:
        call(target(f"http://127.0.0.1:{port}/", retries=3), scenario=scenario())
    assert info.value.kind == "invalid_url" and len(info.value.attempts) == 1  # never retried
    assert info.value.message == (
        f"the endpoint URL is not usable: its port must be between 1 and 65535, not {port}"
    )
    pinged = ping_sync(target(f"http://127.0.0.1:{port}/"))
    assert not pinged.ok and pinged.error == info.value.message


# ----------------------------------------------------------------------------- ping, concurrency


def test_ping_ok_and_failing(fake_agent):
    result = asyncio.run(ping(target(fake_agent.url)))
    assert (
        result.ok and result.status_code == 200 and result.output == "You said: ping" and result.error is None
    )
    bad = ping_sync(target(fake_agent.url, headers={"X-Fake": '{"status": 503}'}, retries=5))
    assert not bad.ok and bad.status_code == 503 and bad.error.startswith("the agent answered HTTP 503")
    assert fake_agent.stats()["statuses"]["503"] == 1  # ping never retries
    refused = ping_sync(target(f"http://127.0.0.1:{free_port()}/"))
    assert not refused.ok and refused.status_code is None and refused.error == "connection refused"


class _HoldReplies:
    """Holds a FakeAgent's replies until ``waiting`` requests are in at once, then lets every one through.

    A peak sampled from free-running 200 ms calls depends on how fast a (possibly loaded) machine
    sends them; a held request is still in flight for its caller, so ``peak`` counts calls the
    client really had open together. The gate also opens after ``deadline_s`` (below the calls'
    timeout), so a client that never gets there fails the assertion instead of hanging.
    """

    def __init__(self, agent: FakeAgent, *, waiting: int, deadline_s: float) -> None:
        self.waiting = waiting
        self.deadline_s = deadline_s
        self.held = 0
        self.peak = 0
        self._open: asyncio.Event | None = None  # made on the agent's own event loop
        self._timer: asyncio.TimerHandle | None = None
        self._answer = agent.server.answer
        agent.server.answer = self._gated

    async def _gated(self, *args, **kwargs):
        if self._open is None:
            self._open = asyncio.Event()
            self._timer = asyncio.get_running_loop().call_later(self.deadline_s, self._open.set)
        if not self._open.is_set():
            self.held += 1
            self.peak = max(self.peak, self.held)
            if self.held >= self.waiting:
                self._timer.cancel()
                self._open.set()
            else:
                await self._open.wait()
            self.held -= 1
        return await self._answer(*args, **kwargs)


def test_many_concurrent_calls_share_one_client():
    async def go(agent):
        async with make_async_client(max_connections=200) as client:
            t = target(agent.url)
            started = time.monotonic()
            replies = await asyncio.gather(
                *[
                    call_agent(t, scenario=scenario(), run_id="c", sample_id=str(i), client=client)
                    for i in range(400)
                ]
            )
            return replies, time.monotonic() - started

    with FakeAgent(latency_ms=200) as agent:
        gate = _HoldReplies(agent, waiting=150, deadline_s=20.0)
        replies, elapsed = asyncio.run(go(agent))
        stats = agent.stats()
    assert len(replies) == 400 and all(r.output for r in replies)
    assert gate.peak >= 150, gate.peak  # really concurrent: 150 calls open at once, none answered yet
    assert stats["max_in_flight"] >= 150  # and the agent saw them in flight together
    assert elapsed < 40.0, elapsed  # ~2 waves of 200 ms when idle; serial would be 400 x 200 ms = 80 s
    assert stats["connections_total"] <= 200


def test_sleep_is_not_called_after_the_last_attempt(call, fake_agent, fake_sleep):
    with pytest.raises(AgentCallError):
        call(target(fake_agent.url, retries=0), scenario=scenario(status=502), sleep=fake_sleep)
    assert fake_sleep.calls == []


def test_client_sharing_rules(fake_agent):
    import httpx

    async def go():
        async with httpx.AsyncClient() as plain:
            with pytest.raises(TypeError):
                await call_agent(
                    target(fake_agent.url), scenario=scenario(), run_id="r", sample_id="s", client=plain
                )

    asyncio.run(go())


def test_waiting_for_a_connection_slot_does_not_count_as_agent_time():
    """50 calls through 5 connections to a 200 ms agent (10 waves, 2 s) with a 1.5 s timeout: all succeed."""

    async def go(agent):
        async with make_async_client(max_connections=5) as client:
            t = target(agent.url, timeout_s=1.5, retries=0)
            return await asyncio.gather(
                *[
                    call_agent(t, scenario=scenario(), run_id="q", sample_id=str(i), client=client)
                    for i in range(50)
                ]
            )

    with FakeAgent(latency_ms=200) as agent:
        replies = asyncio.run(go(agent))
        stats = agent.stats()
    assert len(replies) == 50 and stats["max_in_flight"] == 5 and stats["connections_total"] == 5
    assert all(len(r.attempts) == 1 and r.latency_ms < 1500 for r in replies)


def test_cancelled_calls_give_their_connections_back(fake_agent):
    async def go():
        async with make_async_client(max_connections=3) as client:
            hung = [
                asyncio.create_task(
                    call_agent(
                        target(fake_agent.url, timeout_s=30),
                        scenario=scenario(hang=True),
                        run_id="c",
                        sample_id=str(i),
                        client=client,
                    )
                )
                for i in range(3)
            ]
            await asyncio.sleep(0.3)
            for task in hung:
                task.cancel()
            await asyncio.gather(*hung, return_exceptions=True)
            t = target(fake_agent.url, timeout_s=2, retries=0)
            return await asyncio.wait_for(
                asyncio.gather(
                    *[
                        call_agent(t, scenario=scenario(), run_id="c", sample_id=f"after-{i}", client=client)
                        for i in range(6)
                    ]
                ),
                timeout=5,
            )

    replies = asyncio.run(go())
    assert len(replies) == 6


def test_bad_header_value_is_a_clean_error(call, fake_agent):
    with pytest.raises(AgentCallError) as info:
        call(target(fake_agent.url, headers={"X-Key": "line\nbreak"}), scenario=scenario())
    assert info.value.kind == "transport" and "headers" in info.value.message


def test_keep_alive_connections_are_reused():
    async def go(agent):
        async with make_async_client() as client:
            for i in range(5):
                await call_agent(
                    target(agent.url), scenario=scenario(), run_id="k", sample_id=str(i), client=client
                )

    with FakeAgent() as agent:  # its own server: a late accept from another test cannot be counted here
        asyncio.run(go(agent))
        assert agent.stats()["connections_total"] == 1


def test_stale_keep_alive_connection_is_replaced():
    """The agent closes idle connections (as many servers do): the next call must not fail."""

    def close_after_one(conn):
        read_request(conn)
        body = b'{"output": "ok"}'
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))  # keep-alive...
        time.sleep(0.05)  # ...then hang up while idle

    async def go(url):
        async with make_async_client() as client:
            outputs = []
            for i in range(3):
                reply = await call_agent(
                    target(url, retries=0), scenario=scenario(), run_id="k", sample_id=str(i), client=client
                )
                outputs.append(reply.output)
                await asyncio.sleep(0.2)
            return outputs

    with RawServer(close_after_one) as server:
        assert asyncio.run(go(server.url)) == ["ok", "ok", "ok"]
        assert server.connections == 3


def test_cookies_never_carry_over_between_samples(call, fake_agent):
    t = target(fake_agent.url)
    call(t, scenario=scenario(headers={"Set-Cookie": "session=abc; Path=/"}))
    call(t, scenario=scenario())
    assert "cookie" not in fake_agent.requests[-1]["headers"]


def test_cookies_ignored_on_a_shared_client(fake_agent):
    async def go():
        async with make_async_client() as client:
            for fake in ({"headers": {"Set-Cookie": "session=abc; Path=/"}}, {}):
                await call_agent(
                    target(fake_agent.url),
                    scenario=scenario(**fake),
                    run_id="c",
                    sample_id="1",
                    client=client,
                )

    asyncio.run(go())
    assert "cookie" not in fake_agent.requests[-1]["headers"]


def _serve_encoded(body: bytes, encoding: str, status: int = 200):
    def handler(conn):
        read_request(conn)
        head = (
            f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Encoding: {encoding}\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        ).encode()
        conn.sendall(head + body)

    return RawServer(handler)


def _gzip(data: bytes) -> bytes:
    import gzip

    return gzip.compress(data, compresslevel=9)


@pytest.mark.parametrize("encoding", ["gzip", "deflate-zlib", "deflate-raw"])
def test_compressed_replies_are_decoded(call, encoding):
    import zlib

    plain = json.dumps({"output": "squeezed " * 100}).encode()
    if encoding == "gzip":
        body, header = _gzip(plain), "gzip"
    elif encoding == "deflate-zlib":
        body, header = zlib.compress(plain), "deflate"
    else:
        z = zlib.compressobj(wbits=-zlib.MAX_WBITS)
        body, header = z.compress(plain) + z.flush(), "deflate"
    with _serve_encoded(body, header) as server:
        reply = call(target(server.url), scenario=scenario())
    assert reply.output == "squeezed " * 100


@functools.cache
def _bomb() -> bytes:
    import zlib

    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)  # gzip framing
    zeros = b"0" * 1_000_000
    parts = (
        [z.compress(b'{"output": "')]
        + [z.compress(zeros) for _ in range(100)]
        + [z.compress(b'"}'), z.flush()]
    )
    return b"".join(parts)


def test_gzip_bomb_is_cut_at_the_cap_after_decoding(call):
    bomb = _bomb()  # ~100 kB on the wire, 100 MB inflated
    assert len(bomb) < 200_000
    with _serve_encoded(bomb, "gzip") as server:
        started = time.monotonic()
        with pytest.raises(AgentCallError) as info:
            call(target(server.url, max_response_bytes=1_000_000), scenario=scenario())
    assert info.value.message == "the reply is larger than 1000000 bytes"
    assert time.monotonic() - started < 3


@pytest.mark.parametrize(
    ("body", "encoding", "message"),
    [
        (b"\x1f\x8b\x08\x00garbage-garbage", "gzip", "the reply's compressed body is corrupt"),
        (b"whatever", "br", "the reply uses an unsupported Content-Encoding: br"),
    ],
)
def test_bad_encodings_are_reply_errors(call, body, encoding, message):
    with _serve_encoded(body, encoding) as server, pytest.raises(AgentCallError) as info:
        call(target(server.url, retries=2), scenario=scenario())
    assert info.value.message == message and len(info.value.attempts) == 1


def test_compressed_error_body_shows_in_the_message(call):
    with (
        _serve_encoded(_gzip(b'{"error": "db down"}'), "gzip", status=400) as server,
        pytest.raises(AgentCallError) as info,
    ):
        call(target(server.url), scenario=scenario())
    assert info.value.message == 'the agent answered HTTP 400: {"error": "db down"}'


def test_503_retry_after_is_honoured(call, fake_agent, fake_sleep):
    reply = call(
        target(fake_agent.url),
        scenario=scenario(fail_times=1, fail_status=503, headers={"Retry-After": "2"}),
        sleep=fake_sleep,
    )
    assert fake_sleep.calls == [2.0] and [a.status_code for a in reply.attempts] == [503, 200]


def test_first_attempt_continues_the_numbering(fake_agent, fake_sleep):
    async def go():
        async with make_async_client() as client:
            return await call_agent(
                target(fake_agent.url, retries=1),
                scenario=scenario(fail_times=1),
                run_id="r",
                sample_id="requeued",
                client=client,
                sleep=fake_sleep,
                first_attempt=4,
            )

    reply = asyncio.run(go())
    assert [(a.number, a.status_code) for a in reply.attempts] == [(4, 500), (5, 200)]
    assert reply.request["attempt"] == 5
    assert [r["json"]["attempt"] for r in fake_agent.requests] == [4, 5]


def test_configured_headers_cannot_break_framing(call, fake_agent):
    t = target(
        fake_agent.url,
        headers={"Content-Length": "3", "Accept-Encoding": "br", "Connection": "close", "X-Api-Key": "k"},
    )
    assert call(t, scenario=scenario()).output
    seen = fake_agent.requests[-1]["headers"]
    assert seen["accept-encoding"] == "gzip, deflate" and seen["x-api-key"] == "k"
    assert seen["content-length"] != "3"


def test_undecodable_error_body_still_retries(call, fake_sleep):
    with _serve_encoded(b"\x00\x01binary", "br", status=503) as server, pytest.raises(AgentCallError) as info:
        call(target(server.url, retries=1), scenario=scenario(), sleep=fake_sleep)
    assert info.value.message.startswith("the agent answered HTTP 503 after 2 attempts")
