"""Calling an agent over HTTP: the ``evalconsole`` and ``openai-chat`` protocols of DESIGN.md.

No Django imports: usable from a django-q2 worker, the ping button, the CLI and benchmarks.

    client = make_async_client()                    # share one per process/event loop
    reply = await call_agent(target, scenario=..., run_id="12", sample_id="345", client=client)
    # -> AgentReply, or raises AgentCallError (message, attempts, request, rate_limited)

Time limits. ``timeout_s`` bounds each attempt end to end (connect, send, every byte of the reply).
The whole call, backoff sleeps included, is bounded by ``total_timeout_s`` (default
``timeout_s * (retries + 1) + 2 s * retries``): a Retry-After or backoff that would not leave room
for another attempt ends the call instead of sleeping.

Retries (``retries`` extra attempts, exponential backoff with full jitter, or the agent's
Retry-After for 429/503, capped at RETRY_AFTER_CAP_S): connect errors, timeouts, dropped
connections, 429 and 5xx. Never retried: other statuses, replies that are not the protocol's shape,
oversize replies, URLs refused by the URL policy (agents.netpolicy).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import email.utils
import functools
import json
import math
import random
import ssl
import time
import uuid
import weakref
import zlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from agents import h1, netpolicy
from core.jsonvalue import json_type

__all__ = [
    "PROTOCOLS",
    "AgentCallError",
    "AgentReply",
    "AgentTarget",
    "Attempt",
    "PingResult",
    "build_request",
    "call_agent",
    "call_agent_sync",
    "endpoint_for",
    "make_async_client",
    "make_sync_client",
    "parse_reply",
    "ping",
    "ping_sync",
]

PROTOCOLS = ("evalconsole", "openai-chat")
WIRE_PROTOCOL = "evalconsole/1"
USER_AGENT = "evalconsole/1 (+agent-evaluation)"
RETRY_AFTER_CAP_S = 30.0
BACKOFF_BASE_S = 0.25
BACKOFF_CAP_S = 8.0
ERROR_BODY_SNIPPET = 300  # characters of a non-2xx body kept in the error message


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class AgentTarget:
    """Everything needed to call one agent; build it from the Agent row (headers decrypted)."""

    protocol: str
    endpoint_url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = 30.0
    retries: int = 2
    max_response_bytes: int = 5_000_000
    model: str = ""
    allow_private: bool = True
    total_timeout_s: float | None = None

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {', '.join(PROTOCOLS)}, not {self.protocol!r}")
        if not (
            isinstance(self.timeout_s, int | float) and self.timeout_s > 0 and math.isfinite(self.timeout_s)
        ):
            raise ValueError("timeout_s must be a positive number")
        if not isinstance(self.retries, int) or self.retries < 0:
            raise ValueError("retries must be an integer >= 0")
        if not isinstance(self.max_response_bytes, int) or self.max_response_bytes <= 0:
            raise ValueError("max_response_bytes must be a positive integer")
        if self.total_timeout_s is not None and not self.total_timeout_s > 0:
            raise ValueError("total_timeout_s must be positive")
        object.__setattr__(self, "headers", dict(self.headers or {}))

    @functools.cached_property
    def wire(self) -> tuple[str, str | None, dict[str, str]]:
        """(the URL called, what is wrong with its port or None, the request headers): the same for every
        call of this target, so worked out once (a drain's claim makes one target for all its samples)."""
        url = endpoint_for(self)
        return url, netpolicy.port_problem(url), _headers(self)

    @functools.cached_property
    def request_head(self) -> tuple[h1.Endpoint, bytes]:
        """(the endpoint, the request line and headers) of every async call of this target (agents.h1);
        raises what a URL or header that cannot be sent raises, on every call."""
        url, _, headers = self.wire
        ep = h1.endpoint(url)
        named_host = any(str(name).strip().lower() == "host" for name in headers)
        return ep, ep.request_line + (b"" if named_host else ep.host_line) + h1.request_head(headers)

    @property
    def budget_s(self) -> float:
        """Wall-clock limit of a whole call: every attempt's timeout plus room for the backoffs."""
        return self.total_timeout_s or self.timeout_s * (self.retries + 1) + 2.0 * self.retries

    def __repr__(self) -> str:  # headers are secrets: never in logs or tracebacks
        return (
            f"AgentTarget(protocol={self.protocol!r}, endpoint_url={self.endpoint_url!r}, "
            f"headers=<{len(self.headers)} hidden>, timeout_s={self.timeout_s}, retries={self.retries})"
        )


@dataclass
class Attempt:
    number: int
    status_code: int | None
    latency_ms: float
    error: str | None

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class AgentReply:
    output: str
    messages: list | None
    tool_calls: object  # raw toolCalls value; None when the key was missing (the engine validates)
    trace: object  # raw trace value; None when missing
    raw: dict
    attempts: list[Attempt]
    latency_ms: float  # of the successful attempt
    request: dict  # the JSON body sent (never the headers)

    def as_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["attempts"] = [a.as_dict() for a in self.attempts]
        return d


class AgentCallError(Exception):
    """The agent could not be called, or its reply is unusable. ``str(exc) == exc.message``.

    ``kind`` is one of: refused, invalid_url, connect, tls, timeout, dropped, http_status, not_json,
    bad_shape, too_large, transport.
    """

    def __init__(
        self,
        message: str,
        *,
        attempts: list[Attempt] | None = None,
        request: dict | None = None,
        rate_limited: bool = False,
        retry_after_s: float | None = None,
        kind: str = "transport",
        status_code: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.attempts = list(attempts or [])
        self.request = request if request is not None else {}
        self.rate_limited = rate_limited
        self.retry_after_s = retry_after_s
        self.kind = kind
        self.status_code = status_code


@dataclass
class PingResult:
    ok: bool
    status_code: int | None
    latency_ms: float
    output: str | None = None
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# --------------------------------------------------------------------------- clients


def make_async_client(
    *,
    allow_private: bool = True,
    max_connections: int = 100,
    resolver: netpolicy.Resolver | None = None,
    verify: Any = True,
) -> httpx.AsyncClient:
    """Shared httpx.AsyncClient with the URL policy enforced at connect time (see agents.netpolicy).

    One client per event loop; pass it to call_agent. A client may be used for targets whose
    allow_private is the same or more permissive; call_agent handles a stricter target itself.
    """
    return netpolicy.make_policy_async_client(
        allow_private=allow_private, max_connections=max_connections, resolver=resolver, verify=verify
    )


def make_sync_client(
    *,
    allow_private: bool = True,
    max_connections: int = 20,
    resolver: Callable[[str, int], Any] | None = None,
    verify: Any = True,
) -> httpx.Client:
    """Blocking twin of make_async_client, for call_agent_sync (thread-safe, share it)."""
    return netpolicy.make_policy_client(
        allow_private=allow_private, max_connections=max_connections, resolver=resolver, verify=verify
    )


def _client_fits(client: httpx.AsyncClient | httpx.Client, target: AgentTarget) -> bool:
    allows = netpolicy.client_allows_private(client)
    if allows is None:
        raise TypeError(
            "call_agent needs a client from agents.protocols.make_async_client/make_sync_client "
            "(they enforce the outbound URL policy)"
        )
    return target.allow_private or not allows


# --------------------------------------------------------------------------- requests


def endpoint_for(target: AgentTarget) -> str:
    if target.protocol == "openai-chat":
        base = target.endpoint_url.rstrip("/")
        return base if base.endswith("/chat/completions") else base + "/chat/completions"
    return target.endpoint_url


def _scenario_messages(scenario: Mapping[str, Any]) -> list:
    messages = scenario.get("messages")
    if isinstance(messages, list) and messages:
        return [dict(m) if isinstance(m, Mapping) else m for m in messages]
    text = scenario.get("input")
    return [{"role": "user", "content": text if isinstance(text, str) else ""}]


def _scenario_input(scenario: Mapping[str, Any], messages: list) -> str:
    text = scenario.get("input")
    if isinstance(text, str):
        return text
    for m in reversed(messages):
        if isinstance(m, Mapping) and m.get("role") == "user" and isinstance(m.get("content"), str):
            return m["content"]
    return ""


def build_request(
    target: AgentTarget, *, scenario: Mapping[str, Any], run_id: str, sample_id: str, attempt: int
) -> dict:
    """The JSON body for one attempt (the headers are added by the caller and never stored)."""
    messages = _scenario_messages(scenario)
    if target.protocol == "openai-chat":
        return {"model": target.model, "messages": messages}
    metadata = scenario.get("metadata")
    body = {
        "protocol": WIRE_PROTOCOL,
        "run": str(run_id),
        "sample": str(sample_id),
        "attempt": attempt,
        "scenario": {
            "name": str(scenario.get("name") or ""),
            "input": _scenario_input(scenario, messages),
            "messages": messages,
            "metadata": dict(metadata) if isinstance(metadata, Mapping) else {},
        },
    }
    if isinstance(scenario.get("world"), Mapping):  # a scene's sample: its world's tools (WORLDS.md)
        body["scenario"]["world"] = dict(scenario["world"])
    return body


# Framing and encoding are ours to decide: an agent's configured headers cannot override them.
_RESERVED_HEADERS = frozenset(
    (
        "content-length",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "upgrade",
        "te",
        "trailer",
        "accept-encoding",
        "content-type",
        "content-encoding",
        "expect",
        "proxy-authorization",
    )
)


def _headers(target: AgentTarget) -> dict[str, str]:
    # gzip/deflate only: _BodyReader decodes them within the size cap (no brotli/zstd surprises).
    headers = {"Accept": "application/json", "Accept-Encoding": "gzip, deflate", "User-Agent": USER_AGENT}
    for name, value in target.headers.items():
        if str(name).strip().lower() not in _RESERVED_HEADERS:
            headers[str(name)] = value
    headers["Content-Type"] = "application/json"
    return headers


# --------------------------------------------------------------------------- replies


class _ShapeError(Exception):
    def __init__(self, message: str, kind: str = "bad_shape") -> None:
        super().__init__(message)
        self.kind = kind


def _decode_json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        detail = str(exc)
        if not body.strip():
            detail = "the body is empty"
        raise _ShapeError(f"the reply is not valid JSON: {detail}", "not_json") from None


def _openai_tool_call(item: object) -> object:
    if not isinstance(item, Mapping):
        return item  # left for the engine to call malformed
    fn = item.get("function") if isinstance(item.get("function"), Mapping) else item
    arguments = fn.get("arguments")
    if isinstance(arguments, str):
        try:
            parsed: object = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            parsed = arguments
    else:
        parsed = arguments if arguments is not None else {}
    return {"name": fn.get("name"), "status": "requested", "input": parsed}


def _openai_content(content: object) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: keep the text ones
        parts = [
            p.get("text", "") for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str)
        ]
        return "".join(parts)
    raise _ShapeError(f"choices[0].message.content is {json_type(content)}, not a string")


def parse_reply(target: AgentTarget, data: object, request: dict) -> tuple[str, list | None, object, object]:
    """(output, messages, tool_calls, trace) from a decoded reply, or raise _ShapeError."""
    if not isinstance(data, dict):
        raise _ShapeError(f"the reply is {json_type(data)}, not a JSON object")
    if target.protocol == "openai-chat":
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices:
            raise _ShapeError(
                "the reply is missing 'choices'" if choices is None else "the reply has no choices"
            )
        message = choices[0].get("message") if isinstance(choices[0], Mapping) else None
        if not isinstance(message, Mapping):
            raise _ShapeError("the reply is missing 'choices[0].message'")
        output = _openai_content(message.get("content"))
        raw_calls = message.get("tool_calls")
        if raw_calls is None and isinstance(message.get("function_call"), Mapping):  # legacy functions API
            raw_calls = [message["function_call"]]
        # One completion reports all the calls it makes, so a missing or null key means "none".
        tool_calls: object = (
            [_openai_tool_call(c) for c in raw_calls]
            if isinstance(raw_calls, list)
            else []
            if raw_calls is None
            else raw_calls
        )
        transcript = list(request.get("messages", [])) + [dict(message)]
        return output, transcript, tool_calls, None
    if "output" not in data:
        raise _ShapeError("the reply is missing 'output'")
    output = data["output"]
    if not isinstance(output, str):
        raise _ShapeError(f"'output' is {json_type(output)}, not a string")
    messages = data.get("messages")
    return output, messages if isinstance(messages, list) else None, data.get("toolCalls"), data.get("trace")


# --------------------------------------------------------------------------- retry policy (shared)


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP-date), or None."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)


def _plural(n: int) -> str:
    return f"{n} attempt" if n == 1 else f"{n} attempts"


@dataclass
class _Failure:
    reason: str
    kind: str
    retryable: bool
    status_code: int | None = None
    retry_after_s: float | None = None


class _Call:
    """The protocol-independent state of one call: attempts, budget, retry decisions."""

    def __init__(
        self,
        target: AgentTarget,
        scenario: Mapping[str, Any],
        run_id: str,
        sample_id: str,
        first_attempt: int = 1,
    ):
        if not isinstance(first_attempt, int) or first_attempt < 1:
            raise ValueError("first_attempt must be an integer >= 1")
        self.first_attempt = first_attempt
        self.target = target
        self.scenario = scenario
        self.run_id = str(run_id)
        self.sample_id = str(sample_id)
        # httpx takes a port past 65535 and anyio then fails with an ExceptionGroup: say what is wrong.
        self.url, self.url_problem, self.headers = target.wire
        self.attempts: list[Attempt] = []
        self.request: dict = {}
        self.started = time.monotonic()
        self.deadline = self.started + target.budget_s

    def begin_attempt(self) -> tuple[float, float]:
        """(start time, time limit) of the next attempt; the budget starts with the first attempt."""
        now = time.monotonic()
        if not self.attempts:  # time spent queueing for a connection slot is not the agent's
            self.started, self.deadline = now, now + self.target.budget_s
        return now, min(self.target.timeout_s, max(0.001, self.deadline - now))

    def next_request(self) -> bytes:
        number = self.first_attempt + len(self.attempts)
        self.request = build_request(
            self.target, scenario=self.scenario, run_id=self.run_id, sample_id=self.sample_id, attempt=number
        )
        return json.dumps(self.request, ensure_ascii=False, separators=(",", ":")).encode()

    def record(self, status: int | None, started: float, error: str | None) -> float:
        latency = round((time.monotonic() - started) * 1000, 3)
        self.attempts.append(Attempt(self.first_attempt + len(self.attempts), status, latency, error))
        return latency

    def delay_before_retry(self, failure: _Failure) -> float | None:
        """The retry policy: seconds to sleep before the next attempt, or None to give up now.

        Only a retryable failure (connect error, timeout, dropped connection, 429, 5xx; see
        _status_failure and _exception_failure) is retried, at most ``retries`` times, after the
        agent's Retry-After (capped) or a jittered exponential backoff, and only while the budget
        leaves the next attempt some time.
        """
        if not failure.retryable or len(self.attempts) > self.target.retries:
            return None
        if failure.retry_after_s is not None:
            delay = min(failure.retry_after_s, RETRY_AFTER_CAP_S)
        else:
            n = len(self.attempts)
            delay = random.uniform(0, min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2 ** (n - 1)))
        remaining = self.deadline - time.monotonic()
        # Leave the next attempt at least a little time; otherwise stop now rather than sleep in vain.
        if delay + min(0.05, self.target.timeout_s) >= remaining:
            return None
        return delay

    def wait_or_raise(self, failure: _Failure) -> float:
        """Seconds to sleep before retrying after ``failure``. Raises its AgentCallError when the
        policy gives up."""
        delay = self.delay_before_retry(failure)
        if delay is None:
            raise self.error(failure)
        return delay

    def error(self, failure: _Failure) -> AgentCallError:
        n = len(self.attempts)
        if failure.kind == "http_status" and failure.status_code is not None:
            message = f"the agent answered HTTP {failure.status_code}"
            if failure.status_code == 429:
                message += " (rate limited)"
            message += f" after {_plural(n)}" if n > 1 else ""
            if failure.reason:
                message += f": {failure.reason}"
        else:
            message = failure.reason if n == 1 else f"{failure.reason} ({_plural(n)})"
        return AgentCallError(
            message,
            attempts=self.attempts,
            request=self.request,
            rate_limited=failure.status_code == 429,
            retry_after_s=failure.retry_after_s,
            kind=failure.kind,
            status_code=failure.status_code,
        )


def _snippet(body: bytes) -> str:
    text = body.decode("utf-8", "replace").strip()
    text = " ".join(text.split())
    return text[:ERROR_BODY_SNIPPET] + ("…" if len(text) > ERROR_BODY_SNIPPET else "")


def _status_failure(status: int, headers: Mapping[str, str], body: bytes) -> _Failure:
    retryable = status == 429 or status >= 500
    retry_after = parse_retry_after(headers.get("retry-after")) if status in (429, 503) else None
    reason = _snippet(body)
    if 300 <= status < 400:
        reason = f"redirects are not followed (Location: {headers.get('location', '?')})"
    return _Failure(reason, "http_status", retryable, status, retry_after)


def _exception_failure(exc: BaseException, limit: float, target: AgentTarget) -> _Failure:
    refused = _find_cause(exc, netpolicy.AddressRefused)
    if refused is not None:
        return _Failure(refused.reason, "refused", False)
    seconds = f"{round(limit, 3):g}"
    if "." not in seconds:
        seconds += ".0"
    if isinstance(exc, TimeoutError | httpx.ReadTimeout | httpx.WriteTimeout | httpx.PoolTimeout):
        if limit < target.timeout_s - 0.005:
            return _Failure(
                f"timed out after {seconds} s (the call's {target.budget_s:g} s budget ran out)",
                "timeout",
                True,
            )
        return _Failure(f"timed out after {seconds} s", "timeout", True)
    if isinstance(exc, httpx.ConnectTimeout):
        return _Failure(f"timed out connecting after {seconds} s", "timeout", True)
    if isinstance(exc, httpx.ConnectError):
        bad_cert = _find_cause(exc, ssl.SSLCertVerificationError)
        if bad_cert is not None:  # deterministic: retrying will not change the certificate
            return _Failure(
                f"the TLS certificate was rejected: {bad_cert.verify_message or bad_cert}", "tls", False
            )
        if _find_cause(exc, ConnectionRefusedError) is not None or "refused" in str(exc).lower():
            return _Failure("connection refused", "connect", True)
        return _Failure(f"could not connect: {exc}", "connect", True)
    if isinstance(exc, httpx.RemoteProtocolError):
        text = str(exc)
        if "disconnected without sending a response" in text or "without sending" in text:
            return _Failure("the agent closed the connection without answering", "dropped", True)
        return _Failure(f"the agent broke the HTTP protocol: {text}", "dropped", True)
    if isinstance(exc, httpx.ReadError | httpx.WriteError | httpx.CloseError):
        return _Failure(f"the connection failed: {exc or type(exc).__name__}", "dropped", True)
    if isinstance(exc, httpx.UnsupportedProtocol | httpx.InvalidURL):
        return _Failure(f"the endpoint URL is not usable: {exc}", "invalid_url", False)
    if isinstance(exc, UnicodeError | httpx.LocalProtocolError):
        return _Failure(
            f"the request could not be sent (check the agent's headers): {exc}", "transport", False
        )
    return _Failure(f"{type(exc).__name__}: {exc}", "transport", False)


def _find_cause(exc: BaseException | None, kind: type) -> Any:
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, kind):
            return exc
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


class _TooLarge(Exception):
    pass


ERROR_BODY_KEEP = 4096  # bytes of a non-2xx body read for the error message


class _BodyReader:
    """Accumulates a reply body, decoding gzip/deflate ourselves so the size cap applies to the
    decoded bytes without ever inflating more than the cap (a 200 kB gzip bomb can hold 200 MB).

    ``truncate``: stop quietly at the cap (error bodies) instead of raising _TooLarge.
    """

    def __init__(self, headers: Mapping[str, str], cap: int, *, truncate: bool = False) -> None:
        self.cap = cap
        self.truncate = truncate
        self.buf = bytearray()
        self.full = False
        codings = [c.strip().lower() for c in headers.get("content-encoding", "").split(",")]
        codings = [c for c in codings if c and c != "identity"]
        self._z: Any = None
        self._raw_deflate_ok = False
        if codings and (len(codings) > 1 or codings[0] not in ("gzip", "x-gzip", "deflate")):
            if not truncate:
                raise _ShapeError(
                    f"the reply uses an unsupported Content-Encoding: {headers['content-encoding']}"
                )
            codings = []  # an error body we cannot decode: its raw start is better than nothing
        if codings:
            self._z = zlib.decompressobj(zlib.MAX_WBITS | 32)  # gzip or zlib header, detected
            self._raw_deflate_ok = codings[0] == "deflate"
        elif not truncate:
            declared = headers.get("content-length", "").strip()
            if declared.isdigit() and int(declared) > cap:
                raise _TooLarge()

    def _add(self, data: bytes) -> None:
        room = self.cap - len(self.buf)
        if len(data) > room:
            if not self.truncate:
                raise _TooLarge()
            data, self.full = data[:room], True
        self.buf += data

    def feed(self, chunk: bytes) -> None:
        if self._z is None:
            self._add(chunk)
            return
        try:
            self._add(self._z.decompress(chunk, self.cap + 1 - len(self.buf)))
            while self._z.unconsumed_tail and not self.full:
                self._add(self._z.decompress(self._z.unconsumed_tail, self.cap + 1 - len(self.buf)))
        except zlib.error:
            if self._raw_deflate_ok and not self.buf:  # some servers send raw deflate without a header
                self._z, self._raw_deflate_ok = zlib.decompressobj(-zlib.MAX_WBITS), False
                self.feed(chunk)
                return
            if not self.truncate:
                raise _ShapeError("the reply's compressed body is corrupt") from None
            self.full = True

    def finish(self) -> bytes:
        if self._z is not None and not self.full:
            try:
                self._add(self._z.flush())
            except zlib.error:
                if not self.truncate:
                    raise _ShapeError("the reply's compressed body is corrupt") from None
        return bytes(self.buf)


# Parsing and validating an endpoint (httpx.URL: its host checked as an IP address, IDNA, quoting)
# was ~15 % of a worker's CPU when every call parsed the same string again: parse each URL once.
_parsed_url = functools.lru_cache(maxsize=1024)(httpx.URL)


# --------------------------------------------------------------------------- async


async def _attempt_async(client: httpx.AsyncClient, call: _Call, limit: float) -> _Received | Exception:
    """One attempt: what it received, or the exception it raised (as _attempt_sync)."""
    cap = call.target.max_response_bytes

    def reader_for(status: int, headers: Mapping[str, str]) -> _BodyReader:
        # Not a success: keep the start of the body for the error message, drop the rest.
        ok = 200 <= status < 300
        return _BodyReader(headers, cap if ok else ERROR_BODY_KEEP, truncate=not ok)

    try:
        body = call.next_request()
        if call.url_problem:
            raise httpx.InvalidURL(f"its {call.url_problem}")
        pool = netpolicy.agent_pool(client)
        assert pool is not None  # call_agent only runs on clients made by make_async_client
        ep, head = call.target.request_head
        # The agent calls' own HTTP/1.1 client (agents.h1) on the client's policy-checked connections:
        # httpx's layers and httpcore's h11/anyio plumbing were ~80 % of a worker's event loop per call.
        async with asyncio.timeout(limit):
            return await pool.post(
                ep, b"%sContent-Length: %d\r\n\r\n%s" % (head, len(body), body), reader_for, connect_s=limit
            )
    except Exception as exc:  # noqa: BLE001 - every transport failure becomes a recorded attempt
        return exc


async def call_agent(
    target: AgentTarget,
    *,
    scenario: Mapping[str, Any],
    run_id: str,
    sample_id: str,
    client: httpx.AsyncClient | None = None,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    first_attempt: int = 1,
) -> AgentReply:
    """Call the agent once for one sample (with retries). Raises AgentCallError.

    ``client`` should be a shared client from make_async_client; without one (or when it allows
    private addresses and the target does not) a one-off client is used and closed.
    ``first_attempt`` numbers the attempts (and the body's ``attempt``) when a sample is called again
    later, e.g. after a rate-limited requeue, so its attempt list keeps counting; ``retries`` still
    applies per call.
    """
    own = None
    if client is None or not _client_fits(client, target):
        own = client = make_async_client(allow_private=target.allow_private, max_connections=4)
    try:
        return await _call_async(client, _Call(target, scenario, run_id, sample_id, first_attempt), sleep)
    finally:
        if own is not None:
            await own.aclose()


class _Gate:
    """A first-come, first-served semaphore for one event loop whose every step is O(1): Python 3.12's
    asyncio.Semaphore scans all its waiters on each acquire, which with hundreds of calls waiting was
    the worker's largest single cost (bench/README.md "Worker CPU per sample")."""

    def __init__(self, value: int) -> None:
        self._free = value
        self._waiters: collections.deque[asyncio.Future] = collections.deque()

    async def __aenter__(self) -> None:
        if self._free > 0 and not self._waiters:
            self._free -= 1
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self._release()  # it was handed the slot as it was cancelled: pass the slot on
            else:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)
            raise

    async def __aexit__(self, *exc: object) -> None:
        self._release()

    def _release(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)  # the slot goes straight to the next waiter
                return
        self._free += 1


# One gate per shared client (and event loop): at most max_connections attempts hold a connection, so
# the others wait here, before their clock starts, instead of timing out inside the connection pool.
_GATES: weakref.WeakKeyDictionary[httpx.AsyncClient, tuple[asyncio.AbstractEventLoop, _Gate]] = (
    weakref.WeakKeyDictionary()
)


def _gate(client: httpx.AsyncClient) -> _Gate:
    loop = asyncio.get_running_loop()
    entry = _GATES.get(client)
    if entry is None or entry[0] is not loop:
        entry = (loop, _Gate(netpolicy.client_max_connections(client) or 100))
        _GATES[client] = entry
    return entry[1]


async def _call_async(
    client: httpx.AsyncClient, call: _Call, sleep: Callable[[float], Awaitable[Any]]
) -> AgentReply:
    gate = _gate(client)
    while True:
        async with gate:
            started, limit = call.begin_attempt()  # the attempt's clock starts once it holds the gate
            step = _settle(call, await _attempt_async(client, call, limit), started, limit)
        if isinstance(step, AgentReply):
            return step
        await sleep(step)


def _settle(call: _Call, received: _Received | Exception, started: float, limit: float) -> AgentReply | float:
    """What an attempt comes to, by the one retry policy of both loops (call_agent_sync and
    _call_async, which bring the transport, the sleep and, async, the gate): the reply, or the seconds
    to sleep before the next attempt. ``received`` is what the attempt received or the exception it
    raised. Raises AgentCallError when the policy gives up or the reply is unusable."""
    if isinstance(received, Exception):
        outcome = _failed(call, received, started, limit)
    else:
        outcome = _finish(call, *received, started)
    return outcome if isinstance(outcome, AgentReply) else call.wait_or_raise(outcome)


def _failed(call: _Call, exc: Exception, started: float, limit: float) -> _Failure:
    """Record an attempt that raised (for _settle): a body that is too large or malformed ends
    the call (raises AgentCallError); a transport failure is returned for the retry policy to judge."""
    if isinstance(exc, _TooLarge):
        reason = f"the reply is larger than {call.target.max_response_bytes} bytes"
        call.record(200, started, reason)
        raise call.error(_Failure(reason, "too_large", False)) from None
    if isinstance(exc, _ShapeError):
        call.record(200, started, str(exc))
        raise call.error(_Failure(str(exc), exc.kind, False)) from None
    failure = _exception_failure(exc, limit, call.target)
    call.record(None, started, failure.reason)
    return failure


_Received = tuple[int, Mapping[str, str], bytes]  # what an attempt received: status, headers, body


def _finish(
    call: _Call, status: int, headers: Mapping[str, str], body: bytes, started: float
) -> AgentReply | _Failure:
    if not 200 <= status < 300:
        failure = _status_failure(status, headers, body)
        call.record(status, started, f"HTTP {status}")
        return failure
    try:
        data = _decode_json(body)
        output, messages, tool_calls, trace = parse_reply(call.target, data, call.request)
    except _ShapeError as exc:
        call.record(status, started, str(exc))
        failure = _Failure(str(exc), exc.kind, False)
        raise call.error(failure) from None
    latency = call.record(status, started, None)
    return AgentReply(
        output=output,
        messages=messages,
        tool_calls=tool_calls,
        trace=trace,
        raw=data,
        attempts=call.attempts,
        latency_ms=latency,
        request=call.request,
    )


# --------------------------------------------------------------------------- sync


def _attempt_sync(client: httpx.Client, call: _Call, limit: float) -> _Received | Exception:
    """One attempt: what it received, or the exception it raised (returned for _settle to judge)."""
    try:
        body = call.next_request()
        if call.url_problem:
            raise httpx.InvalidURL(f"its {call.url_problem}")
        deadline = time.monotonic() + limit
        with client.stream(
            "POST", _parsed_url(call.url), content=body, headers=call.headers, timeout=httpx.Timeout(limit)
        ) as response:
            ok = response.is_success
            reader = _BodyReader(
                response.headers, call.target.max_response_bytes if ok else ERROR_BODY_KEEP, truncate=not ok
            )
            for chunk in response.iter_raw():
                if time.monotonic() > deadline:  # a trickling agent: httpx's timeout is per read
                    raise TimeoutError()
                reader.feed(chunk)
                if reader.full:
                    break
            return response.status_code, response.headers, reader.finish()
    except Exception as exc:  # noqa: BLE001 - every transport failure becomes a recorded attempt
        return exc


def call_agent_sync(
    target: AgentTarget,
    *,
    scenario: Mapping[str, Any],
    run_id: str,
    sample_id: str,
    client: httpx.Client | None = None,
    sleep: Callable[[float], Any] = time.sleep,
    first_attempt: int = 1,
) -> AgentReply:
    """Blocking call_agent (ping button, CLI, sync workers). Same rules, same errors."""
    own = None
    if client is None or not _client_fits(client, target):
        own = client = make_sync_client(allow_private=target.allow_private, max_connections=2)
    try:
        call = _Call(target, scenario, run_id, sample_id, first_attempt)
        while True:
            started, limit = call.begin_attempt()
            step = _settle(call, _attempt_sync(client, call, limit), started, limit)
            if isinstance(step, AgentReply):
                return step
            sleep(step)
    finally:
        if own is not None:
            own.close()


# --------------------------------------------------------------------------- ping

PING_SCENARIO: Mapping[str, Any] = {"name": "ping", "input": "ping", "metadata": {"ping": True}}


def _ping_target(target: AgentTarget) -> AgentTarget:
    return dataclasses.replace(target, retries=0, total_timeout_s=None)


def _ping_failed(exc: AgentCallError) -> PingResult:
    last = exc.attempts[-1] if exc.attempts else None
    return PingResult(
        ok=False,
        status_code=last.status_code if last else None,
        latency_ms=last.latency_ms if last else 0.0,
        error=exc.message,
    )


def _ping_ok(reply: AgentReply) -> PingResult:
    return PingResult(
        ok=True, status_code=reply.attempts[-1].status_code, latency_ms=reply.latency_ms, output=reply.output
    )


async def ping(target: AgentTarget, *, client: httpx.AsyncClient | None = None) -> PingResult:
    """One attempt with a "ping" scenario; agent faults are reported, never raised."""
    sample = f"ping-{uuid.uuid4().hex[:12]}"
    try:
        reply = await call_agent(
            _ping_target(target), scenario=PING_SCENARIO, run_id="ping", sample_id=sample, client=client
        )
    except AgentCallError as exc:
        return _ping_failed(exc)
    return _ping_ok(reply)


def ping_sync(target: AgentTarget, *, client: httpx.Client | None = None) -> PingResult:
    """Blocking ping (for a sync Django view)."""
    sample = f"ping-{uuid.uuid4().hex[:12]}"
    try:
        reply = call_agent_sync(
            _ping_target(target), scenario=PING_SCENARIO, run_id="ping", sample_id=sample, client=client
        )
    except AgentCallError as exc:
        return _ping_failed(exc)
    return _ping_ok(reply)
