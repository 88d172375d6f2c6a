"""The demo support agent shipped with evalconsole (standard library only, deterministic).

    python -m agents.demo_agent --port 8001          # what `make up` runs
    DEMO_AGENT_TOKEN=s3cret python -m agents.demo_agent   # then require "Authorization: Bearer s3cret"

It speaks the ``evalconsole/1`` protocol on POST to any path and pretends to be a shop's support bot
with two tools over a pretend back office API:

- an order id (``EC-1042``) → ``lookup_order`` (``GET /orders/EC-1042``) and a status answer, e.g.
  "Order EC-1042 has shipped and arrives on 2026-12-03.";
- a refund/return request with an order id → ``lookup_order`` then ``escalate_to_human``
  (``POST /tickets``); it never calls ``issue_refund``; without an order id it asks for one;
- a greeting or anything else → an answer with no tool calls (``toolCalls: []``).

It reports ``toolCalls``, a ``trace`` of its back-office calls and the ``messages`` of the
conversation. Same input, same answer. In tests: ``with DemoAgent() as agent: agent.url`` or
``server = serve(0)`` (started in a thread; ``server.shutdown()`` stops it).

**World mode.** When the scenario carries a ``world`` whose tools include ``slack`` and ``github``
(a scene trial), it plays the demo scenes for real against the world's simulated tools, and makes the
mistakes they catch in sloppy mode: see :mod:`agents.demo_world`.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agents.demo_world import play, world_tools

ORDER_ID = re.compile(r"\bEC-?(\d{3,6})\b", re.IGNORECASE)
REFUND = re.compile(
    r"\b(refunds?|refunded|money back|return(?:ing)?|reimburse\w*|chargeback)\b", re.IGNORECASE
)
GREETING = re.compile(r"^\s*(hi|hello|hey|good (morning|afternoon|evening)|greetings|howdy)\b", re.IGNORECASE)
THANKS = re.compile(r"^\s*(thanks|thank you|cheers)\b", re.IGNORECASE)

# The pretend order database. Ids not listed get a status derived from their number (stable).
ORDERS: dict[str, dict[str, Any]] = {
    "EC-1042": {"status": "shipped", "eta": "2026-12-03", "item": "wireless headphones"},
    "EC-1043": {"status": "delivered", "delivered_on": "2026-11-20", "item": "phone case"},
    "EC-2001": {"status": "processing", "eta": "2026-12-10", "item": "desk lamp"},
    "EC-3003": {"status": "cancelled", "item": "coffee grinder"},
}
UNKNOWN_FROM = 9000  # EC-9000 and above do not exist


def find_order(order_id: str) -> dict[str, Any] | None:
    if order_id in ORDERS:
        return ORDERS[order_id]
    number = int(order_id.split("-")[1])
    if number >= UNKNOWN_FROM:
        return None
    day = 1 + number % 28
    status = ("processing", "shipped", "delivered")[number % 3]
    key = "delivered_on" if status == "delivered" else "eta"
    return {"status": status, key: f"2026-12-{day:02d}", "item": "parcel"}


def _user_texts(scenario: dict[str, Any]) -> list[str]:
    texts = []
    messages = scenario.get("messages")
    if isinstance(messages, list):
        for m in messages:
            if isinstance(m, dict) and m.get("role", "user") == "user" and isinstance(m.get("content"), str):
                texts.append(m["content"])
    if not texts and isinstance(scenario.get("input"), str):
        texts.append(scenario["input"])
    return texts


def _status_sentence(order_id: str, order: dict[str, Any]) -> str:
    status = order["status"]
    if status == "shipped":
        return f"Order {order_id} has shipped and arrives on {order['eta']}."
    if status == "delivered":
        return f"Order {order_id} was delivered on {order['delivered_on']}."
    if status == "processing":
        return f"Order {order_id} is being prepared and should arrive on {order['eta']}."
    return f"Order {order_id} was {status}."


def _ticket_id(order_id: str, text: str) -> str:
    return "T-" + hashlib.sha256(f"{order_id}\n{text}".encode()).hexdigest()[:6].upper()


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """The reply body for one evalconsole/1 request body (pure and deterministic)."""
    scenario = request.get("scenario") if isinstance(request.get("scenario"), dict) else {}
    texts = _user_texts(scenario)
    last = texts[-1] if texts else ""
    order_id = None
    for text in reversed(texts):  # the latest message that names an order wins
        match = ORDER_ID.search(text)
        if match:
            order_id = f"EC-{match.group(1)}"
            break
    wants_refund = bool(REFUND.search(last))
    tool_calls: list[dict[str, Any]] = []
    trace: list[dict[str, Any]] = []

    if order_id is not None:
        order = find_order(order_id)
        lookup_output: dict[str, Any] = {"found": order is not None}
        if order is not None:
            lookup_output.update(order)
        tool_calls.append(
            {
                "name": "lookup_order",
                "status": "succeeded",
                "input": {"orderId": order_id},
                "output": lookup_output,
            }
        )
        trace.append(
            {
                "method": "GET",
                "path": f"/orders/{order_id}",
                "status": 200 if order else 404,
                "tool": "lookup_order",
            }
        )
        if order is None:
            output = (
                f"I couldn't find order {order_id}. Could you check the number? "
                "It is in your confirmation email and looks like EC-1042."
            )
        elif wants_refund:
            ticket = _ticket_id(order_id, last)
            tool_calls.append(
                {
                    "name": "escalate_to_human",
                    "status": "succeeded",
                    "input": {"orderId": order_id, "reason": "refund request", "summary": last[:200]},
                    "output": {"ticket": ticket, "queue": "refunds"},
                }
            )
            trace.append({"method": "POST", "path": "/tickets", "status": 201, "tool": "escalate_to_human"})
            output = (
                f"I'm sorry about order {order_id}. I can't issue refunds myself, so I've passed your "
                f"request to a colleague (ticket {ticket}); they will contact you within one business day."
            )
        else:
            output = _status_sentence(order_id, order)
    elif wants_refund:
        output = "I can help with a refund. What is your order number? It looks like EC-1042."
    elif GREETING.search(last):
        output = (
            "Hello! I'm the demo support agent. I can check the status of an order or pass a refund "
            "request to a colleague. What is your order number?"
        )
    elif THANKS.search(last):
        output = "You're welcome! Is there anything else I can help with?"
    else:
        output = (
            "I can help with order status and refunds. Please tell me your order number "
            "(it looks like EC-1042)."
        )

    messages = [m for m in scenario.get("messages") or [] if isinstance(m, dict)] or [
        {"role": "user", "content": last}
    ]
    messages = messages + [{"role": "assistant", "content": output}]
    return {"output": output, "toolCalls": tool_calls, "trace": trace, "messages": messages}



class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # _send writes the head and the body separately: with Nagle on, every answer after the first on a
    # kept-alive connection waited for the client's delayed ACK (40 ms on Linux) before its body left.
    disable_nagle_algorithm = True
    server_version = "evalconsole-demo-agent/1"
    token: str | None = None

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        if getattr(self.server, "verbose", False):
            super().log_message(format, *args)

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        self._send(200, {"ok": True, "agent": "evalconsole demo support agent", "protocol": "evalconsole/1"})

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        length = int(self.headers.get("Content-Length") or 0)
        if length > 1_000_000:
            self.close_connection = True
            return self._send(413, {"error": "request too large"})
        body = self.rfile.read(length) if length else b""
        token = self.token if self.token is not None else os.environ.get("DEMO_AGENT_TOKEN") or None
        if token:
            given = self.headers.get("Authorization", "")
            if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
                return self._send(401, {"error": "missing or wrong Authorization: Bearer token"})
        try:
            request = json.loads(body)
        except ValueError:
            return self._send(400, {"error": "the request body is not JSON"})
        if not isinstance(request, dict) or not isinstance(request.get("scenario"), dict):
            return self._send(400, {"error": "expected an evalconsole/1 request with a 'scenario' object"})
        if world_tools(request) is not None:
            return self._send(200, play(request, self.path))
        self._send(200, answer(request))


class DemoAgentServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    verbose = False

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/"


def make_server(port: int = 8001, host: str = "127.0.0.1", *, token: str | None = None) -> DemoAgentServer:
    """A bound, not yet serving server. ``token`` overrides DEMO_AGENT_TOKEN ("" = no check)."""
    handler = type("DemoHandler", (_Handler,), {"token": token})
    return DemoAgentServer((host, port), handler)


def serve(port: int = 8001, host: str = "127.0.0.1", *, token: str | None = None) -> DemoAgentServer:
    """Start serving in a daemon thread and return the server (``.url``; ``.shutdown()`` to stop)."""
    server = make_server(port, host, token=token)
    threading.Thread(target=server.serve_forever, name="demo-agent", daemon=True).start()
    return server


class DemoAgent:
    """``with DemoAgent() as agent: agent.url`` — the demo agent on a free loopback port."""

    def __init__(self, port: int = 0, *, token: str | None = None) -> None:
        self._port = port
        self._token = token
        self.server: DemoAgentServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None, "not started"
        return self.server.url

    def __enter__(self) -> DemoAgent:
        self.server = serve(self._port, token=self._token)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="The evalconsole demo support agent (evalconsole/1 protocol).")
    p.add_argument("--host", default=os.environ.get("DEMO_AGENT_HOST", "127.0.0.1"))
    p.add_argument("--port", type=int, default=int(os.environ.get("DEMO_AGENT_PORT", "8001")))
    p.add_argument("--verbose", action="store_true", help="log every request")
    args = p.parse_args(argv)
    server = make_server(args.port, args.host)
    server.verbose = args.verbose
    auth = "with a bearer token" if os.environ.get("DEMO_AGENT_TOKEN") else "without authentication"
    print(f"demo agent listening on {server.url} ({auth})", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    sys.exit(0)


if __name__ == "__main__":
    main()
