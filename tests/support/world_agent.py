"""A scripted agent for scenes: a real local HTTP server speaking evalconsole/1 that, given the
scenario's ``world``, makes real HTTP calls (httpx) to the world's tools and then replies.

``WorldAgent(plan)`` picks what it does by name (``PLANS``). Each tool's moves are one function
(``crm_*`` today; a Slack plan would be one function driving ``slack_sdk.WebClient(base_url=...)``,
a GitHub plan one driving PyGithub), so adding a tool's mode never touches the server.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

Tools = dict[str, dict[str, str]]


def crm_lookup(tools: Tools, http: httpx.Client) -> None:
    http.get(tools["crm"]["base_url"] + "crm/customers/42")


def crm_write(tools: Tools, http: httpx.Client) -> None:
    crm_lookup(tools, http)
    http.post(tools["crm"]["base_url"] + "crm/customers/42/notes", json={"text": "called back"})


def crm_spam(tools: Tools, http: httpx.Client) -> None:
    """501 calls: one over the call budget."""
    for i in range(501):
        http.get(tools["crm"]["base_url"] + f"crm/customers/{i}")


def nothing(tools: Tools, http: httpx.Client) -> None:
    pass


def slow(tools: Tools, http: httpx.Client) -> None:
    """One lookup, then longer than the test's agent timeout."""
    crm_lookup(tools, http)
    time.sleep(3)


def _slack(tools: Tools, http: httpx.Client, method: str, **args: Any) -> dict[str, Any]:
    slack = tools["slack"]
    answer = http.post(
        slack["base_url"] + method, data=args, headers={"Authorization": f"Bearer {slack['token']}"}
    )
    return answer.json()


def _question(tools: Tools, http: httpx.Client) -> tuple[str, dict[str, Any]]:
    channels = _slack(tools, http, "conversations.list")["channels"]
    support = next(c for c in channels if c["name"] == "support")
    history = _slack(tools, http, "conversations.history", channel=support["id"])
    return support["id"], history["messages"][-1]


def slack_answer(tools: Tools, http: httpx.Client) -> None:
    """Read #support and answer its question in the question's thread."""
    channel, question = _question(tools, http)
    _slack(
        tools, http, "chat.postMessage", channel=channel, thread_ts=question["ts"], text="Exports are back."
    )


def slack_top_level(tools: Tools, http: httpx.Client) -> None:
    """Read #support and answer in the channel, not in the thread (a miss for in_thread_of)."""
    channel, _ = _question(tools, http)
    _slack(tools, http, "chat.postMessage", channel=channel, text="Exports are back.")


PLANS: dict[str, Callable[[Tools, httpx.Client], None]] = {
    "slack_answer": slack_answer,
    "slack_top_level": slack_top_level,
    "crm_lookup": crm_lookup,
    "crm_write": crm_write,
    "crm_spam": crm_spam,
    "nothing": nothing,
    "slow": slow,
}


class WorldAgent:
    """``with WorldAgent("crm_lookup") as agent: agent.url``. ``plan="error"`` answers HTTP 500; a list
    of plans is played one per call, cycling. ``requests`` holds every evalconsole/1 body received."""

    def __init__(self, plan: str | list[str] = "crm_lookup") -> None:
        self.plans = [plan] if isinstance(plan, str) else list(plan)  # a list: one plan per call, cycling
        self.requests: list[dict[str, Any]] = []
        agent = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                agent.requests.append(body)
                plan = agent.plans[(len(agent.requests) - 1) % len(agent.plans)]
                if plan == "error":
                    return self._send(500, {"error": "the agent broke"})
                tools = body["scenario"]["world"]["tools"]
                with httpx.Client(timeout=30) as http:
                    PLANS[plan](tools, http)
                self._send(200, {"output": f"done ({plan})"})

            def _send(self, status: int, data: Any) -> None:
                content = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(content)))
                try:
                    self.end_headers()
                    self.wfile.write(content)
                except (BrokenPipeError, ConnectionResetError):  # the caller gave up (its timeout)
                    pass

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/"

    def __enter__(self) -> WorldAgent:
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
