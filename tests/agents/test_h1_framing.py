"""The ways an agent may frame its reply, byte by byte, read the same by the async client (agents.h1) and the
sync one (httpx): chunked bodies, bodies that end with the connection, informational replies, and replies
that break HTTP (a retryable "dropped" failure, never a crash)."""

from __future__ import annotations

import asyncio

import pytest

from agents.protocols import AgentCallError, AgentTarget, call_agent, make_async_client
from tests.agents.helpers import scenario
from tests.support.raw_server import RawServer, read_request

BODY = b'{"output": "framed", "toolCalls": []}'


def target(url: str, **kw) -> AgentTarget:
    return AgentTarget(protocol="evalconsole", endpoint_url=url, **kw)


def _serve(reply: bytes, *, close: bool = True):
    def handler(conn):
        read_request(conn)
        conn.sendall(reply)
        if not close:
            read_request(conn)

    return RawServer(handler)


def _chunked(body: bytes, size: int) -> bytes:
    parts = [body[i : i + size] for i in range(0, len(body), size)]
    return b"".join(b"%x;ext=1\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\nX-Trailer: t\r\n\r\n"


@pytest.mark.parametrize("size", [1, 7, 1000])
def test_a_chunked_reply_is_read_whole(call, size):
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    with _serve(head + _chunked(BODY, size)) as server:
        assert call(target(server.url), scenario=scenario()).output == "framed"


def test_a_reply_without_a_length_ends_with_the_connection(call):
    with _serve(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + BODY) as server:
        assert call(target(server.url), scenario=scenario()).output == "framed"


def test_informational_replies_before_the_answer_are_skipped(call):
    reply = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (
        len(BODY),
        BODY,
    )
    with _serve(reply) as server:
        assert call(target(server.url), scenario=scenario()).output == "framed"


@pytest.mark.parametrize(
    "reply",
    [
        b"SPDY/9 200 OK\r\nContent-Length: 2\r\n\r\n{}",  # not HTTP/1.x
        b"HTTP/1.1 200 OK\r\nContent-Length: 9999\r\n\r\n{}",  # the body ends early
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",  # a chunk size
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",  # two lengths
    ],
    ids=["status-line", "short-body", "chunk-size", "two-lengths"],
)
def test_a_reply_that_breaks_http_is_a_dropped_connection(call, fake_sleep, reply):
    with _serve(reply) as server, pytest.raises(AgentCallError) as info:
        call(target(server.url, retries=1), scenario=scenario(), sleep=fake_sleep)
    assert info.value.kind == "dropped" and len(info.value.attempts) == 2  # retried, as a dropped call is


def test_a_reply_closing_the_connection_is_not_kept():
    """``Connection: close`` and HTTP/1.0 replies: the next call opens a new connection and succeeds."""
    replies = iter(
        [
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(BODY), BODY),
            b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(BODY), BODY),
            b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(BODY), BODY),
        ]
    )

    def handler(conn):
        read_request(conn)
        conn.sendall(next(replies))

    async def go(url):
        async with make_async_client() as client:
            return [
                (
                    await call_agent(
                        target(url, retries=0),
                        scenario=scenario(),
                        run_id="r",
                        sample_id=str(i),
                        client=client,
                    )
                ).output
                for i in range(3)
            ]

    with RawServer(handler) as server:
        assert asyncio.run(go(server.url)) == ["framed"] * 3
        assert server.connections == 3
