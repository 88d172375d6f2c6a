"""A small threaded development server (``wsgiref``) for a protocol handler.

    server = make_server(handler, port=0)      # bound; server.url; serve_forever() in a thread
    serve(handler, port=8788)                  # blocking; prints "listening on http://..."

For production put :func:`wsgi_app` / :func:`asgi_app` behind gunicorn, uvicorn or similar.
"""

from __future__ import annotations

import signal
import sys
import threading
from socketserver import ThreadingMixIn
from typing import Any, Optional, TextIO
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

from .apps import DEFAULT_MAX_BODY_BYTES, HandlerFn, wsgi_app


class _QuietRequestHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        if getattr(self.server, "verbose", False):
            super().log_message(format, *args)


class AdapterServer(ThreadingMixIn, WSGIServer):
    """A threaded ``wsgiref`` server; ``.url`` is its base URL."""

    daemon_threads = True
    allow_reuse_address = True
    verbose = False

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        host = f"[{host}]" if ":" in str(host) else host
        return f"http://{host}:{port}"


def make_server(
    handler: HandlerFn,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    secret: Optional[str] = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    verbose: bool = False,
) -> AdapterServer:
    """A bound server for ``handler`` (port 0 = any free port), not yet serving."""
    server = AdapterServer((host, port), _QuietRequestHandler)
    server.verbose = verbose
    server.set_app(wsgi_app(handler, secret, max_body_bytes=max_body_bytes))
    return server


def serve(
    handler: HandlerFn,
    host: str = "127.0.0.1",
    port: int = 8788,
    *,
    secret: Optional[str] = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    verbose: bool = False,
    out: Optional[TextIO] = None,
) -> None:
    """Serve until SIGTERM/SIGINT, then return (so the process exits with status 0).

    Prints one line ``listening on http://HOST:PORT`` (the real port when ``port`` is 0) to
    ``out`` (stdout) once requests are accepted.
    """
    server = make_server(handler, host, port, secret=secret, max_body_bytes=max_body_bytes, verbose=verbose)
    stopping = threading.Event()

    def stop(signum: int, _frame: Any) -> None:
        if not stopping.is_set():
            stopping.set()
            # shutdown() waits for serve_forever() to return, so it must not run on this thread.
            threading.Thread(target=server.shutdown, daemon=True).start()

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
    stream = out if out is not None else sys.stdout
    print(f"listening on {server.url}", file=stream, flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
