"""Serve worlds over HTTP on loopback, with no console: ``/worlds/<id>/<tool>/...``.

``WorldServer`` (a threading ``http.server``) holds worlds in memory, answers each call through
:meth:`World.call` under the world's lock, and answers 404 for an unknown world or tool, 410 once a
world's trial has ended, 413 for a body over 1 MB. ``evalconsole scene run`` and ``scene up`` use it,
and so do the simulators' tests, which point the official SDK clients at it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from .http import BODY_LIMIT, Request, Response, split_target
from .world import World, WorldEnded

__all__ = ["WorldServer"]

# How often serve_forever looks for a stop: stop() waits up to this long (the default 0.5 s was most
# of a scene run's stop time, bench/README.md "Worlds").
POLL_SECONDS = 0.05


class WorldServer:
    """``with WorldServer() as server: server.add(world); server.root`` → ``http://127.0.0.1:<port>``.

    ``extra`` routes a path outside ``/worlds/`` (``scene up``'s state and reset endpoints) to a
    callable ``(method, path, headers, body) -> Response | None``."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.worlds: dict[str, World] = {}
        self.locks: dict[str, threading.Lock] = {}
        self.extra: Callable[[str, str, dict[str, str], bytes], Response | None] | None = None
        self._httpd = ThreadingHTTPServer((host, port), _handler(self))
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def root(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def add(self, world: World) -> World:
        self.worlds[world.id] = world
        self.locks[world.id] = threading.Lock()
        return world

    def remove(self, world_id: str) -> None:
        self.worlds.pop(world_id, None)
        self.locks.pop(world_id, None)

    def lock(self, world_id: str) -> threading.Lock:
        return self.locks[world_id]

    def answer(self, method: str, target: str, headers: dict[str, str], body: bytes) -> Response:
        split = urlsplit(target)
        where = split_target(split.path)
        if where is None:
            extra = self.extra(method, split.path, headers, body) if self.extra else None
            return extra or Response(404, {"message": "Not Found"})
        world_id, tool, rest = where
        world = self.worlds.get(world_id)
        if world is None:
            return Response(404, {"message": f"no world {world_id}"})
        with self.locks[world_id]:
            if not world.has_tool(tool):
                return Response(404, {"message": f"this world has no tool {tool!r}"})
            try:
                return world.call(tool, Request.make(method, rest, split.query, headers, body))
            except WorldEnded:
                return Response(410, {"message": "this world's trial has ended"})

    def start(self) -> WorldServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(POLL_SECONDS,), name="worlds", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def serve_forever(self) -> None:
        self._httpd.serve_forever(POLL_SECONDS)

    def __enter__(self) -> WorldServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def _handler(server: WorldServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Keep-alive clients (httpx, requests, the SDKs) send the next request on the same socket: with
        # Nagle on, an answer written in two parts waits for the client's delayed ACK (40 ms a call on
        # Linux). TCP_NODELAY, and the status line, headers and body go out in one write.
        disable_nagle_algorithm = True

        def _serve(self) -> None:
            length = self.headers.get("Content-Length")
            try:
                size = int(length) if length else 0
            except ValueError:
                size = -1
            if size < 0:
                return self._send(Response(400, {"message": "bad Content-Length"}))
            if size > BODY_LIMIT:
                # Read (and drop) what was sent so the client sees the answer, then refuse it.
                self._drain(size)
                return self._send(Response(413, {"message": f"the body is over {BODY_LIMIT} bytes"}))
            body = self.rfile.read(size) if size else b""
            headers = {k: v for k, v in self.headers.items()}
            self._send(server.answer(self.command, self.path, headers, body))

        def _drain(self, size: int) -> None:
            left = size
            while left > 0:
                chunk = self.rfile.read(min(left, 65536))
                if not chunk:
                    break
                left -= len(chunk)

        def _send(self, response: Response) -> None:
            content = response.content()
            self.send_response(response.status)
            for name, value in response.headers.items():
                if name.lower() not in ("content-length", "content-type"):
                    self.send_header(name, value)
            self.send_header("Content-Type", response.content_type())
            self.send_header("Content-Length", str(len(content)))
            # end_headers() would write the headers alone; send them with the body instead.
            self._headers_buffer.append(b"\r\n")
            if self.command != "HEAD":
                self._headers_buffer.append(content)
            self.wfile.write(b"".join(self._headers_buffer))
            self._headers_buffer = []

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _serve

        def log_message(self, format: str, *args: Any) -> None:  # quiet: the trace is the log
            pass

    return Handler


def dump(value: Any) -> bytes:
    return json.dumps(value, indent=2, ensure_ascii=False).encode()
