"""WSGI over real loopback HTTP, ASGI through its scope/receive/send contract, and the example server."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from evalconsole_adapter import ToolRecorder, asgi_app, make_server, wrap, wsgi_app

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "serve.py"
SECRET = "loopback-secret"


def eval_request(text="Where is order EC-1042?", **scenario):
    return {
        "protocol": "evalconsole/1",
        "run": "r1",
        "sample": "s1",
        "attempt": 1,
        "scenario": {"name": "n", "input": text, "messages": [{"role": "user", "content": text}],
                     "metadata": {}, **scenario},
    }


def make_handler():
    recorder = ToolRecorder()

    @recorder.tool
    def lookup_order(orderId):  # noqa: N803
        if orderId != "EC-1042":
            raise LookupError(f"order {orderId} not found")
        return {"found": True, "orderId": orderId, "status": "shipped"}

    def agent(messages, scenario):
        text = messages[-1]["content"]
        if "EC-" not in text:
            return "Hello."
        order_id = "EC-" + text.split("EC-")[1][:4]
        try:
            return f"Order {order_id} is {lookup_order(orderId=order_id)['status']}."
        except LookupError as exc:
            return f"Sorry: {exc}."

    def crashing(messages, scenario):
        if "crash" in messages[-1]["content"]:
            raise RuntimeError("model unavailable")
        return agent(messages, scenario)

    return wrap(crashing, recorder=recorder)


EXPECTED = {
    "EC-1042": {
        "output": "Order EC-1042 is shipped.",
        "toolCalls": [{"name": "lookup_order", "status": "succeeded", "input": {"orderId": "EC-1042"},
                       "output": {"found": True, "orderId": "EC-1042", "status": "shipped"}}],
    },
    "EC-9999": {
        "output": "Sorry: order EC-9999 not found.",
        "toolCalls": [{"name": "lookup_order", "status": "failed", "input": {"orderId": "EC-9999"},
                       "error": "order EC-9999 not found"}],
    },
    "hello": {"output": "Hello.", "toolCalls": []},
}


def http(method, url, body=None, headers=None):
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as res:
            return res.status, dict(res.headers), json.loads(res.read())
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), json.loads(err.read())


# --------------------------------------------------------------------------- WSGI over HTTP


@pytest.fixture(scope="module")
def wsgi_server():
    server = make_server(make_handler(), port=0, secret=SECRET, max_body_bytes=2048)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server.url
    server.shutdown()
    server.server_close()


AUTH = {"Authorization": f"Bearer {SECRET}", "Content-Type": "application/json"}


@pytest.mark.parametrize("text", ["EC-1042", "EC-9999", "hello"])
def test_wsgi_replies_with_tool_evidence(wsgi_server, text):
    status, headers, body = http("POST", wsgi_server + "/agent", eval_request(text), AUTH)
    assert status == 200
    assert headers["Content-Type"].startswith("application/json")
    assert body == EXPECTED[text]


def test_wsgi_secret(wsgi_server):
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": SECRET}):
        status, response_headers, body = http("POST", wsgi_server, eval_request(), headers)
        assert status == 401, headers
        assert response_headers["WWW-Authenticate"] == "Bearer"
        assert body == {"error": "missing or invalid bearer token"}


def test_wsgi_method_not_allowed(wsgi_server):
    status, headers, body = http("GET", wsgi_server, headers=AUTH)
    assert status == 405
    assert headers["Allow"] == "POST"
    assert "error" in body


@pytest.mark.parametrize(
    ("body", "status", "error"),
    [
        (b"{not json", 400, "request body is not valid JSON"),
        (b"", 400, "request body is not valid JSON"),
        ({"scenario": "x"}, 400, "scenario must be an object"),
        (b"x" * 4096, 413, "request body exceeds 2048 bytes"),
    ],
)
def test_wsgi_bad_bodies(wsgi_server, body, status, error):
    got_status, _, got = http("POST", wsgi_server, body, AUTH)
    assert got_status == status
    assert got["error"] == error


def test_wsgi_400_names_the_field(wsgi_server):
    _, _, body = http("POST", wsgi_server, eval_request(messages=[{"role": "user", "content": 3}]), AUTH)
    assert body == {
        "error": "scenario.messages[0].content must be a string",
        "field": "scenario.messages[0].content",
    }


def test_wsgi_agent_exception_is_500(wsgi_server):
    status, _, body = http("POST", wsgi_server, eval_request("crash"), AUTH)
    assert status == 500
    assert body == {"error": "agent failed: model unavailable"}


def test_wsgi_app_without_secret_accepts_any_caller():
    app = wsgi_app(make_handler())
    captured = {}

    def start_response(status, headers):
        captured["status"] = status

    import io

    data = json.dumps(eval_request("hello")).encode()
    environ = {"REQUEST_METHOD": "POST", "CONTENT_LENGTH": str(len(data)), "wsgi.input": io.BytesIO(data)}
    body = b"".join(app(environ, start_response))
    assert captured["status"] == "200 OK"
    assert json.loads(body) == EXPECTED["hello"]


def test_empty_secret_is_rejected():
    with pytest.raises(ValueError):
        wsgi_app(make_handler(), secret="")
    with pytest.raises(ValueError):
        asgi_app(make_handler(), secret="")


# --------------------------------------------------------------------------- ASGI, called directly


def call_asgi(app, method="POST", body=b"", headers=(), chunks=None):
    """Drive one HTTP request through an ASGI app; return (status, headers, json body)."""
    if isinstance(body, dict):
        body = json.dumps(body).encode()
    parts = chunks if chunks is not None else [body]
    messages = [
        {"type": "http.request", "body": p, "more_body": i < len(parts) - 1} for i, p in enumerate(parts)
    ]
    sent = []

    async def receive():
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "path": "/agent",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers],
    }
    asyncio.run(app(scope, receive, send))
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"]
    response_headers = {k.decode(): v.decode() for k, v in sent[0]["headers"]}
    return sent[0]["status"], response_headers, json.loads(sent[1]["body"])


ASGI_AUTH = [("authorization", f"Bearer {SECRET}"), ("content-type", "application/json")]


@pytest.fixture(scope="module")
def asgi():
    return asgi_app(make_handler(), secret=SECRET, max_body_bytes=2048)


@pytest.mark.parametrize("text", ["EC-1042", "EC-9999", "hello"])
def test_asgi_replies_with_tool_evidence(asgi, text):
    status, headers, body = call_asgi(asgi, body=eval_request(text), headers=ASGI_AUTH)
    assert status == 200
    assert headers["content-type"].startswith("application/json")
    assert body == EXPECTED[text]


def test_asgi_reads_a_body_in_chunks(asgi):
    data = json.dumps(eval_request("EC-1042")).encode()
    status, _, body = call_asgi(asgi, chunks=[data[:7], data[7:20], data[20:]], headers=ASGI_AUTH)
    assert status == 200
    assert body == EXPECTED["EC-1042"]


def test_asgi_secret(asgi):
    status, headers, body = call_asgi(asgi, body=eval_request(), headers=[("authorization", "Bearer nope")])
    assert status == 401
    assert headers["www-authenticate"] == "Bearer"
    assert body == {"error": "missing or invalid bearer token"}


def test_asgi_method_not_allowed(asgi):
    status, headers, _ = call_asgi(asgi, method="GET", headers=ASGI_AUTH)
    assert status == 405
    assert headers["allow"] == "POST"


@pytest.mark.parametrize(
    ("body", "status", "error"),
    [
        (b"[", 400, "request body is not valid JSON"),
        (
            {"protocol": "nope", "scenario": {"input": "x"}},
            400,
            'unsupported protocol "nope"; expected \'evalconsole/1\'',
        ),
        (b"x" * 4096, 413, "request body exceeds 2048 bytes"),
    ],
)
def test_asgi_bad_bodies(asgi, body, status, error):
    got_status, _, got = call_asgi(asgi, body=body, headers=ASGI_AUTH)
    assert got_status == status
    assert got["error"] == error


def test_asgi_agent_exception_is_500(asgi):
    status, _, body = call_asgi(asgi, body=eval_request("crash"), headers=ASGI_AUTH)
    assert status == 500
    assert body == {"error": "agent failed: model unavailable"}


def test_asgi_async_agent_with_async_tool():
    recorder = ToolRecorder()

    @recorder.tool
    async def lookup_order(orderId):  # noqa: N803
        await asyncio.sleep(0)
        return {"status": "shipped"}

    async def agent(messages, scenario):
        if "EC-1042" in messages[-1]["content"]:
            return f"It {(await lookup_order('EC-1042'))['status']}."
        return "Hi."

    app = asgi_app(wrap(agent, recorder=recorder))
    _, _, with_tool = call_asgi(app, body=eval_request("EC-1042"))
    _, _, without = call_asgi(app, body=eval_request("hi"))
    assert with_tool == {
        "output": "It shipped.",
        "toolCalls": [
            {
                "name": "lookup_order",
                "status": "succeeded",
                "input": {"orderId": "EC-1042"},
                "output": {"status": "shipped"},
            }
        ],
    }
    assert without == {"output": "Hi.", "toolCalls": []}


def test_asgi_plain_handler_function():
    app = asgi_app(lambda request: {"output": request["scenario"]["input"].upper(), "toolCalls": []})
    assert call_asgi(app, body=eval_request("hey"))[2] == {"output": "HEY", "toolCalls": []}


def test_asgi_lifespan(asgi):
    events = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]
    sent = []

    async def receive():
        return events.pop(0)

    async def send(message):
        sent.append(message["type"])

    asyncio.run(asgi({"type": "lifespan"}, receive, send))
    assert sent == ["lifespan.startup.complete", "lifespan.shutdown.complete"]


# --------------------------------------------------------------------------- examples/serve.py


@pytest.fixture
def example_server():
    env = {**os.environ, "EVALCONSOLE_SECRET": "example-secret", "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, str(EXAMPLE), "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    try:
        line = proc.stdout.readline().strip()
        assert line.startswith("listening on http://127.0.0.1:"), (
            line,
            proc.stderr.read() if proc.poll() else "",
        )
        url = line.removeprefix("listening on ")
        assert not url.endswith(":0")
        yield proc, url
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        proc.stdout.close()
        proc.stderr.close()


def test_example_server(example_server):
    proc, url = example_server
    auth = {"Authorization": "Bearer example-secret", "Content-Type": "application/json"}

    status, _, body = http("POST", url, eval_request("Where is my order EC-1042?"), auth)
    assert status == 200
    assert body == {
        "output": "Order EC-1042 is shipped.",
        "toolCalls": [{"name": "lookup_order", "status": "succeeded", "input": {"orderId": "EC-1042"},
                       "output": {"found": True, "orderId": "EC-1042", "status": "shipped"}}],
    }
    _, _, body = http("POST", url, eval_request("What about ec-9999?"), auth)
    assert body == {
        "output": "Sorry, I could not look up that order: order EC-9999 not found.",
        "toolCalls": [{"name": "lookup_order", "status": "failed", "input": {"orderId": "EC-9999"},
                       "error": "order EC-9999 not found"}],
    }
    _, _, body = http("POST", url, eval_request("Hello there"), auth)
    assert body == {
        "output": "I can look up orders for you. Please send an order id like EC-1042.",
        "toolCalls": [],
    }
    assert http("POST", url, eval_request(), {})[0] == 401

    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 0
