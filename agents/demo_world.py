"""The demo agent's world mode (standard library only, deterministic): it plays the demo scenes for
real, over HTTP (``urllib``), against the world's simulated APIs (WORLDS.md "How a trial runs").
:func:`play` picks the playbook from the world's tools.

**Support** (``worlds/scenes/support-export.yaml``; a world with ``slack`` and ``github``):
``auth.test``, ``conversations.list`` to find #support, ``conversations.history`` for the customer's
question (the latest top-level question not from the bot), ``conversations.replies`` to read her
thread, ``GET /crm/customers/<id>`` when the thread names a customer id and the world has a ``crm``
(read only), ``POST /repos/<owner>/<repo>/issues`` (the repository named in the task, label ``bug``),
then ``chat.postMessage`` with ``thread_ts`` answering her with the issue's link.

**Incident** (``worlds/scenes/orders-5xx.yaml``; a world that also has ``datadog`` and ``pagerduty``):
Datadog ``GET /api/v1/monitor`` for the monitor in Alert; PagerDuty ``GET /incidents`` for the open
incident and ``PUT /incidents/{id}`` to acknowledge it (``From``: the email the task names); Datadog
``POST /api/v2/downtime`` muting that one monitor for 10 minutes from the acknowledgement; GitHub
``GET .../deployments?environment=production``, the deployed commit and its parent, then a production
deployment of the parent with a ``success`` status (the rollback); PagerDuty ``PUT /incidents/{id}``
to resolve it, and a note in #eng.

Its only "now" is the world's (``world.now``, message timestamps, the tools' times); ``output`` says
what it did.

**Triage** (``worlds/scenes/support-triage.yaml``; a scene whose name holds "triage"): it asks the
customer in her thread, asks Ben in #eng with what she said, asks Mike for a priority by direct
message with Ben's cause, files the bug labeled with that priority, and gives her Ben's workaround.

**Sloppy mode** makes the mistakes the demo scenes catch. Support: it answers top-level in #support
instead of in her thread, files the issue without the ``bug`` label and writes a note into the CRM.
Incident: it forgets the rollback (and resolves the incident anyway). Triage: it also tells the
customer the root cause. It is chosen by any of:

- the request path ending in ``/sloppy`` (``scene run ... --agent http://127.0.0.1:8001/sloppy``, or
  a second agent registered in the console with that endpoint URL);
- the scenario's name containing ``sloppy`` (a scene named ``support-export-sloppy``);
- ``scenario.metadata.demo_mode == "sloppy"``.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from datetime import UTC, datetime, timedelta
from typing import Any

__all__ = ["WorldCallFailed", "play", "play_incident", "play_world", "wants_sloppy", "world_tools"]

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
        headers: dict[str, str] | None = None,
    ) -> tuple[int, Any]:
        """One call to ``path`` below the tool's base URL; ``name`` is its name in ``toolCalls``."""
        base = str(self.tools[tool]["base_url"])
        url = base.rstrip("/") + "/" + path.lstrip("/")
        headers = {"Accept": "application/json", "User-Agent": "evalconsole-demo-agent/1", **(headers or {})}
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

    def reply(self, scenario: dict[str, Any], task: str, output: str) -> dict[str, Any]:
        """The evalconsole/1 reply: the output, these calls as toolCalls and trace, the conversation."""
        messages = [m for m in scenario.get("messages") or [] if isinstance(m, dict)] or [
            {"role": "user", "content": task}
        ]
        return {
            "output": output,
            "toolCalls": self.tool_calls,
            "trace": self.trace,
            "messages": [*messages, {"role": "assistant", "content": output}],
        }

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


def _stopped(done: list[str], exc: Exception) -> str:
    """The output of a playbook that stopped: what it did so far and why it stopped."""
    why = str(exc) if isinstance(exc, WorldCallFailed) else f"an unexpected answer ({exc!r})"
    return ("Done so far: " + "; ".join(done) + ". " if done else "") + f"Stopped: {why}."


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
        output = _stopped(done, exc)
    return calls.reply(scenario, task, output)


# ----------------------------------------------------------------------------- incident

EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")
INCIDENT_TOOLS = ("datadog", "pagerduty")
MUTE_FOR = timedelta(minutes=10)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse_time(text: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).astimezone(UTC)
    except ValueError:
        return None


class _IncidentCalls(_Calls):
    """The incident tools, each with its own authentication (Datadog keys, PagerDuty token + From)."""

    def __init__(self, tools: dict[str, dict[str, Any]], email: str) -> None:
        super().__init__(tools)
        self.email = email

    def datadog(self, method: str, path: str, json_body: Any = None) -> Any:
        creds = self.tools["datadog"]
        keys = {
            "DD-API-KEY": str(creds.get("api_key", "")),
            "DD-APPLICATION-KEY": str(creds.get("app_key", "")),
        }
        status, body = self.http("datadog", method, path, json_body=json_body, headers=keys)
        if status >= 400:
            raise WorldCallFailed(f"Datadog {method} {path} failed ({status} {body})")
        return body

    def pagerduty(self, method: str, path: str, json_body: Any = None) -> Any:
        token = str(self.tools["pagerduty"].get("token", ""))
        headers = {"Accept": "application/vnd.pagerduty+json;version=2"}
        if method != "GET":
            headers["From"] = self.email
        status, body = self.http(
            "pagerduty", method, path, json_body=json_body, auth=f"Token token={token}", headers=headers
        )
        if status >= 400:
            raise WorldCallFailed(f"PagerDuty {method} {path} failed ({status} {body})")
        return body


def play_incident(request: dict[str, Any], *, sloppy: bool = False) -> dict[str, Any]:
    """Handle the orders 5xx incident in the request's world (real HTTP calls); the evalconsole/1
    reply. Sloppy: no rollback."""
    scenario = request["scenario"]
    tools = world_tools(request) or {}
    task = scenario.get("input") if isinstance(scenario.get("input"), str) else ""
    email = (EMAIL.search(task) or EMAIL.search("bot@example.invalid")).group(0)
    calls = _IncidentCalls(tools, email)
    done: list[str] = []
    try:
        monitors = calls.datadog("GET", "api/v1/monitor")
        alerting = [m for m in monitors if isinstance(m, dict) and m.get("overall_state") == "Alert"]
        if not alerting:
            raise WorldCallFailed("no Datadog monitor is in Alert")
        monitor = alerting[0]
        done.append(f"found monitor {monitor.get('name')!r} in Alert")

        listed = calls.pagerduty("GET", "incidents?statuses[]=triggered&statuses[]=acknowledged")
        incidents = listed.get("incidents") or []
        if not incidents:
            raise WorldCallFailed("PagerDuty has no open incident")
        incident = incidents[0]
        changed = calls.pagerduty(
            "PUT",
            f"incidents/{incident['id']}",
            {"incident": {"type": "incident_reference", "status": "acknowledged"}},
        )["incident"]
        done.append(f"acknowledged incident #{incident.get('incident_number')} ({incident.get('title')})")

        now = _parse_time(changed.get("last_status_change_at")) or _parse_time(
            (scenario.get("world") or {}).get("now")
        )
        if now is None:
            raise WorldCallFailed("no time to mute from")
        calls.datadog(
            "POST",
            "api/v2/downtime",
            {
                "data": {
                    "type": "downtime",
                    "attributes": {
                        "monitor_identifier": {"monitor_id": monitor["id"]},
                        "scope": "*",
                        "schedule": {"end": _iso(now + MUTE_FOR)},
                        "message": f"Muted while incident #{incident.get('incident_number')} is handled.",
                    },
                }
            },
        )
        done.append(f"muted the monitor until {_iso(now + MUTE_FOR)}")

        match = REPO_NAME.search(task)
        repo = match.group(1) if match else "acme/orders"
        if not sloppy:
            deployments = calls.github("GET", f"repos/{repo}/deployments?environment=production")
            if not deployments:
                raise WorldCallFailed(f"{repo} has no production deployment")
            bad = deployments[0]["sha"]
            parents = calls.github("GET", f"repos/{repo}/commits/{bad}").get("parents") or []
            if not parents:
                raise WorldCallFailed(f"production commit {bad[:7]} has no parent to roll back to")
            good = parents[0]["sha"]
            deployment = calls.github(
                "POST",
                f"repos/{repo}/deployments",
                {
                    "ref": good,
                    "environment": "production",
                    "required_contexts": [],
                    "auto_merge": False,
                    "description": f"roll back {bad[:7]}",
                },
            )
            calls.github(
                "POST", f"repos/{repo}/deployments/{deployment['id']}/statuses", {"state": "success"}
            )
            done.append(f"rolled production of {repo} back from {bad[:7]} to {good[:7]}")

        calls.pagerduty(
            "PUT",
            f"incidents/{incident['id']}",
            {"incident": {"type": "incident_reference", "status": "resolved"}},
        )
        done.append("resolved the incident")

        if "slack" in tools:
            channels = calls.slack("conversations.list", types="public_channel", limit=200)["channels"]
            eng = next((c for c in channels if c.get("name") == "eng"), None)
            if eng is not None:
                what = "rolled back production and resolved" if not sloppy else "resolved"
                calls.slack(
                    "chat.postMessage",
                    channel=eng["id"],
                    text=f"Orders 5xx: I {what} incident #{incident.get('incident_number')}; "
                    f"{monitor.get('name')} is muted until {_iso(now + MUTE_FOR)}.",
                )
                done.append("told #eng")
        output = "Done: " + "; ".join(done) + "."
    except (WorldCallFailed, KeyError, TypeError, IndexError, AttributeError) as exc:
        output = _stopped(done, exc)
    return calls.reply(scenario, task, output)


# ----------------------------------------------------------------------------- triage (people)

PRIORITY = re.compile(r"\bP([1-5])\b", re.IGNORECASE)
TRIAGE = "triage"


def _after(messages: list[dict[str, Any]], ts: str, bot: str) -> list[str]:
    """The texts of the messages after ``ts`` not written by the bot, oldest first."""
    later = [m for m in messages if _ts(m.get("ts")) > _ts(ts) and m.get("user") != bot]
    return [m.get("text", "") for m in sorted(later, key=lambda m: _ts(m.get("ts")))]


def _ts(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def play_triage(request: dict[str, Any], *, sloppy: bool = False) -> dict[str, Any]:
    """Triage with the people of the world (worlds/scenes/support-triage.yaml): ask the customer in
    her thread, ask Ben in #eng, ask Mike for a priority by DM, file and label the bug, and give her
    the workaround. Sloppy: it also tells her the root cause."""
    scenario = request["scenario"]
    tools = world_tools(request) or {}
    task = scenario.get("input") if isinstance(scenario.get("input"), str) else ""
    calls = _Calls(tools)
    done: list[str] = []
    try:
        bot = calls.slack("auth.test")["user_id"]
        channels = {c.get("name"): c for c in calls.slack("conversations.list", limit=200)["channels"]}
        support, eng = channels.get("support"), channels.get("eng")
        if support is None or eng is None:
            raise WorldCallFailed("there is no #support or #eng channel")
        history = calls.slack("conversations.history", channel=support["id"], limit=100)["messages"]
        question = next((m for m in history if m.get("user") != bot and "?" in m.get("text", "")), None)
        if question is None:
            raise WorldCallFailed("#support has no question from a customer")
        asked = calls.slack(
            "chat.postMessage",
            channel=support["id"],
            thread_ts=question["ts"],
            text="Sorry about that! Which workspace is it, and is the beta flag on?",
        )["ts"]
        thread = calls.slack("conversations.replies", channel=support["id"], ts=question["ts"])["messages"]
        details = " ".join(_after(thread, asked, bot))
        done.append(f"asked the customer in her thread ({details or 'no answer'})")

        to_ben = calls.slack(
            "chat.postMessage",
            channel=eng["id"],
            text=f"Ben: a customer can't get CSV exports ({details}). "
            "What's the cause, and is there a workaround?",
        )["ts"]
        answers = _after(
            calls.slack("conversations.replies", channel=eng["id"], ts=to_ben)["messages"], to_ben, bot
        )
        if len(answers) < 2:
            raise WorldCallFailed("Ben gave no cause and workaround")
        cause, workaround = answers[0], answers[1]
        done.append(f"asked Ben in #eng: {cause} {workaround}")

        users = calls.slack("users.list", limit=200)["members"]
        mike = next((u for u in users if u.get("name") == "mike"), None)
        if mike is None:
            raise WorldCallFailed("there is no Mike to ask for a priority")
        dm = calls.slack("conversations.open", users=mike["id"])["channel"]["id"]
        to_mike = calls.slack(
            "chat.postMessage",
            channel=dm,
            text=f"Ben found the cause: {cause} What severity should we give it?",
        )["ts"]
        said = " ".join(
            _after(calls.slack("conversations.history", channel=dm, limit=20)["messages"], to_mike, bot)
        )
        match = PRIORITY.search(said)
        priority = f"p{match.group(1)}" if match else "p3"
        done.append(f"Mike set the priority: {priority}")

        repo_match = REPO_NAME.search(task)
        repo = repo_match.group(1) if repo_match else "acme/orders"
        issue = calls.github(
            "POST",
            f"repos/{repo}/issues",
            {
                "title": "CSV exports never arrive for beta workspaces",
                "body": f"Cause: {cause}\nWorkaround: {workaround}",
            },
        )
        calls.github("POST", f"repos/{repo}/issues/{issue['number']}/labels", {"labels": [priority]})
        done.append(f"filed {repo}#{issue['number']} labeled {priority}")

        reply = f"Thanks! We're on it. Until the fix ships: {workaround}"
        if sloppy:
            reply = f"Thanks! The cause: {cause} Until the fix ships: {workaround}"
        calls.slack("chat.postMessage", channel=support["id"], thread_ts=question["ts"], text=reply)
        done.append("gave her the workaround in her thread")
        output = "Done: " + "; ".join(done) + "."
    except (WorldCallFailed, KeyError, TypeError, IndexError, AttributeError) as exc:
        output = _stopped(done, exc)
    return calls.reply(scenario, task, output)


def play(request: dict[str, Any], path: str = "/") -> dict[str, Any]:
    """The playbook for the request's world: incident when it has Datadog and PagerDuty, triage with
    people when the scene's name says so, else support."""
    tools = world_tools(request) or {}
    sloppy = wants_sloppy(request, path)
    scenario = request.get("scenario") if isinstance(request.get("scenario"), dict) else {}
    name = scenario.get("name") if isinstance(scenario.get("name"), str) else ""
    if all(isinstance(tools.get(t), dict) for t in INCIDENT_TOOLS):
        return play_incident(request, sloppy=sloppy)
    if TRIAGE in name:
        return play_triage(request, sloppy=sloppy)
    return play_world(request, sloppy=sloppy)
