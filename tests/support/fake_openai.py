"""A fake OpenAI-compatible judge: a real threaded HTTP server on loopback (standard library only).

It speaks ``POST /v1/chat/completions`` well enough for the official ``openai`` client. In tests::

    with FakeOpenAI(mode="pass") as fake:
        fake.base_url        # "http://127.0.0.1:<port>/v1"
        fake.script = ["garbage", "pass"]   # answers for the next requests, in order; then `mode`
        fake.requests        # how many requests arrived
        fake.last_body       # the JSON body of the last request (fake.bodies: all of them)

Modes (per test with ``mode``, per request with ``script``, or by putting ``[[judge:<mode>]]`` in any
message of the conversation):

  pass / fail     200 with content {"verdict": ..., "reason": ...}
  garbage         200 with content that is not JSON
  bad_verdict     200 with JSON whose verdict is neither pass nor fail
  429             429 with a Retry-After header (``retry_after``, default "1")
  500             500 with an OpenAI-style error body
  401             401 (a refusal that must not be retried)
  hang            never answers in time (sleeps ``hang_s`` or until the server stops)
  no_usage        like pass, without the ``usage`` object
  reply           200 with content {"reply": <reason>} (a person's voice, worlds.engine.voice)

Usage reported: ``usage_in``/``usage_out`` when set, else about len(body)/4 and len(content)/4.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MARKER = re.compile(r"\[\[judge:([a-z0-9_]+)\]\]")
MODES = ("pass", "fail", "garbage", "bad_verdict", "429", "500", "401", "hang", "no_usage", "reply")


class FakeOpenAI:
    def __init__(self, mode: str = "pass", *, reason: str | None = None, retry_after: str = "1",
                 hang_s: float = 10.0, usage_in: int | None = None, usage_out: int | None = None,
                 responder: Callable[[dict], str] | None = None) -> None:
        self.mode = mode
        self.reason = reason
        self.retry_after = retry_after
        self.hang_s = hang_s
        self.usage_in = usage_in
        self.usage_out = usage_out
        self.responder = responder  # optional: body -> mode, consulted after script and markers
        self.script: list[str] = []
        self.requests = 0
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.times: list[float] = []
        self.modes_used: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> FakeOpenAI:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # The head and the body leave in two writes; with Nagle on, the body of every answer after
            # the first on a kept-alive connection waits for the client's delayed ACK (40 ms on Linux).
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server API
                fake._handle(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._server is not None, "start() the server first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def last_body(self) -> dict[str, Any] | None:
        return self.bodies[-1] if self.bodies else None

    def reset(self) -> None:
        with self._lock:
            self.requests = 0
            self.bodies.clear()
            self.headers.clear()
            self.times.clear()
            self.modes_used.clear()
            self.script = []

    # ------------------------------------------------------------------ requests

    def _pick_mode(self, body: dict[str, Any]) -> str:
        with self._lock:
            if self.script:
                return self.script.pop(0)
        for message in body.get("messages") or []:
            content = message.get("content") if isinstance(message, dict) else None
            found = MARKER.search(content) if isinstance(content, str) else None
            if found:
                return found.group(1)
        if self.responder is not None:
            return self.responder(body)
        return self.mode

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_raw": raw.decode("utf-8", "replace")}
        if handler.path.rstrip("/") != "/v1/chat/completions":
            self._send(handler, 404, {"error": {"message": f"no route {handler.path}"}})
            return
        mode = self._pick_mode(body)
        with self._lock:
            self.requests += 1
            self.bodies.append(body)
            self.headers.append({k.lower(): v for k, v in handler.headers.items()})
            self.times.append(time.monotonic())
            self.modes_used.append(mode)
        if mode == "hang":
            self._stop.wait(self.hang_s)
            with contextlib.suppress(OSError):
                self._send(handler, 504, {"error": {"message": "too late"}})
            return
        if mode == "429":
            self._send(handler, 429, {"error": {"message": "Rate limit reached", "type": "rate_limit"}},
                       {"Retry-After": self.retry_after})
            return
        if mode == "500":
            self._send(handler, 500, {"error": {"message": "The server had an error",
                                                "type": "server_error"}})
            return
        if mode == "401":
            self._send(handler, 401, {"error": {"message": "Incorrect API key provided", "type": "auth"}})
            return
        if mode in ("pass", "fail", "no_usage"):
            verdict = "fail" if mode == "fail" else "pass"
            default = "The agent did what the criteria ask." if verdict == "pass" else "The agent missed it."
            reason = self.reason or default
            content = json.dumps({"verdict": verdict, "reason": reason})
        elif mode == "reply":
            content = json.dumps({"reply": self.reason or "Sure."})
        elif mode == "garbage":
            content = "Honestly I think it mostly passes, but it is hard to say."
        elif mode == "bad_verdict":
            content = json.dumps({"verdict": "maybe", "reason": "Unsure."})
        else:
            self._send(handler, 400, {"error": {"message": f"fake: unknown mode {mode!r}"}})
            return
        reply: dict[str, Any] = {
            "id": f"chatcmpl-fake-{self.requests}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
        }
        if mode != "no_usage":
            tokens_in = self.usage_in if self.usage_in is not None else max(1, len(raw) // 4)
            tokens_out = self.usage_out if self.usage_out is not None else max(1, len(content) // 4)
            reply["usage"] = {"prompt_tokens": tokens_in, "completion_tokens": tokens_out,
                              "total_tokens": tokens_in + tokens_out}
        self._send(handler, 200, reply)

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, payload: dict,
              headers: dict | None = None) -> None:
        data = json.dumps(payload).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(data)
        handler.wfile.flush()
