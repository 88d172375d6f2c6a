"""A trial's timeline (WORLDS.md "Results"; the run page and ``scene explain``): one line per event,
in order, with its simulated time: the agent's calls, messages and whom they reached, facts revealed
and learned, decisions, fault and incident changes. Built from the events as ``events.json`` holds
them, so the console and the command line say the same thing."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["timeline"]


def _short(text: Any, limit: int = 120) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _where(e: Mapping[str, Any]) -> str:
    if e.get("tool") == "github":
        kind = "pull request" if e.get("pull") else "issue"
        return f"{e.get('repo_name')}#{e.get('number')} ({e.get('kind') or kind})"
    where = e.get("conversation") or e.get("channel") or "Slack"
    if where == f"DM with {_who(e)}":  # a person writing in the DM the agent has with them
        where = "their DM with the agent"
    if e.get("thread_ts") and e.get("thread_ts") != e.get("ts"):
        where += ", in a thread"
    return where


def _who(e: Mapping[str, Any]) -> str:
    """The agent (its messages come from its calls), a person, or the user as the tool names them."""
    if e.get("seq"):
        return "the agent"
    return str(e.get("by") or e.get("from") or e.get("user") or "someone")


class _Fields(dict):
    """An event's fields for a sentence template; a field the event lacks reads as None (as e.get does)."""

    def __missing__(self, key: str) -> None:
        return None


# The sentences that only fill in an event's fields; the others are built in _line.
_SENTENCES = {
    "call": "call {seq}: {tool} {method} {path} → {status}",
    "learned": "{person} learned {fact} (from {source}, event {message})",
    "revealed": "{person} revealed {fact} when asked (event {asked})",
    "decided": "{person} decided {decision}: {option}",
    "trial_ended": "the trial ended ({reason})",
}


def _line(e: Mapping[str, Any]) -> str:  # noqa: C901 - one branch per event type
    kind = e.get("type")
    sentence = _SENTENCES.get(kind) if isinstance(kind, str) else None
    if sentence is not None:
        return sentence.format_map(_Fields(e))
    if kind == "message":
        reached = e.get("to")
        to = f" → reached {', '.join(reached)}" if reached else (" → reached no one" if reached == [] else "")
        return f"{_who(e)} in {_where(e)}: “{_short(e.get('text'))}”{to}"
    if kind == "message_edited":
        return f"{_who(e)} edited a message in {_where(e)}: “{_short(e.get('text'))}”"
    if kind == "message_deleted":
        return f"a message in {_where(e)} was deleted"
    if kind == "fault_started":
        effects = ", ".join(e.get("effects") or ()) or "no effects"
        return f"fault {e.get('fault')} started ({effects})"
    if kind == "fault_resolved":
        by = f" by call {e.get('seq')}" if e.get("seq") else ""
        return f"fault {e.get('fault')} resolved{by}"
    if kind == "incident_changed":
        label = e.get("ref") or e.get("incident") or e.get("id")
        number = f"#{e['number']} " if e.get("number") else ""
        return f"incident {number}{label}: {e.get('from') or 'new'} → {e.get('to')}"
    if kind == "monitor_changed":
        return f"monitor {e.get('name') or e.get('monitor')}: {e.get('from')} → {e.get('to')}"
    if kind == "issue_labeled":
        return f"{e.get('repo_name')}#{e.get('number')} labeled {', '.join(e.get('labels') or ())}"
    return str(kind)


def timeline(events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``[{"n", "at", "time", "type", "line", "seq"}]``, one per event (``time``: ``HH:MM:SS``)."""
    rows = []
    for e in events:
        at = str(e.get("at") or "")
        rows.append(
            {
                "n": e.get("n"),
                "at": at,
                "time": at[11:19] if len(at) >= 19 else at,
                "type": e.get("type"),
                "line": _line(e),
                "seq": e.get("seq"),
            }
        )
    return rows
