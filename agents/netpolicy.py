"""Outbound URL policy for calls to URLs that members type (agent endpoints).

The guarantee is made at connect time, on the resolved address: our httpcore network backend
resolves the hostname itself, checks every candidate address, and connects to the vetted IP.
httpcore then does TLS on that socket with the original hostname (``start_tls(server_hostname=
origin host)``), and the Host header comes from the URL, so HTTPS and virtual hosts keep working
while DNS rebinding between check and connect is impossible (we never resolve twice).

- always refused: link-local (169.254.0.0/16, fe80::/10; this covers 169.254.169.254, the AWS/GCP/
  Azure/OCI metadata address), other cloud metadata addresses (fd00:ec2::254, 100.100.100.200),
  and addresses that are not unicast (multicast, broadcast, reserved);
- refused only when ``allow_private=False``: loopback, unspecified, RFC 1918, CGNAT (100.64/10),
  unique-local (fc00::/7) and the other special-purpose ranges Python calls private;
- IPv4 embedded in IPv6 (``::ffff:a.b.c.d``, NAT64 ``64:ff9b::/96``, 6to4) is judged as the IPv4.

``check_url_syntax`` applies the same rules when a URL is saved, to what can be judged without DNS (IP
literals, ``localhost``, ports, credentials); a host name's addresses are judged when connecting, as they
may differ between the web server and the workers, and change. Standard library, httpx and httpcore; no
Django.
"""

from __future__ import annotations

import contextlib
import functools
import http.cookiejar
import inspect
import ipaddress
import socket
import ssl
import typing
import weakref
from collections.abc import Awaitable, Callable, Iterable, Sequence
from urllib.parse import urlsplit

import anyio
import httpcore
import httpx

from agents.h1 import H1Pool
from agents.h1 import share_connect_time as _share

__all__ = [
    "AddressRefused",
    "AsyncPolicyBackend",
    "PolicyBackend",
    "Resolver",
    "check_address",
    "agent_pool",
    "check_url_syntax",
    "client_allows_private",
    "make_policy_async_client",
    "make_policy_client",
    "port_problem",
    "redact_url",
    "system_resolve",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# (host, port) -> addresses (strings); may be async. Injectable so tests can map names to addresses.
Resolver = Callable[[str, int], Sequence[str] | Awaitable[Sequence[str]]]

_METADATA = {
    ipaddress.ip_address("169.254.169.254"): "cloud metadata",  # AWS, GCP, Azure, OCI, DigitalOcean
    ipaddress.ip_address("fd00:ec2::254"): "cloud metadata",  # AWS IMDS over IPv6
    ipaddress.ip_address("100.100.100.200"): "cloud metadata",  # Alibaba Cloud
    ipaddress.ip_address("192.0.0.192"): "cloud metadata",  # Oracle Cloud (legacy)
}
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_CGNAT = ipaddress.ip_network("100.64.0.0/10")


class AddressRefused(httpcore.ConnectError):
    """The URL policy refused to connect. ``reason`` is a human sentence starting with "refused:".

    Subclasses httpcore.ConnectError so generic httpx users see an ``httpx.ConnectError`` whose
    ``__cause__`` is this exception; ``agents.protocols`` looks for it and never retries it.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _embedded_ipv4(ip: IPAddress) -> ipaddress.IPv4Address | None:
    if isinstance(ip, ipaddress.IPv4Address):
        return None
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def _parse_ip(text: str) -> IPAddress | None:
    text = text.strip("[]")
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def check_address(address: str | IPAddress, *, allow_private: bool = True) -> str | None:
    """Return why connecting to this IP address is refused, or None when it is allowed.

    The reason reads "refused: 169.254.169.254 is a link-local address (cloud metadata)".
    A string that is not an IP address is refused (resolve first).
    """
    ip = address if not isinstance(address, str) else _parse_ip(address)
    if ip is None:
        return f"refused: {address!r} is not an IP address"
    shown = str(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.scope_id:
        ip = ipaddress.IPv6Address(str(ip).split("%", 1)[0])
    inner = _embedded_ipv4(ip)
    if inner is not None:
        why = check_address(inner, allow_private=allow_private)
        return None if why is None else why.replace(f"refused: {inner} ", f"refused: {shown} (= {inner}) ", 1)
    label = _METADATA.get(ip)
    if ip.is_link_local:
        suffix = f" ({label})" if label else ""
        return f"refused: {shown} is a link-local address{suffix}"
    if label:
        return f"refused: {shown} is a {label} address"
    if ip.is_multicast:
        return f"refused: {shown} is a multicast address"
    if isinstance(ip, ipaddress.IPv4Address) and ip == ipaddress.IPv4Address("255.255.255.255"):
        return f"refused: {shown} is a broadcast address"
    if ip.is_loopback:
        kind = "a loopback"
    elif ip.is_unspecified:
        kind = "an unspecified"
    elif ip.is_reserved:
        return f"refused: {shown} is a reserved address"
    elif isinstance(ip, ipaddress.IPv4Address) and ip in _CGNAT:
        kind = "a shared (CGNAT)"
    elif ip.is_private or getattr(ip, "is_site_local", False):
        kind = "a private"
    else:
        return None
    if allow_private:
        return None
    return f"refused: {shown} is {kind} address and this agent may not call private addresses"


def port_problem(url: str) -> str | None:
    """What is wrong with the URL's port ("port must be between 1 and 65535, not 99999"), or None.

    httpx accepts ports past 65535 and anyio then fails obscurely (an ExceptionGroup), so callers
    check first.
    """
    try:
        hostinfo = urlsplit(url).netloc.rpartition("@")[2]
    except ValueError:  # not a URL at all: httpx says why
        return None
    if hostinfo.startswith("["):
        rest = hostinfo.partition("]")[2]
        text = rest[1:] if rest.startswith(":") else ""
    else:
        text = hostinfo.partition(":")[2]
    if not text:
        return None
    if not (text.isascii() and text.isdigit()):
        return f"port must be a number, not {text[:20]!r}"
    if len(text) > 5 or not 1 <= int(text) <= 65535:
        shown = text if len(text) <= 20 else text[:20] + "…"
        return f"port must be between 1 and 65535, not {shown}"
    return None


def _numeric_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """The address of the short and numeric IPv4 forms resolvers accept (``127.1``, ``2130706433``,
    ``0xa9fea9fe``); None for anything else. Never uses DNS."""
    if not host or not all(c in "0123456789abcdefxABCDEFX." for c in host):
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        return None


def check_url_syntax(url: str, *, allow_private: bool = True) -> str | None:
    """Save-time check of an endpoint URL: return a message, or None when it looks usable.

    The connect-time check stays the guarantee (it judges every address a name resolves to); this
    one refuses at once what is bound to fail there or must not be stored: other schemes, a port
    out of range, a user name or password (a secret, shown back wherever the URL is), and an IP
    literal or ``localhost`` that the policy refuses.
    """
    if not isinstance(url, str) or not url.strip():
        return "Enter a URL."
    if url != url.strip() or any(c.isspace() for c in url):
        return "The URL must not contain spaces."
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        return f"The URL is not valid: {str(exc).rstrip('.')}."
    if parts.scheme.lower() not in ("http", "https"):
        return "The URL must start with http:// or https://."
    if "@" in parts.netloc:
        return (
            "The URL must not contain a user name or password (credentials): put them in the agent's "
            "headers instead, e.g. “Authorization: Basic …” or “Authorization: Bearer …”."
        )
    problem = port_problem(url)
    if problem:
        return f"The URL's {problem}."
    if not parts.hostname:
        return "The URL must include a host name."
    try:
        httpx.URL(url)
    except (httpx.InvalidURL, ValueError) as exc:
        return f"The URL is not valid: {str(exc).rstrip('.')}."
    host = parts.hostname
    if _parse_ip(host) is not None:
        why = check_address(host, allow_private=allow_private)
    elif (numeric := _numeric_ipv4(host)) is not None:
        why = check_address(numeric, allow_private=allow_private)
        if why is not None:
            why = why.replace(f"refused: {numeric} ", f"refused: {host} (= {numeric}) ", 1)
    elif not allow_private and (host == "localhost" or host.endswith(".localhost")):
        why = f"refused: {host} is a loopback address and this agent may not call private addresses"
    else:
        why = None
    if why is not None:
        return why[0].upper() + why[1:] + "."
    return None


def redact_url(url: str) -> str:
    """The URL with any user name and password replaced by ``***`` (for URLs stored before they were
    refused on save; they are never shown)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url.rpartition("@")[2] if "@" in url else url
    if "@" not in parts.netloc:
        return url
    return parts._replace(netloc="***@" + parts.netloc.rpartition("@")[2]).geturl()


def system_resolve(host: str, port: int) -> list[str]:
    """Resolve with the system resolver (blocking): every TCP address, in the resolver's order."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return _unique(str(info[4][0]) for info in infos)


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _vet(host: str, addresses: Sequence[str], allow_private: bool) -> list[str]:
    """Return the addresses to try, or raise AddressRefused when any candidate is refused.

    Refusing the whole name when one candidate is bad is deliberate: a name that resolves to both a
    public address and the metadata address is an attack, not a fallback.
    """
    if not addresses:
        raise httpcore.ConnectError(f"could not resolve {host}: no addresses")
    literal = _parse_ip(host) is not None
    for address in addresses:
        why = check_address(address, allow_private=allow_private)
        if why is not None:
            if not literal:
                why = why.replace(
                    f"refused: {address} is", f"refused: {host} resolves to {address}, which is", 1
                )
                why = why.replace(f"refused: {address} (=", f"refused: {host} resolves to {address} (=", 1)
            raise AddressRefused(why)
    return [a.strip("[]") for a in addresses]


class _CoalescingStream(httpcore.AsyncNetworkStream):
    """Holds writes until the next read, so a request's head and body leave in one send() (httpcore
    writes them separately; with TCP_NODELAY that is two syscalls and two packets per call)."""

    def __init__(self, inner: httpcore.AsyncNetworkStream) -> None:
        self._inner = inner
        self._pending: list[bytes] = []
        self._pending_size = 0

    async def _flush(self, timeout: float | None) -> None:
        if self._pending:
            data = b"".join(self._pending)
            self._pending.clear()
            self._pending_size = 0
            await self._inner.write(data, timeout=timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        self._pending.append(buffer)
        self._pending_size += len(buffer)
        if self._pending_size >= 65536:  # large uploads stream through as usual
            await self._flush(timeout)

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        await self._flush(timeout)
        return await self._inner.read(max_bytes, timeout=timeout)

    async def aclose(self) -> None:
        self._pending.clear()
        await self._inner.aclose()

    async def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.AsyncNetworkStream:
        await self._flush(timeout)
        return _CoalescingStream(
            await self._inner.start_tls(ssl_context, server_hostname=server_hostname, timeout=timeout)
        )

    def get_extra_info(self, info: str) -> typing.Any:
        return self._inner.get_extra_info(info)


class AsyncPolicyBackend(httpcore.AsyncNetworkBackend):
    """httpcore network backend: resolve, vet every address, connect to a vetted IP.

    DNS resolution counts against the connect timeout. TLS is started later by httpcore on the
    returned stream with ``server_hostname`` = the URL's host, so certificates are checked against
    the name, not the IP.
    """

    def __init__(
        self,
        *,
        allow_private: bool = True,
        resolver: Resolver | None = None,
        inner: httpcore.AsyncNetworkBackend | None = None,
        coalesce_writes: bool = True,
    ) -> None:
        self.allow_private = allow_private
        self.coalesce_writes = coalesce_writes
        self._resolver = resolver
        self._inner = inner or httpcore.AnyIOBackend()

    async def _resolve(self, host: str, port: int) -> list[str]:
        if _parse_ip(host) is not None:
            return [host.strip("[]")]
        try:
            if self._resolver is None:
                infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
                return _unique(str(info[4][0]) for info in infos)
            result = self._resolver(host, port)
            if inspect.isawaitable(result):
                result = await result
            return _unique(str(a) for a in typing.cast(Sequence[str], result))
        except (OSError, UnicodeError) as exc:
            raise httpcore.ConnectError(f"could not resolve {host}: {exc}") from exc

    async def vetted(self, host: str, port: int, timeout: float | None) -> list[str]:
        """The addresses ``host`` resolves to, every one allowed by the policy, to connect to in order.

        Raises AddressRefused (a name with any refused address is refused whole), httpcore.ConnectError
        (no address) or httpcore.ConnectTimeout (resolving took longer than ``timeout``)."""
        try:
            with anyio.fail_after(timeout):
                addresses = await self._resolve(host, port)
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(f"timed out resolving {host}") from exc
        return _vet(host, addresses, self.allow_private)

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        start = anyio.current_time()
        candidates = await self.vetted(host, port, timeout)
        last: Exception | None = None
        for i, address in enumerate(candidates):
            left = None if timeout is None else max(0.0, timeout - (anyio.current_time() - start))
            try:
                stream = await self._inner.connect_tcp(
                    address,
                    port,
                    timeout=_share(left, last_one=i == len(candidates) - 1),
                    local_address=local_address,
                    socket_options=socket_options,
                )
                return _CoalescingStream(stream) if self.coalesce_writes else stream
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:  # next vetted address, if any
                last = exc
        assert last is not None
        raise last

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise AddressRefused("refused: unix sockets are not allowed")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class PolicyBackend(httpcore.NetworkBackend):
    """Blocking twin of AsyncPolicyBackend (for httpx.Client, e.g. the ping button or the openai SDK)."""

    def __init__(
        self,
        *,
        allow_private: bool = True,
        resolver: Callable[[str, int], Sequence[str]] | None = None,
        inner: httpcore.NetworkBackend | None = None,
    ) -> None:
        self.allow_private = allow_private
        self._resolver = resolver or system_resolve
        self._inner = inner or httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        import time

        start = time.monotonic()
        if _parse_ip(host) is not None:
            addresses = [host.strip("[]")]
        else:
            try:
                addresses = _unique(str(a) for a in self._resolver(host, port))
            except (OSError, UnicodeError) as exc:
                raise httpcore.ConnectError(f"could not resolve {host}: {exc}") from exc
        candidates = _vet(host, addresses, self.allow_private)
        last: Exception | None = None
        for i, address in enumerate(candidates):
            left = None if timeout is None else max(0.0, timeout - (time.monotonic() - start))
            if left is not None and left <= 0:
                raise httpcore.ConnectTimeout(f"timed out connecting to {host}")
            try:
                return self._inner.connect_tcp(
                    address,
                    port,
                    timeout=_share(left, last_one=i == len(candidates) - 1),
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
        assert last is not None
        raise last

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        raise AddressRefused("refused: unix sockets are not allowed")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class AsyncConnectionPool:
    """An HTTP/1.1 connection pool with O(1) bookkeeping per request.

    httpcore 1.0's pool rescans every queued request against every connection on each request
    start and end (O(queued x connections)); at a few hundred concurrent calls that costs seconds
    and ends in PoolTimeout. This pool hands each request its own connection:

    - at most ``max_connections`` requests hold a connection at once (a FIFO semaphore; waiting
      counts against the request's "pool" timeout);
    - a finished connection that is still usable is kept for its origin (LIFO), at most
      ``max_keepalive_connections`` in total, oldest closed first; stale ones are skipped on reuse;
    - every new connection goes through ``network_backend`` (the URL policy).
    """

    def __init__(
        self,
        *,
        ssl_context: ssl.SSLContext | None,
        max_connections: int,
        max_keepalive_connections: int,
        keepalive_expiry: float | None,
        network_backend: httpcore.AsyncNetworkBackend,
    ) -> None:
        self._ssl_context = ssl_context
        self._max_connections = max_connections
        self._max_keepalive = max_keepalive_connections
        self._keepalive_expiry = keepalive_expiry
        self._network_backend = network_backend
        self._slots: anyio.Semaphore | None = None
        self._idle: dict[tuple, list[httpcore.AsyncHTTPConnection]] = {}
        self._idle_lru: dict[httpcore.AsyncHTTPConnection, tuple] = {}  # insertion-ordered
        self._in_use: dict[httpcore.AsyncHTTPConnection, tuple] = {}
        self._closed = False
        # The agent calls' own HTTP/1.1 connections (agents.h1), opened through the same policy.
        self.h1 = (
            H1Pool(
                policy=network_backend,
                ssl_context=ssl_context,
                max_idle=max_keepalive_connections,
                keepalive_expiry=keepalive_expiry or 30.0,
            )
            if isinstance(network_backend, AsyncPolicyBackend)
            else None
        )

    @property
    def connections(self) -> list[httpcore.AsyncHTTPConnection]:
        return list(self._in_use) + list(self._idle_lru)

    def _take_idle(self, key: tuple) -> tuple[httpcore.AsyncHTTPConnection | None, list]:
        stale: list[httpcore.AsyncHTTPConnection] = []
        stack = self._idle.get(key)
        while stack:
            conn = stack.pop()
            self._idle_lru.pop(conn, None)
            if conn.is_idle() and not conn.has_expired() and not conn.is_closed():
                return conn, stale
            stale.append(conn)
        return None, stale

    def _drop_idle(self, conn: httpcore.AsyncHTTPConnection) -> None:
        key = self._idle_lru.pop(conn)
        stack = self._idle.get(key)
        if stack is not None:
            stack.remove(conn)
            if not stack:
                del self._idle[key]

    async def _close_all(self, conns: Iterable[httpcore.AsyncHTTPConnection]) -> None:
        for conn in conns:
            # closing a broken socket may fail; it is gone either way
            with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                await conn.aclose()

    async def handle_async_request(self, request: httpcore.Request) -> httpcore.Response:
        if self._closed:
            raise RuntimeError("the connection pool is closed")
        scheme = request.url.scheme
        if scheme not in (b"http", b"https"):
            raise httpcore.UnsupportedProtocol(
                f"Request URL has an unsupported protocol '{scheme.decode()}://'."
            )
        if self._slots is None:
            self._slots = anyio.Semaphore(self._max_connections, fast_acquire=True)
        timeout = request.extensions.get("timeout", {}).get("pool")
        try:
            with anyio.fail_after(timeout):
                await self._slots.acquire()
        except TimeoutError as exc:
            raise httpcore.PoolTimeout("timed out waiting for a free connection") from exc
        origin = request.url.origin
        key = (origin.scheme, origin.host, origin.port)  # httpcore.Origin is not hashable
        conn: httpcore.AsyncHTTPConnection | None = None
        try:
            for _ in range(3):  # a reused connection may turn out dead: then take another one
                conn, stale = self._take_idle(key)
                reused = conn is not None
                if conn is None:
                    # room for a new socket: close the longest-idle connection of any origin if needed
                    while self._idle_lru and len(self._in_use) + len(self._idle_lru) >= self._max_connections:
                        oldest = next(iter(self._idle_lru))
                        self._drop_idle(oldest)
                        stale.append(oldest)
                    conn = httpcore.AsyncHTTPConnection(
                        origin=origin,
                        ssl_context=self._ssl_context,
                        keepalive_expiry=self._keepalive_expiry,
                        network_backend=self._network_backend,
                    )
                self._in_use[conn] = key
                if stale:
                    await self._close_all(stale)
                try:
                    response = await conn.handle_async_request(request)
                except httpcore.ConnectionNotAvailable:
                    self._in_use.pop(conn, None)
                    await self._close_all([conn])
                    conn = None
                    if reused:
                        continue
                    raise
                return httpcore.Response(
                    status=response.status,
                    headers=response.headers,
                    content=_PooledStream(response.stream, self, conn),
                    extensions=response.extensions,
                )
            raise httpcore.ConnectError("no usable connection")
        except BaseException:
            if conn is not None:
                self._in_use.pop(conn, None)
                self._slots.release()
                await self._close_all([conn])
            else:
                self._slots.release()
            raise

    async def _release(self, conn: httpcore.AsyncHTTPConnection) -> None:
        key = self._in_use.pop(conn, None)
        assert self._slots is not None
        self._slots.release()
        if key is None or self._closed or not conn.is_idle() or conn.has_expired() or conn.is_closed():
            await self._close_all([conn])
            return
        self._idle.setdefault(key, []).append(conn)
        self._idle_lru[conn] = key
        if len(self._idle_lru) > self._max_keepalive:
            oldest = next(iter(self._idle_lru))
            self._drop_idle(oldest)
            await self._close_all([oldest])

    async def aclose(self) -> None:
        self._closed = True
        if self.h1 is not None:
            self.h1.close()
        conns = list(self._idle_lru) + list(self._in_use)
        self._idle.clear()
        self._idle_lru.clear()
        self._in_use.clear()
        await self._close_all(conns)

    async def __aenter__(self) -> AsyncConnectionPool:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class _PooledStream:
    """The response body; closing it hands the connection back to the pool (exactly once)."""

    def __init__(
        self, stream: typing.Any, pool: AsyncConnectionPool, conn: httpcore.AsyncHTTPConnection
    ) -> None:
        self._stream = stream
        self._pool = pool
        self._conn = conn
        self._done = False

    async def __aiter__(self) -> typing.AsyncIterator[bytes]:
        async for part in self._stream:
            yield part

    async def aclose(self) -> None:
        if self._done:
            return
        self._done = True
        try:
            if hasattr(self._stream, "aclose"):
                with anyio.CancelScope(shield=True):
                    await self._stream.aclose()
        finally:
            await self._pool._release(self._conn)


# Which clients enforce the policy: (allow_private, max_connections, the async client's agents.h1 pool).
# Weak so closed clients go away.
_POLICY_CLIENTS: weakref.WeakKeyDictionary[
    httpx.AsyncClient | httpx.Client, tuple[bool, int, H1Pool | None]
] = weakref.WeakKeyDictionary()


def client_allows_private(client: httpx.AsyncClient | httpx.Client) -> bool | None:
    """True/False for clients made here (their allow_private), None for any other client."""
    entry = _POLICY_CLIENTS.get(client)
    return None if entry is None else entry[0]


def client_max_connections(client: httpx.AsyncClient | httpx.Client) -> int | None:
    """The connection limit of a client made here, None for any other client."""
    entry = _POLICY_CLIENTS.get(client)
    return None if entry is None else entry[1]


def agent_pool(client: httpx.AsyncClient) -> H1Pool | None:
    """The keep-alive pool of agents.h1 connections of an async client made here (None otherwise)."""
    entry = _POLICY_CLIENTS.get(client)
    return None if entry is None else entry[2]


def _install_backend(transport: httpx.HTTPTransport, backend: httpcore.NetworkBackend) -> None:
    # httpx 0.28 has no network_backend argument; its transport owns an httpcore pool that passes
    # pool._network_backend to every connection it opens. Tests prove the swap takes effect
    # (tests/protocols/test_netpolicy.py), so an httpx upgrade that changes this fails loudly.
    pool = getattr(transport, "_pool", None)
    if not isinstance(pool, httpcore.ConnectionPool) or not hasattr(pool, "_network_backend"):
        raise RuntimeError("cannot install the URL policy on this httpx/httpcore version")
    pool._network_backend = backend


def _install_async_pool(transport: httpx.AsyncHTTPTransport, pool: AsyncConnectionPool) -> None:
    # httpx's transport maps httpcore exceptions and wraps streams around ``self._pool``; we keep all
    # of that and only replace the pool. Guarded so an httpx upgrade that changes it fails loudly.
    if not isinstance(getattr(transport, "_pool", None), httpcore.AsyncConnectionPool):
        raise RuntimeError("cannot install the connection pool on this httpx/httpcore version")
    transport._pool = pool  # type: ignore[assignment]


class _NoCookies(http.cookiejar.CookieJar):
    """Keeps nothing: a cookie one sample's reply sets must not ride along with the next sample."""

    def extract_cookies(self, response: typing.Any, request: typing.Any) -> None:
        return None

    def set_cookie(self, cookie: http.cookiejar.Cookie) -> None:
        return None


def _limits(max_connections: int) -> httpx.Limits:
    return httpx.Limits(
        max_connections=max_connections, max_keepalive_connections=max_connections, keepalive_expiry=30.0
    )


@functools.cache
def _default_ssl_context() -> ssl.SSLContext:
    # What httpx builds for verify=True without trust_env (certifi's CA bundle). Building one costs
    # ~10 ms of CPU (loading the bundle) and every drain makes a client: build it once per process.
    return httpx.create_ssl_context(verify=True, trust_env=False)


def _verify(verify: ssl.SSLContext | bool) -> ssl.SSLContext | bool:
    return _default_ssl_context() if verify is True else verify


def make_policy_async_client(
    *,
    allow_private: bool = True,
    max_connections: int = 100,
    resolver: Resolver | None = None,
    verify: ssl.SSLContext | bool = True,
    timeout: float = 30.0,
) -> httpx.AsyncClient:
    """An httpx.AsyncClient that enforces the URL policy at connect time.

    No proxies from the environment (a proxy would connect on our behalf, past the check), no
    redirects followed, no .netrc.
    """
    transport = httpx.AsyncHTTPTransport(
        verify=_verify(verify), limits=_limits(max_connections), trust_env=False
    )
    ssl_context = transport._pool._ssl_context  # httpx built it from ``verify`` (certifi, SSL_CERT_FILE)
    pool = AsyncConnectionPool(
        ssl_context=ssl_context,
        max_connections=max_connections,
        max_keepalive_connections=max_connections,
        keepalive_expiry=30.0,
        network_backend=AsyncPolicyBackend(allow_private=allow_private, resolver=resolver),
    )
    _install_async_pool(transport, pool)
    client = httpx.AsyncClient(
        transport=transport, trust_env=False, follow_redirects=False, timeout=timeout, cookies=_NoCookies()
    )
    _POLICY_CLIENTS[client] = (allow_private, max_connections, pool.h1)
    return client


def make_policy_client(
    *,
    allow_private: bool = True,
    max_connections: int = 20,
    resolver: Callable[[str, int], Sequence[str]] | None = None,
    verify: ssl.SSLContext | bool = True,
    timeout: float = 30.0,
) -> httpx.Client:
    """Blocking twin of make_policy_async_client."""
    transport = httpx.HTTPTransport(verify=_verify(verify), limits=_limits(max_connections), trust_env=False)
    _install_backend(transport, PolicyBackend(allow_private=allow_private, resolver=resolver))
    client = httpx.Client(
        transport=transport, trust_env=False, follow_redirects=False, timeout=timeout, cookies=_NoCookies()
    )
    _POLICY_CLIENTS[client] = (allow_private, max_connections, None)
    return client
