"""The agent calls' own HTTP/1.1 client: one POST and its reply, on connections kept alive.

httpx with httpcore (h11 parsing, anyio streams and cancel scopes around every read and write) was
~80 % of a busy worker's event loop (bench/README.md "Worker CPU per sample"). This client sends a
request in one write and reads the reply straight from the bytes asyncio hands over. Only
``agents.protocols.call_agent`` uses it, through the pool of a client made by
``agents.netpolicy.make_policy_async_client``, and it keeps that client's guarantees:

- every connection is opened through the client's URL policy (``AsyncPolicyBackend.vetted``: the name
  is resolved once, every address vetted, the socket connected to a vetted IP); TLS uses the URL's host
  name for SNI and the certificate check, so DNS rebinding is impossible and HTTPS keeps working;
- no proxies, no redirects followed, no cookies kept: a request is exactly the caller's bytes;
- failures are raised as the httpx exceptions agents.protocols classifies (``ConnectError`` caused by
  the policy's ``AddressRefused``, ``ConnectTimeout``, ``RemoteProtocolError``, ``ReadError``), so the
  retry policy and the messages are the same as with httpx;
- time is bounded by the caller (one ``asyncio.timeout`` around the attempt; ``connect_s`` shares the
  connect time among a name's addresses), size by the reader the caller supplies (it raises when the
  decoded body passes the cap); a connection is kept only when its reply was read to the end.

Standard library and httpx's exception classes only; no Django.
"""

from __future__ import annotations

import asyncio
import functools
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

import httpcore
import httpx

__all__ = ["Endpoint", "H1Pool", "endpoint", "request_head", "share_connect_time"]

MAX_HEAD = 64 * 1024  # bytes of a reply's status line and headers
MAX_LINE = 4096  # bytes of a chunk-size line or a trailer line
_NO_BODY = frozenset((204, 304))


class Reader(Protocol):
    """Where a reply's body goes (agents.protocols._BodyReader): raises when it is too large."""

    full: bool

    def feed(self, chunk: bytes) -> None: ...

    def finish(self) -> bytes: ...


@dataclass(frozen=True)
class Endpoint:
    """A URL as this client needs it, parsed once (``endpoint(url)``)."""

    tls: bool
    host: str  # the host to resolve and connect to (IDNA; an IPv6 address without brackets)
    port: int
    key: tuple  # the keep-alive pool's key: (tls, host, port)
    request_line: bytes  # b"POST <target> HTTP/1.1\r\n"
    host_line: bytes  # b"Host: <netloc>\r\n" (unless the agent's headers name another Host)


@functools.lru_cache(maxsize=1024)
def endpoint(url: str) -> Endpoint:
    """Parse an agent's endpoint URL once. Raises httpx.UnsupportedProtocol / httpx.InvalidURL."""
    parsed = httpx.URL(url)
    scheme = parsed.scheme
    if scheme not in ("http", "https"):
        raise httpx.UnsupportedProtocol(f"Request URL has an unsupported protocol '{scheme}://'.")
    host = parsed.raw_host.decode("ascii")
    if not host:
        raise httpx.InvalidURL("the URL has no host")
    tls = scheme == "https"
    port = parsed.port or (443 if tls else 80)
    target = parsed.raw_path or b"/"
    return Endpoint(
        tls=tls,
        host=host.strip("[]"),
        port=port,
        key=(tls, host, port),
        request_line=b"POST " + target + b" HTTP/1.1\r\n",
        host_line=b"Host: " + parsed.netloc + b"\r\n",
    )


def _token(name: str) -> bool:
    return bool(name) and all(33 <= ord(c) < 127 and c not in '"(),/:;<=>?@[\\]{}' for c in name)


def request_head(headers: Mapping[str, str]) -> bytes:
    """The header lines of a request (all but the request line, the URL's Host and Content-Length).

    Names must be HTTP tokens and values must not break the framing (CR, LF, NUL): such a header is a
    LocalProtocolError naming the header, never its value (values are secrets). Values are ASCII, as
    httpx sends them (a UnicodeEncodeError otherwise)."""
    lines = []
    for name, value in headers.items():
        name, value = str(name), str(value).strip(" \t")
        if not _token(name):
            raise httpx.LocalProtocolError(f"Illegal header name {name[:40]!r}")
        if any(c in value for c in "\r\n\0"):
            raise httpx.LocalProtocolError(f"Illegal header value in header {name!r}")
        lines.append(name.encode("ascii") + b": " + value.encode("ascii") + b"\r\n")
    return b"".join(lines)


# --------------------------------------------------------------------------- a connection


class _Conn(asyncio.Protocol):
    """One TCP (or TLS) connection: bytes in a buffer, one waiter woken by data, EOF or loss."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.eof = False
        self.error: BaseException | None = None
        self.waiter: asyncio.Future | None = None
        self.idle_since = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buf += data
        self._wake()

    def eof_received(self) -> bool:
        self.eof = True
        self._wake()
        return False  # the transport closes itself

    def connection_lost(self, exc: BaseException | None) -> None:
        self.eof = True
        self.error = exc
        self._wake()

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def more(self) -> None:
        """Wait for more bytes (or the end of the stream)."""
        self.waiter = asyncio.get_running_loop().create_future()
        try:
            await self.waiter
        finally:
            self.waiter = None

    def reusable(self) -> bool:
        return (
            not self.eof and not self.buf and self.transport is not None and not self.transport.is_closing()
        )

    def close(self) -> None:
        if self.transport is not None:
            self.transport.abort()  # unread bytes or a broken exchange: nothing to say goodbye with

    # ----------------------------------------------------------------- reading a reply

    def _lost(self, what: str) -> Exception:
        if isinstance(self.error, OSError) and not isinstance(self.error, ConnectionResetError):
            return httpx.ReadError(str(self.error) or type(self.error).__name__)
        return httpx.RemoteProtocolError(f"peer closed connection without sending complete {what}")

    async def head(self) -> tuple[int, bool, dict[str, str]]:
        """(status, HTTP/1.1?, headers) of the next reply that is not informational (1xx)."""
        first = True
        while True:
            scanned = 0
            end = self.buf.find(b"\r\n\r\n")
            while end < 0:
                if len(self.buf) > MAX_HEAD:
                    raise httpx.RemoteProtocolError("the reply's headers are too large")
                if self.eof:
                    if first and not self.buf:
                        raise httpx.RemoteProtocolError("Server disconnected without sending a response.")
                    raise self._lost("message head")
                scanned = max(0, len(self.buf) - 3)
                await self.more()
                end = self.buf.find(b"\r\n\r\n", scanned)
            head = bytes(self.buf[:end])
            del self.buf[: end + 4]
            first = False
            status, http11, headers = _parse_head(head)
            if status >= 200:
                return status, http11, headers
            if status == 101:
                raise httpx.RemoteProtocolError("the agent switched protocols")

    async def exactly(self, n: int, reader: Reader) -> None:
        while n:
            if self.buf:
                if len(self.buf) <= n:
                    chunk = bytes(self.buf)
                    self.buf.clear()
                else:
                    chunk = bytes(self.buf[:n])
                    del self.buf[:n]
                n -= len(chunk)
                reader.feed(chunk)
                if reader.full:
                    return
                continue
            if self.eof:
                raise self._lost("message body")
            await self.more()

    async def line(self) -> bytes:
        end = self.buf.find(b"\r\n")
        while end < 0:
            if len(self.buf) > MAX_LINE:
                raise httpx.RemoteProtocolError("a chunk header of the reply is too long")
            if self.eof:
                raise self._lost("message body")
            await self.more()
            end = self.buf.find(b"\r\n")
        line = bytes(self.buf[:end])
        del self.buf[: end + 2]
        return line

    async def chunked(self, reader: Reader) -> None:
        while True:
            size_text = (await self.line()).split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise httpx.RemoteProtocolError("the reply's chunk size is not a number") from None
            if size < 0 or size_text.startswith((b"-", b"+", b"0x", b"0X")):
                raise httpx.RemoteProtocolError("the reply's chunk size is not a number")
            if size == 0:
                while await self.line():  # trailers, then the empty line
                    pass
                return
            await self.exactly(size, reader)
            if reader.full:
                return
            if await self.line():
                raise httpx.RemoteProtocolError("a chunk of the reply does not end where its size says")

    async def until_close(self, reader: Reader) -> None:
        while True:
            if self.buf:
                chunk = bytes(self.buf)
                self.buf.clear()
                reader.feed(chunk)
                if reader.full:
                    return
            if self.eof:
                if isinstance(self.error, OSError) and not isinstance(self.error, ConnectionResetError):
                    raise httpx.ReadError(str(self.error))
                return
            await self.more()


def _parse_head(head: bytes) -> tuple[int, bool, dict[str, str]]:
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ", 2)
    if (
        len(parts) < 2
        or parts[0] not in (b"HTTP/1.1", b"HTTP/1.0")
        or len(parts[1]) != 3
        or not parts[1].isdigit()
    ):
        raise httpx.RemoteProtocolError(f"malformed status line {lines[0][:60]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(b":")
        if not sep or not name or name[-1:] in (b" ", b"\t") or line[:1] in (b" ", b"\t"):
            raise httpx.RemoteProtocolError(f"malformed header line {line[:60]!r}")
        key = name.decode("latin-1").lower()
        text = value.strip(b" \t").decode("latin-1")
        headers[key] = f"{headers[key]}, {text}" if key in headers else text
    return int(parts[1]), parts[0] == b"HTTP/1.1", headers


def _content_length(headers: dict[str, str]) -> int | None:
    declared = headers.get("content-length")
    if declared is None:
        return None
    values = {v.strip() for v in declared.split(",")}
    if len(values) != 1 or not next(iter(values)).isdigit():
        raise httpx.RemoteProtocolError(f"the reply's Content-Length is not valid: {declared[:40]!r}")
    return int(values.pop())


async def _exchange(
    conn: _Conn, data: bytes, reader_for: Callable[[int, dict[str, str]], Reader]
) -> tuple[int, dict[str, str], bytes, bool]:
    """Send one request; (status, headers, body, whether the connection may be used again)."""
    assert conn.transport is not None
    conn.transport.write(data)
    status, http11, headers = await conn.head()
    reader = reader_for(status, headers)
    keep = http11 and "close" not in headers.get("connection", "").lower()
    if status in _NO_BODY:
        pass
    elif "transfer-encoding" in headers:
        codings = [c.strip().lower() for c in headers["transfer-encoding"].split(",")]
        if codings[-1:] != ["chunked"] or len(codings) > 1:
            raise httpx.RemoteProtocolError(
                f"the reply uses an unsupported Transfer-Encoding: {headers['transfer-encoding'][:40]}"
            )
        await conn.chunked(reader)
    elif (length := _content_length(headers)) is not None:
        await conn.exactly(length, reader)
    else:
        await conn.until_close(reader)
        keep = False
    body = reader.finish()
    return status, headers, body, keep and not reader.full


# --------------------------------------------------------------------------- the pool


class _Policy(Protocol):
    async def vetted(self, host: str, port: int, timeout: float | None) -> list[str]: ...


def share_connect_time(left: float | None, *, last_one: bool) -> float | None:
    """Connect timeout for one candidate address: the rest for the last, half of it otherwise (so an
    unreachable IPv6 address cannot eat the whole budget before IPv4 gets a turn)."""
    if left is None or last_one:
        return left
    return left / 2


class H1Pool:
    """Keep-alive connections per origin (LIFO; at most ``max_idle`` idle ones, oldest closed first;
    none kept longer than ``keepalive_expiry`` seconds). How many requests run at once is the caller's
    to bound (agents.protocols gates them per client). One pool per event loop."""

    def __init__(
        self,
        *,
        policy: _Policy,
        ssl_context: ssl.SSLContext | None,
        max_idle: int,
        keepalive_expiry: float = 30.0,
    ) -> None:
        self._policy = policy
        self._ssl_context = ssl_context
        self._max_idle = max_idle
        self._expiry = keepalive_expiry
        self._idle: dict[tuple, list[_Conn]] = {}
        self._lru: dict[_Conn, tuple] = {}  # idle connections, oldest first
        self._open: set[_Conn] = set()
        self._closed = False

    @property
    def open_connections(self) -> int:
        return len(self._open)

    def _take(self, key: tuple, now: float) -> _Conn | None:
        stack = self._idle.get(key)
        while stack:
            conn = stack.pop()
            del self._lru[conn]
            if conn.reusable() and now - conn.idle_since < self._expiry:
                return conn
            self._drop(conn)
        return None

    def _drop(self, conn: _Conn) -> None:
        self._open.discard(conn)
        conn.close()

    def _put(self, key: tuple, conn: _Conn, now: float) -> None:
        if self._closed or not conn.reusable():
            self._drop(conn)
            return
        conn.idle_since = now
        self._idle.setdefault(key, []).append(conn)
        self._lru[conn] = key
        while len(self._lru) > self._max_idle:
            oldest, oldest_key = next(iter(self._lru.items()))
            del self._lru[oldest]
            self._idle[oldest_key].remove(oldest)
            self._drop(oldest)

    async def _connect(self, ep: Endpoint, timeout: float | None) -> _Conn:
        loop = asyncio.get_running_loop()
        start = loop.time()
        try:
            addresses = await self._policy.vetted(ep.host, ep.port, timeout)
        except httpcore.ConnectTimeout as exc:
            raise httpx.ConnectTimeout(str(exc)) from exc
        except httpcore.ConnectError as exc:  # the policy's AddressRefused, or no address
            raise httpx.ConnectError(str(exc)) from exc
        last: Exception | None = None
        for i, address in enumerate(addresses):
            left = None if timeout is None else max(0.0, timeout - (loop.time() - start))
            try:
                async with asyncio.timeout(share_connect_time(left, last_one=i == len(addresses) - 1)):
                    _, conn = await loop.create_connection(
                        _Conn,
                        host=address,
                        port=ep.port,
                        ssl=self._ssl_context if ep.tls else None,
                        server_hostname=ep.host if ep.tls else None,
                    )
            except TimeoutError as exc:
                last = httpx.ConnectTimeout(f"timed out connecting to {ep.host}")
                last.__cause__ = exc
            except OSError as exc:  # refused, unreachable, a TLS failure (its certificate check too)
                last = httpx.ConnectError(str(exc) or type(exc).__name__)
                last.__cause__ = exc
            else:
                self._open.add(conn)
                return conn
        assert last is not None
        raise last

    async def post(
        self,
        ep: Endpoint,
        data: bytes,
        reader_for: Callable[[int, dict[str, str]], Reader],
        *,
        connect_s: float | None = None,
    ) -> tuple[int, dict[str, str], bytes]:
        """Send ``data`` (a whole request) to ``ep``: (status, headers, body read by reader_for's reader)."""
        if self._closed:
            raise RuntimeError("the connection pool is closed")
        loop = asyncio.get_running_loop()
        conn = self._take(ep.key, loop.time())
        if conn is None:
            conn = await self._connect(ep, connect_s)
        keep = False
        try:
            status, headers, body, keep = await _exchange(conn, data, reader_for)
        finally:
            if keep:
                self._put(ep.key, conn, loop.time())
            else:
                self._drop(conn)
        return status, headers, body

    def close(self) -> None:
        self._closed = True
        for conn in list(self._open):
            conn.close()
        self._open.clear()
        self._idle.clear()
        self._lru.clear()
