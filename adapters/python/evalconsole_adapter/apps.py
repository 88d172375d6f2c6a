"""WSGI and ASGI apps serving a protocol handler over HTTP.

Both: POST only (405 otherwise, with ``Allow: POST``), optional ``Authorization: Bearer <secret>``
(401), a body limit (413), 400 for a body that is not an ``evalconsole/1`` request, 500 when the
agent raises; every error is JSON ``{"error": "..."}``.
"""

from __future__ import annotations

import asyncio
import hmac
import inspect
import json
import logging
from collections.abc import Awaitable, Iterable, Mapping
from typing import Any, Callable, Optional

from .handler import Handler, _await
from .protocol import ProtocolError, error_message, to_jsonable

logger = logging.getLogger("evalconsole_adapter")

DEFAULT_MAX_BODY_BYTES = 1024 * 1024

HandlerFn = Callable[[dict[str, Any]], Any]
Headers = list[tuple[str, str]]

_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    405: "Method Not Allowed",
    413: "Payload Too Large",
    500: "Internal Server Error",
}


class _Reject(Exception):
    def __init__(self, status: int, body: dict[str, Any], headers: Optional[Headers] = None) -> None:
        super().__init__(body.get("error"))
        self.status = status
        self.body = body
        self.headers = headers or []


def _check_secret(secret: Optional[str]) -> None:
    if secret is not None and (not isinstance(secret, str) or not secret):
        raise ValueError("secret must be a non-empty string (pass None to disable the check)")


def _precheck(method: str, authorization: Optional[str], secret: Optional[str]) -> None:
    if method.upper() != "POST":
        raise _Reject(
            405, {"error": "method not allowed; POST an evalconsole/1 request"}, [("Allow", "POST")]
        )
    if secret is not None:
        given = (authorization or "").strip()
        scheme, _, token = given.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), secret.encode()):
            raise _Reject(401, {"error": "missing or invalid bearer token"}, [("WWW-Authenticate", "Bearer")])


def _decode(body: bytes) -> Any:
    try:
        return json.loads(body.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise _Reject(400, {"error": "request body is not valid JSON"}) from None


def _too_large(limit: int) -> _Reject:
    return _Reject(413, {"error": f"request body exceeds {limit} bytes"})


def _finish(reply: Any) -> tuple[int, dict[str, Any]]:
    if not isinstance(reply, Mapping):
        raise TypeError(f"the handler returned {type(reply).__name__}, not a dict")
    return 200, to_jsonable(reply)


def _failure(exc: BaseException) -> tuple[int, dict[str, Any]]:
    if isinstance(exc, ProtocolError):
        return 400, exc.as_dict()
    logger.error("agent failed", exc_info=exc)
    return 500, {"error": f"agent failed: {error_message(exc)}"}


def _encode(status: int, body: dict[str, Any], extra: Headers) -> tuple[bytes, Headers]:
    data = json.dumps(body).encode("utf-8")
    headers = [
        ("Content-Type", "application/json; charset=utf-8"),
        ("Content-Length", str(len(data))),
        ("Cache-Control", "no-store"),
    ]
    return data, headers + extra


# --------------------------------------------------------------------------- WSGI


def wsgi_app(
    handler: HandlerFn, secret: Optional[str] = None, *, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
) -> Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]:
    """A WSGI app for ``handler`` (from :func:`wrap`, or any ``dict -> dict`` callable)."""
    _check_secret(secret)

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        extra: Headers = []
        try:
            _precheck(environ.get("REQUEST_METHOD", "GET"), environ.get("HTTP_AUTHORIZATION"), secret)
            try:
                length = int(environ.get("CONTENT_LENGTH") or 0)
            except ValueError:
                raise _Reject(400, {"error": "invalid Content-Length"}) from None
            if length > max_body_bytes:
                raise _too_large(max_body_bytes)
            stream = environ["wsgi.input"]
            if length:
                body = stream.read(length)
            elif environ.get("wsgi.input_terminated"):
                body = stream.read(max_body_bytes + 1)
                if len(body) > max_body_bytes:
                    raise _too_large(max_body_bytes)
            else:
                body = b""
            request = _decode(body)
            try:
                reply = handler(request)
                if inspect.isawaitable(reply):
                    reply = asyncio.run(_await(reply))
                status, payload = _finish(reply)
            except Exception as exc:  # noqa: BLE001 - reported to the caller as 400/500
                status, payload = _failure(exc)
        except _Reject as reject:
            status, payload, extra = reject.status, reject.body, reject.headers
        data, headers = _encode(status, payload, extra)
        start_response(f"{status} {_REASONS.get(status, '')}".strip(), headers)
        return [data]

    return app


# --------------------------------------------------------------------------- ASGI

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


def asgi_app(
    handler: HandlerFn, secret: Optional[str] = None, *, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
) -> Callable[[dict[str, Any], Receive, Send], Awaitable[None]]:
    """An ASGI 3 app for ``handler``. A :class:`Handler` from :func:`wrap` runs a sync agent in a
    worker thread and an async one on the loop; any other callable runs in a worker thread."""
    _check_secret(secret)

    async def call(request: Any) -> Any:
        if isinstance(handler, Handler):
            return await handler.acall(request)
        if inspect.iscoroutinefunction(handler):
            return await handler(request)
        reply = await asyncio.to_thread(handler, request)
        return await reply if inspect.isawaitable(reply) else reply

    async def app(scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1003})
            return

        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        extra: Headers = []
        try:
            _precheck(scope.get("method", "GET"), headers.get("authorization"), secret)
            declared = headers.get("content-length")
            if declared and declared.isdigit() and int(declared) > max_body_bytes:
                raise _too_large(max_body_bytes)
            chunks: list[bytes] = []
            size = 0
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > max_body_bytes:
                    raise _too_large(max_body_bytes)
                chunks.append(chunk)
                if not message.get("more_body", False):
                    break
            request = _decode(b"".join(chunks))
            try:
                status, payload = _finish(await call(request))
            except Exception as exc:  # noqa: BLE001 - reported to the caller as 400/500
                status, payload = _failure(exc)
        except _Reject as reject:
            status, payload, extra = reject.status, reject.body, reject.headers
        data, response_headers = _encode(status, payload, extra)
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in response_headers],
            }
        )
        await send({"type": "http.response.body", "body": data})

    return app
