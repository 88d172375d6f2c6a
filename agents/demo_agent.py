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
(a scene trial, WORLDS.md "How a trial runs"), it plays the demo scene
``worlds/scenes/support-export.yaml`` for real, over HTTP (``urllib``) against the world's simulated
APIs: ``auth.test``, ``conversations.list`` to find #support, ``conversations.history`` for the
customer's question (the latest top-level question not from the bot), ``conversations.replies`` to
read her thread, ``GET /crm/customers/<id>`` when the thread names a customer id and the world has a
``crm`` (read only), ``POST /repos/<owner>/<repo>/issues`` (the repository named in the task,
label ``bug``), then ``chat.postMessage`` with ``thread_ts`` answering her with the issue's link.
Its only "now" is the world's (``world.now`` and the message timestamps); ``output`` says what it did.

**Sloppy mode** makes the mistakes the demo scene catches: it answers top-level in #support instead
of in her thread, files the issue without the ``bug`` label and writes a note into the CRM. It is
chosen by any of:

- the request path ending in ``/sloppy`` (``scene run ... --agent http://127.0.0.1:8001/sloppy``, or
  a second agent registered in the console with that endpoint URL);
- the scenario's name containing ``sloppy`` (a scene named ``support-export-sloppy``);
- ``scenario.metadata.demo_mode == "sloppy"``.
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
import urllib.error
import urllib.parse
import urllib.request
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

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


# ----------------------------------------------------------------------------- world mode

SLOPPY = "sloppy"
REPO_NAME = re.compile(r"\b([A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*)\b")
CUSTOMER_ID = re.compile(r"\bcustomer(?:\s+id)?\s*#?\s*(\d+)\b", re.IGNORECASE)
CALL_TIMEOUT = 30.0


def world_tools(request: dict[str, Any]) -> dict[str, dict[str, Any]] | None:
    """The scenario's world tools when this is a scene trial the demo agent can play (slack and
    github), else None."""
    scenario = request.get("scenario") if isinstance(request.get("scenario"), dict) else {}
    world = scenario.get("world")
    tools = world.get("tools") if isinstance(world, dict) else None
    if isinstance(tools, dict) and all(isinstance(tools.get(t), dict) for t in ("slack", "github")):
        return tools
    return None


def wants_sloppy(request: dict[str, Any], path: str = "/") -> bool:
    """Sloppy mode: the path ends in /sloppy, the scenario's name contains "sloppy", or
    ``scenario.metadata.demo_mode`` is "sloppy"."""
    scenario = request.get("scenario") if isinstance(request.get("scenario"), dict) else {}
    metadata = scenario.get("metadata") if isinstance(scenario.get("metadata"), dict) else {}
    name = scenario.get("name") if isinstance(scenario.get("name"), str) else ""
    last = urllib.parse.urlsplit(path).path.rstrip("/").rpartition("/")[2]
    return last == SLOPPY or SLOPPY in name.casefold() or metadata.get("demo_mode") == SLOPPY


class WorldCallFailed(Exception):
    """A tool answered with an error; the agent stops and says so in its output."""


class _Calls:
    """The agent's calls to the world's tools (real HTTP), kept for its honest ``toolCalls`` and
    ``trace``."""

    def __init__(self, tools: dict[str, dict[str, Any]]) -> None:
        self.tools = tools
        self.tool_calls: list[dict[str, Any]] = []
        self.trace: list[dict[str, Any]] = []

    def http(
        self,
        tool: str,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        auth: str | None = None,
        name: str | None = None,
    ) -> tuple[int, Any]:
        """One call to ``path`` below the tool's base URL; ``name`` is its name in ``toolCalls``."""
        base = str(self.tools[tool]["base_url"])
        url = base.rstrip("/") + "/" + path.lstrip("/")
        headers = {"Accept": "application/json", "User-Agent": "evalconsole-demo-agent/1"}
        if auth:
            headers["Authorization"] = auth
        data = None
        if json_body is not None:
            data = json.dumps(json_body).encode()
            headers["Content-Type"] = "application/json; charset=utf-8"
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=CALL_TIMEOUT) as response:  # noqa: S310 - the world's URL
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        except (urllib.error.URLError, OSError) as exc:
            raise WorldCallFailed(f"{tool} is unreachable ({exc})") from exc
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {"raw": raw[:200].decode(errors="replace")}
        # Paths as the world's trace writes them: below the tool's root (Slack's base URL ends in /api/).
        shown = ("/api/" if tool == "slack" else "/") + path.lstrip("/")
        self.trace.append({"tool": tool, "method": method, "path": shown, "status": status})
        self.tool_calls.append(
            {
                "name": name or f"{tool} {method} {shown}",
                "status": "succeeded" if status < 400 else "failed",
                "input": json_body if json_body is not None else {},
                "output": {"status": status},
            }
        )
        return status, body

    def slack(self, method: str, **args: Any) -> dict[str, Any]:
        token = str(self.tools["slack"].get("token", ""))
        status, body = self.http(
            "slack", "POST", method, json_body=args, auth=f"Bearer {token}", name=f"slack.{method}"
        )
        if status >= 400 or not isinstance(body, dict) or not body.get("ok"):
            error = body.get("error") if isinstance(body, dict) else None
            raise WorldCallFailed(f"Slack {method} failed ({error or f'HTTP {status}'})")
        return body

    def github(self, method: str, path: str, json_body: Any = None) -> Any:
        token = str(self.tools["github"].get("token", ""))
        status, body = self.http("github", method, path, json_body=json_body, auth=f"token {token}")
        if status >= 400:
            message = body.get("message") if isinstance(body, dict) else None
            raise WorldCallFailed(f"GitHub {method} {path} failed ({status} {message or ''})".strip())
        return body


def _slack_time(ts: str) -> str:
    """A Slack ``ts`` (the world's simulated epoch) as UTC, for the issue body."""
    try:
        return datetime.fromtimestamp(float(ts), UTC).strftime("%Y-%m-%d %H:%M UTC")
    except (TypeError, ValueError, OverflowError):
        return "unknown time"


def play_world(request: dict[str, Any], *, sloppy: bool = False) -> dict[str, Any]:
    """Play the demo scene in the request's world (real HTTP calls); the evalconsole/1 reply."""
    scenario = request["scenario"]
    tools = world_tools(request) or {}
    task = scenario.get("input") if isinstance(scenario.get("input"), str) else ""
    now = str((scenario.get("world") or {}).get("now") or "")
    calls = _Calls(tools)
    done: list[str] = []
    try:
        bot = calls.slack("auth.test")["user_id"]
        channels = calls.slack("conversations.list", types="public_channel", limit=200)["channels"]
        support = next((c for c in channels if c.get("name") == "support"), None)
        if support is None:
            raise WorldCallFailed("there is no #support channel")
        history = calls.slack("conversations.history", channel=support["id"], limit=100)["messages"]
        people = [m for m in history if m.get("user") != bot and not m.get("bot_id")]
        question = next((m for m in people if "?" in m.get("text", "")), people[0] if people else None)
        if question is None:
            raise WorldCallFailed("#support has no question from a customer")
        thread = calls.slack("conversations.replies", channel=support["id"], ts=question["ts"])["messages"]
        texts = [m.get("text", "") for m in thread if m.get("user") != bot] or [question.get("text", "")]
        done.append(f"read the question in #support and its thread ({len(thread)} message(s))")

        customer = next((m.group(1) for t in texts if (m := CUSTOMER_ID.search(t))), None)
        plan = None
        if customer and "crm" in tools:
            status, record = calls.http("crm", "GET", f"crm/customers/{customer}")
            if status < 400 and isinstance(record, dict):
                plan = record.get("plan")
            done.append(f"looked up customer {customer} in the CRM (plan {plan or 'unknown'})")

        match = REPO_NAME.search(task)
        repo = match.group(1) if match else "acme/orders"
        quoted = "\n".join(f"> {t}" for t in texts)
        body = (
            f"A customer reported in #support ({_slack_time(question['ts'])}) that the CSV export never "
            f"arrives:\n\n{quoted}\n\n"
            + (f"Customer {customer}, plan {plan}.\n" if customer else "")
            + f"Filed by the support bot at {now or 'the world start'}."
        )
        issue_request: dict[str, Any] = {"title": "CSV export never arrives", "body": body}
        if not sloppy:
            issue_request["labels"] = ["bug"]
        issue = calls.github("POST", f"repos/{repo}/issues", issue_request)
        number, link = issue.get("number"), issue.get("html_url")
        labels = ", ".join(lbl.get("name", "") for lbl in issue.get("labels") or []) or "no label"
        done.append(f"filed {repo}#{number} ({labels}): {link}")

        reply = (
            f"Thanks for reporting this, and sorry! Your CSV export is affected by a bug; I've filed it "
            f"as #{number} ({link}) and the team will follow up there."
        )
        if sloppy:
            calls.slack("chat.postMessage", channel=support["id"], text=reply)
            done.append("posted the answer in #support")
            if customer and "crm" in tools:
                calls.http(
                    "crm", "POST", f"crm/customers/{customer}/notes", json_body={"text": "CSV export bug"}
                )
                done.append(f"added a note to customer {customer} in the CRM")
        else:
            calls.slack("chat.postMessage", channel=support["id"], thread_ts=question["ts"], text=reply)
            done.append("answered her in her thread")
        output = "Done: " + "; ".join(done) + "."
    except (WorldCallFailed, KeyError, TypeError) as exc:
        why = str(exc) if isinstance(exc, WorldCallFailed) else f"an unexpected answer ({exc!r})"
        output = ("Done so far: " + "; ".join(done) + ". " if done else "") + f"Stopped: {why}."
    messages = [m for m in scenario.get("messages") or [] if isinstance(m, dict)] or [
        {"role": "user", "content": task}
    ]
    return {
        "output": output,
        "toolCalls": calls.tool_calls,
        "trace": calls.trace,
        "messages": [*messages, {"role": "assistant", "content": output}],
    }


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
            return self._send(200, play_world(request, sloppy=wants_sloppy(request, self.path)))
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
