#!/usr/bin/env python3
"""A fake agent: a real asyncio HTTP/1.1 server on loopback (standard library only).

In tests::

    with FakeAgent(latency_ms=0) as agent:
        agent.url          # evalconsole endpoint, e.g. http://127.0.0.1:40123/agent
        agent.openai_url   # openai-chat base URL (POST {openai_url}/chat/completions)
        agent.stats(); agent.reset(); agent.requests   # counters and the last requests seen

From a shell (benchmarks)::

    python tests/support/fake_agent.py --port 8765 --latency-ms 200 --jitter-ms 0

Behaviour is chosen per request. Settings merge, later wins: the constructor/CLI ``defaults``, then the
JSON object in the request header ``X-Fake``, then ``scenario.metadata.fake`` of an evalconsole body
(openai-chat bodies may carry ``fake`` or ``metadata.fake`` at top level). Keys:

  delay_ms           answer after this many ms (default: latency_ms +/- jitter_ms)
  status             answer with this HTTP status (body {"error": ...})
  fail_times         answer ``fail_status`` (500) to the first N attempts of a sample id, then succeed
  status_429_times   answer 429 to the first N attempts of a sample id, with Retry-After ``retry_after``
  retry_after        Retry-After header value for 429 (number or text, e.g. an HTTP-date)
  hang               never answer (the handler waits until the client closes the connection)
  malformed          answer 200 with a body that is not JSON
  huge_bytes         answer 200 with a body of N bytes (valid JSON if it were read whole);
                     with ``chunked: true`` it is sent chunked, without Content-Length
  drop               close the connection without answering
  output             the reply's output text (default: derived from the input)
  outputs            a script: a list of output texts; the n-th reply to one scenario of one run (by
                     the body's run id and scenario name) is outputs[n % len], whatever order the
                     samples come in (e.g. ["ok", "ok", "ok", "bad", "bad"]: 3 of 5 say "ok")
  tool_calls         the toolCalls list to report (default: one lookup_order call when the input
                     mentions an order id like EC-1042, else [])
  omit_tool_calls    leave the toolCalls key out
  trace              the trace value to report (default: key left out)
  messages           the messages value to report (default: key left out)
  body               send this text verbatim as a 200 body (e.g. '{"result": 1}' for "missing output")
  headers            extra response headers {name: value}

Sample ids are the evalconsole body's ``sample`` (openai-chat: header ``X-Fake-Sample``, else the last
user message). GET /stats returns the counters as JSON; POST /stats/reset (or GET /reset) zeroes them.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import os
import random
import re
import signal
import sys
import threading
import time
from typing import Any

ORDER_ID = re.compile(r"\bEC-\d{3,}\b", re.IGNORECASE)
_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    408: "Request Timeout",
    413: "Payload Too Large",
    422: "Unprocessable Entity",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}
_HUGE_CHUNK = 64 * 1024


class Stats:
    def __init__(self) -> None:
        self.in_flight = 0  # gauges: they describe the present, so reset() keeps them
        self.open_connections = 0
        self.reset()

    def reset(self) -> None:
        self.requests = 0
        self.max_in_flight = self.in_flight
        self.connections = 0
        self.max_open_connections = self.open_connections
        self.statuses: collections.Counter[int] = collections.Counter()
        self.behaviours: collections.Counter[str] = collections.Counter()
        self.sample_attempts: dict[str, int] = {}
        self.huge_bytes_sent = 0
        self.dropped = 0
        self.hung = 0
        self.first_request_t: float | None = None
        self.last_reply_t: float | None = None

    def as_dict(self) -> dict[str, Any]:
        first, last = self.first_request_t, self.last_reply_t
        return {
            "requests": self.requests,
            "in_flight": self.in_flight,
            "max_in_flight": self.max_in_flight,
            "max_concurrency": self.max_in_flight,  # name used by ../shared/peers-bench
            "connections_total": self.connections,
            "open_connections": self.open_connections,
            "max_open_connections": self.max_open_connections,
            "statuses": {str(k): v for k, v in sorted(self.statuses.items())},
            "behaviours": dict(self.behaviours),
            "sample_attempts": dict(self.sample_attempts),
            "huge_bytes_sent": self.huge_bytes_sent,
            "dropped": self.dropped,
            "hung": self.hung,
            "first_request_t": first,
            "last_reply_t": last,
            "first_to_last_s": round(last - first, 4) if first is not None and last is not None else None,
        }


def _response(status: int, body: bytes, keep_alive: bool, headers: dict[str, str] | None = None) -> bytes:
    head = [
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
        f"Connection: {'keep-alive' if keep_alive else 'close'}",
    ]
    for k, v in (headers or {}).items():
        head.append(f"{k}: {v}")
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


def _json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _last_user_text(messages: Any) -> str:
    if isinstance(messages, list):
        for m in reversed(messages):
            if isinstance(m, dict) and m.get("role", "user") == "user":
                c = m.get("content")
                return c if isinstance(c, str) else json.dumps(c)
    return ""


def default_tool_calls(text: str) -> list[dict[str, Any]]:
    match = ORDER_ID.search(text or "")
    if not match:
        return []
    order = match.group(0).upper()
    return [
        {
            "name": "lookup_order",
            "status": "succeeded",
            "input": {"orderId": order},
            "output": {"found": True, "status": "in_transit"},
        }
    ]


def default_output(text: str) -> str:
    match = ORDER_ID.search(text or "")
    if match:
        return f"Order {match.group(0).upper()} was found and is in transit."
    return f"You said: {text[:200]}"


class FakeAgentServer:
    """The asyncio protocol handler; FakeAgent runs it in a thread, main() in the foreground."""

    def __init__(
        self,
        *,
        latency_ms: float = 0.0,
        jitter_ms: float = 0.0,
        defaults: dict[str, Any] | None = None,
        keep_requests: int = 200,
    ) -> None:
        self.latency_ms = latency_ms
        self.jitter_ms = jitter_ms
        self.defaults = dict(defaults or {})
        self.stats = Stats()
        self.requests: collections.deque[dict[str, Any]] = collections.deque(maxlen=keep_requests)
        self._scripted: collections.Counter[tuple[str, str]] = collections.Counter()
        self._tasks: set[asyncio.Task[Any]] = set()

    # ----------------------------------------------------------------- HTTP plumbing

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        st = self.stats
        st.connections += 1
        st.open_connections += 1
        st.max_open_connections = max(st.max_open_connections, st.open_connections)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                except asyncio.LimitOverrunError:
                    writer.write(_response(431, b'{"error":"headers too large"}', False))
                    return
                lines = head.decode("latin-1").split("\r\n")
                try:
                    method, target, version = lines[0].split(" ", 2)
                except ValueError:
                    writer.write(_response(400, b'{"error":"bad request line"}', False))
                    return
                headers: dict[str, str] = {}
                for line in lines[1:]:
                    if ":" in line:
                        k, v = line.split(":", 1)
                        headers[k.strip().lower()] = v.strip()
                if "chunked" in headers.get("transfer-encoding", "").lower():
                    body = await self._read_chunked(reader)
                else:
                    length = int(headers.get("content-length", "0") or 0)
                    body = await reader.readexactly(length) if length else b""
                conn = headers.get("connection", "").lower()
                keep_alive = conn != "close" and not (version == "HTTP/1.0" and conn != "keep-alive")
                path = target.split("?", 1)[0]
                kept = await self.route(method, path, keep_alive, writer)
                if kept is None:
                    kept = await self.answer(path, headers, body, keep_alive, reader, writer)
                if not kept:
                    return
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            return
        finally:
            st.open_connections -= 1
            if task is not None:
                self._tasks.discard(task)
            with contextlib.suppress(Exception):  # the peer may be gone already
                writer.close()

    @staticmethod
    async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
        out = bytearray()
        while True:
            size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
            if size == 0:
                await reader.readline()
                return bytes(out)
            out += await reader.readexactly(size)
            await reader.readline()

    async def _send(self, writer: asyncio.StreamWriter, data: bytes) -> None:
        writer.write(data)
        if writer.transport.get_write_buffer_size() > 256 * 1024:
            await writer.drain()

    async def _respond(
        self,
        writer: asyncio.StreamWriter,
        status: int,
        payload: bytes,
        keep_alive: bool,
        headers: dict[str, str] | None = None,
    ) -> bool:
        """Send one response; whether the connection stays open."""
        await self._send(writer, _response(status, payload, keep_alive, headers))
        return keep_alive

    async def route(
        self, method: str, path: str, keep_alive: bool, writer: asyncio.StreamWriter
    ) -> bool | None:
        """Answer the fake's own endpoints (stats, reset, health; 404 to any other non-POST).

        Returns whether the connection stays open, or None for a POST to the agent (see ``answer``).
        """
        if method == "GET" and path == "/stats":
            return await self._respond(writer, 200, _json(self.stats.as_dict()), keep_alive)
        if path in ("/reset", "/stats/reset"):
            self.stats.reset()
            self.requests.clear()
            return await self._respond(writer, 200, b'{"reset":true}', keep_alive)
        if method == "GET" and path in ("/health", "/"):
            return await self._respond(writer, 200, b'{"ok":true}', keep_alive)
        if method != "POST":
            return await self._respond(writer, 404, b'{"error":"not found"}', keep_alive)
        return None

    # ----------------------------------------------------------------- agent behaviour

    def _settings(self, headers: dict[str, str], data: Any, openai: bool) -> dict[str, Any]:
        fake = dict(self.defaults)
        if "x-fake" in headers:
            try:
                extra = json.loads(headers["x-fake"])
                if isinstance(extra, dict):
                    fake.update(extra)
            except ValueError:
                pass
        if isinstance(data, dict):
            if openai:
                meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
                for source in (meta.get("fake"), data.get("fake")):
                    if isinstance(source, dict):
                        fake.update(source)
            else:
                scenario = data.get("scenario") if isinstance(data.get("scenario"), dict) else {}
                meta = scenario.get("metadata") if isinstance(scenario.get("metadata"), dict) else {}
                if isinstance(meta.get("fake"), dict):
                    fake.update(meta["fake"])
        return fake

    def _delay_s(self, fake: dict[str, Any]) -> float:
        if "delay_ms" in fake:
            return max(0.0, float(fake["delay_ms"]) / 1000)
        ms = self.latency_ms
        if self.jitter_ms > 0:
            ms += random.uniform(-self.jitter_ms, self.jitter_ms)
        return max(0.0, ms / 1000)

    async def answer(
        self,
        path: str,
        headers: dict[str, str],
        body: bytes,
        keep_alive: bool,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> bool:
        st = self.stats
        now = time.monotonic()
        st.requests += 1
        st.in_flight += 1
        st.max_in_flight = max(st.max_in_flight, st.in_flight)
        if st.first_request_t is None:
            st.first_request_t = now
        openai = path.endswith("/chat/completions")
        try:
            data: Any = json.loads(body) if body else None
        except ValueError:
            data = None
        fake = self._settings(headers, data, openai)
        if openai:
            sample = headers.get("x-fake-sample") or _last_user_text((data or {}).get("messages"))
        else:
            sample = str(data.get("sample", "")) if isinstance(data, dict) else ""
        attempt = st.sample_attempts.get(sample, 0) + 1
        st.sample_attempts[sample] = attempt
        self.requests.append(
            {"path": path, "headers": headers, "json": data, "sample": sample, "attempt_seen": attempt}
        )
        status = 200
        try:
            delay = self._delay_s(fake)
            if fake.get("hang"):
                st.behaviours["hang"] += 1
                st.hung += 1
                st.in_flight -= 1  # a hung request is not "in flight" work for throughput figures
                try:
                    while await reader.read(65536):  # wait for the client to give up
                        pass
                finally:
                    st.in_flight += 1
                return False
            if delay > 0:
                await asyncio.sleep(delay)
            if fake.get("drop"):
                st.behaviours["drop"] += 1
                st.dropped += 1
                return False
            extra_headers = {str(k): str(v) for k, v in (fake.get("headers") or {}).items()}

            async def reply(code: int, payload: bytes) -> bool:
                nonlocal status
                status = code
                return await self._respond(writer, code, payload, keep_alive, extra_headers)

            if int(fake.get("status_429_times") or 0) >= attempt:
                st.behaviours["429"] += 1
                if fake.get("retry_after") is not None:
                    extra_headers["Retry-After"] = str(fake["retry_after"])
                return await reply(429, b'{"error":"slow down"}')
            if int(fake.get("fail_times") or 0) >= attempt:
                failing = int(fake.get("fail_status") or 500)
                st.behaviours["fail_times"] += 1
                return await reply(failing, _json({"error": f"failing attempt {attempt}"}))
            if fake.get("status") is not None and int(fake["status"]) != 200:
                told = int(fake["status"])
                st.behaviours["status"] += 1
                return await reply(told, _json({"error": f"told to answer {told}"}))
            if fake.get("malformed"):
                st.behaviours["malformed"] += 1
                return await reply(200, b'{"output": "half a reply')
            if fake.get("huge_bytes"):
                st.behaviours["huge"] += 1
                await self._send_huge(
                    writer, int(fake["huge_bytes"]), bool(fake.get("chunked")), extra_headers
                )
                return False
            if fake.get("body") is not None:
                raw = fake["body"]
                return await reply(200, raw.encode() if isinstance(raw, str) else _json(raw))
            document = self._openai_reply(data, fake) if openai else self._reply(data, fake)
            return await reply(200, _json(document))
        finally:
            st.in_flight -= 1
            st.statuses[status] += 1
            st.last_reply_t = time.monotonic()

    async def _send_huge(
        self, writer: asyncio.StreamWriter, size: int, chunked: bool, headers: dict[str, str]
    ) -> None:
        prefix, suffix = b'{"output":"', b'"}'
        filler = max(0, size - len(prefix) - len(suffix))
        head = ["HTTP/1.1 200 OK", "Content-Type: application/json", "Connection: close"]
        head.append(
            "Transfer-Encoding: chunked"
            if chunked
            else f"Content-Length: {filler + len(prefix) + len(suffix)}"
        )
        head += [f"{k}: {v}" for k, v in headers.items()]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))

        def frame(part: bytes) -> bytes:
            return b"%x\r\n%s\r\n" % (len(part), part) if chunked else part

        block = b"x" * _HUGE_CHUNK
        remaining = filler
        writer.write(frame(prefix))
        self.stats.huge_bytes_sent += len(prefix)
        while remaining > 0:
            part = block if remaining >= _HUGE_CHUNK else block[:remaining]
            writer.write(frame(part))
            await writer.drain()  # raises once the client has hung up
            self.stats.huge_bytes_sent += len(part)
            remaining -= len(part)
        writer.write(frame(suffix))
        if chunked:
            writer.write(b"0\r\n\r\n")
        await writer.drain()
        self.stats.huge_bytes_sent += len(suffix)

    def _reply(self, data: Any, fake: dict[str, Any]) -> dict[str, Any]:
        scenario = (
            data.get("scenario") if isinstance(data, dict) and isinstance(data.get("scenario"), dict) else {}
        )
        text = scenario.get("input") if isinstance(scenario.get("input"), str) else ""
        if not text:
            text = _last_user_text(scenario.get("messages"))
        reply: dict[str, Any] = {"output": fake["output"] if "output" in fake else default_output(text)}
        script = fake.get("outputs")
        if isinstance(script, list) and script:
            key = (str(data.get("run", "")), str(scenario.get("name", "")))
            reply["output"] = str(script[self._scripted[key] % len(script)])
            self._scripted[key] += 1
        if not fake.get("omit_tool_calls"):
            reply["toolCalls"] = fake["tool_calls"] if "tool_calls" in fake else default_tool_calls(text)
        if "trace" in fake:
            reply["trace"] = fake["trace"]
        if "messages" in fake:
            reply["messages"] = fake["messages"]
        return reply

    def _openai_reply(self, data: Any, fake: dict[str, Any]) -> dict[str, Any]:
        messages = data.get("messages") if isinstance(data, dict) else None
        text = _last_user_text(messages)
        message: dict[str, Any] = {
            "role": "assistant",
            "content": fake.get("output", text),
        }
        calls = fake["tool_calls"] if "tool_calls" in fake else default_tool_calls(text)
        if calls and not fake.get("omit_tool_calls"):
            message["tool_calls"] = [
                {
                    "id": f"call_{i}",
                    "type": "function",
                    "function": {
                        "name": c.get("name"),
                        "arguments": c["arguments"]
                        if isinstance(c.get("arguments"), str)
                        else json.dumps(c.get("input", {})),
                    },
                }
                if isinstance(c, dict)
                else c
                for i, c in enumerate(calls)
            ]
            if "output" not in fake:
                message["content"] = None
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 0,
            "model": (data or {}).get("model", "fake") if isinstance(data, dict) else "fake",
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": len(text.split()),
                "completion_tokens": 1,
                "total_tokens": len(text.split()) + 1,
            },
        }

    async def close_connections(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=2)


class FakeAgent:
    """Runs FakeAgentServer on 127.0.0.1 in a background thread (port 0 = any free port)."""

    def __init__(
        self,
        *,
        latency_ms: float = 0.0,
        jitter_ms: float = 0.0,
        host: str = "127.0.0.1",
        port: int = 0,
        keep_requests: int = 200,
        ssl_context: Any = None,
        **defaults: Any,
    ) -> None:
        self.server = FakeAgentServer(
            latency_ms=latency_ms, jitter_ms=jitter_ms, defaults=defaults, keep_requests=keep_requests
        )
        self.host = host
        self.port = port
        self.ssl_context = ssl_context  # an ssl.SSLContext makes it an HTTPS server
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.ssl_context else 'http'}://{host}:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.base_url}/agent"

    @property
    def openai_url(self) -> str:
        return f"{self.base_url}/v1"

    def start(self) -> FakeAgent:
        self._thread = threading.Thread(target=self._run, name=f"fake-agent-{id(self):x}", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        if self._error is not None:
            raise self._error
        return self

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._serve())
        except BaseException as exc:  # noqa: BLE001 - reported to start()
            self._error = exc
            self._ready.set()
        finally:
            loop.close()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        server = await asyncio.start_server(
            self.server.handle,
            self.host,
            self.port,
            backlog=4096,
            limit=1 << 20,
            reuse_address=True,
            ssl=self.ssl_context,
        )
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        async with server:
            await self._stop.wait()
            server.close()
            await self.server.close_connections()

    def _in_loop(self, fn: Any) -> Any:
        assert self._loop is not None

        async def call() -> Any:
            return fn()

        return asyncio.run_coroutine_threadsafe(call(), self._loop).result(10)

    def stats(self) -> dict[str, Any]:
        return self._in_loop(self.server.stats.as_dict)

    def reset(self) -> None:
        def do() -> None:
            self.server.stats.reset()
            self.server.requests.clear()

        self._in_loop(do)

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The last requests seen (path, lower-cased headers, parsed json, sample, attempt_seen)."""
        return self._in_loop(lambda: list(self.server.requests))

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None and self._thread and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
            self._thread.join(10)

    def __enter__(self) -> FakeAgent:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


async def _main_async(args: argparse.Namespace) -> None:
    srv = FakeAgentServer(latency_ms=args.latency_ms, jitter_ms=args.jitter_ms, keep_requests=0)
    server = await asyncio.start_server(
        srv.handle, args.host, args.port, backlog=4096, limit=1 << 20, reuse_address=True
    )
    host, port = server.sockets[0].getsockname()[:2]
    if args.pid_file:
        with open(args.pid_file, "w") as f:
            f.write(str(os.getpid()))
    print(f"LISTENING {host}:{port} latency_ms={args.latency_ms} jitter_ms={args.jitter_ms}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()
        server.close()
        await srv.close_connections()
    print(f"STOPPED {json.dumps(srv.stats.as_dict())}", flush=True)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=int(os.environ.get("FAKE_AGENT_PORT", "8765")))
    p.add_argument("--latency-ms", type=float, default=float(os.environ.get("FAKE_AGENT_LATENCY_MS", "200")))
    p.add_argument("--jitter-ms", type=float, default=float(os.environ.get("FAKE_AGENT_JITTER_MS", "0")))
    p.add_argument("--pid-file")
    args = p.parse_args(argv)
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        sys.exit("refusing to bind a non-loopback address")
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_main_async(args))


if __name__ == "__main__":
    main()
