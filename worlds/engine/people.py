"""People in a world (WORLDS.md "People"): simulated humans who read the messages that reach them,
learn facts, reveal their own facts when the agent asks, take decisions, and answer in the tool where
they were asked, after ``reply_after`` in simulated time. Deterministic: the engine decides, never a
model; the same scene and calls give the same events.

The world hands every ``message`` / ``message_edited`` event to :meth:`People.hear` as it is recorded
(Slack posts, GitHub issues and comments, edits, fault messages, people's own replies). Hearing one
message: who it reaches (a DM to them, a mention of a member, a thread they are in, a channel they
listen to; on GitHub an issue or pull request they opened, are assigned to, commented on or were
mentioned in), then for each person reached, in the scene's order: learning (every ``match`` phrase
of a fact they do not know yet), revealing (an agent message holding an ``asked_by`` phrase of their
own fact: one reply per asked fact, in declared order), deciding (every ``after`` fact known and, with
``asked_by``, asked by the agent). Replies are scheduled; the world applies each when it is due
(before the first agent call at or after its time, or at once when due now), posting it as the person
and recording ``revealed`` / ``decided`` then. ``learned`` is recorded when the message reached them.

The progress is small, plain data in the world's head (``People.state``), so restored worlds carry on.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from .clock import iso, parse_iso
from .voice import speak

if TYPE_CHECKING:  # pragma: no cover
    from .events import Event
    from .scene import Person
    from .world import World

__all__ = ["People", "contains", "normalise"]

AT_LOGIN = re.compile(r"(?<![\w@])@([A-Za-z0-9](?:[A-Za-z0-9-]{0,38}))")
HEARD = ("message", "message_edited")


def normalise(text: str) -> str:
    """Casefolded, every run of whitespace one space (WORLDS.md "Phrases")."""
    return " ".join(text.casefold().split())


@lru_cache(maxsize=4096)
def _phrase(phrase: str) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)" + re.escape(normalise(phrase)) + r"(?!\w)")


def contains(text: str, phrase: str) -> bool:
    """Whether ``phrase`` is in ``text`` with a word boundary on each side, ignoring case and spacing
    (``text`` already :func:`normalise`-d)."""
    return bool(phrase.strip()) and _phrase(phrase).search(text) is not None


def fact_key(person: str, fact: str) -> str:
    return f"{person}.{fact}"


class People:
    """The people of one world and what happened to them (``state``)."""

    def __init__(self, world: World, state: dict[str, Any] | None = None) -> None:
        self.world = world
        self.people: dict[str, Person] = world.scene.people
        self.state: dict[str, Any] = (
            state if state else {"learned": {}, "revealed": {}, "decided": {}, "asked": {}, "pending": []}
        )
        self._slack_ids: dict[str, str] | None = None
        self._logins: dict[str, str] | None = None

    def __bool__(self) -> bool:
        return bool(self.people)

    # -- who is who ----------------------------------------------------------------------------------
    def slack_id(self, person: str) -> str | None:
        if self._slack_ids is None:
            self._slack_ids = {ref: self.world.ids.get(p.slack) for ref, p in self.people.items() if p.slack}
        return self._slack_ids.get(person)

    def login(self, person: str) -> str | None:
        if self._logins is None:
            users = (self.world.states.get("github") or {}).get("users") or {}
            by_id = {u.get("id"): login for login, u in users.items()}
            self._logins = {
                ref: by_id.get(self.world.ids.get(p.github)) for ref, p in self.people.items() if p.github
            }
        return self._logins.get(person)

    def person_of(self, event: Mapping[str, Any]) -> str | None:
        """The person who wrote a message event (None: the agent or a user who is no person)."""
        user = event.get("user")
        for ref in self.people:
            if (event.get("tool") == "slack" and user == self.slack_id(ref)) or (
                event.get("tool") == "github" and user == self.login(ref)
            ):
                return ref
        return None

    def from_agent(self, event: Mapping[str, Any]) -> bool:
        tool = event.get("tool")
        bot = (self.world.states.get(tool) or {}).get("bot") if tool in ("slack", "github") else None
        return bot is not None and event.get("user") == bot

    # -- knowing -------------------------------------------------------------------------------------
    def knows(self, person: str, key: str) -> bool:
        owner = key.partition(".")[0]
        return owner == person or key in self.state["learned"].get(person, {})

    def known_at(self, person: str, key: str) -> datetime | None:
        """When ``person`` came to know ``key`` (the start for their own facts); None if they do not."""
        if key.partition(".")[0] == person:
            return self.world.clock.start
        record = self.state["learned"].get(person, {}).get(key)
        return parse_iso(record["at"]) if record else None

    # -- hearing -------------------------------------------------------------------------------------
    def hear(self, event: Event) -> None:
        """A message was written (or edited): learning, revealing and deciding for whoever it reaches."""
        if event.type not in HEARD or not self.people:
            return
        data = event.data
        reached = self.reach(data)
        text = normalise(str(data.get("canonical") or data.get("text") or ""))
        author = self.person_of(data)
        agent = self.from_agent(data)
        data["to"] = reached  # the event carries whom it reached (events.json, selectors, the timeline)
        if author is not None:
            data["by"] = author  # and the person who wrote it
        for ref in reached:
            person = self.people[ref]
            self._learn(ref, text, event, author)
            if agent:
                self._reveal(ref, person, text, event)
                self._note_asked(ref, person, text, event)
            self._decide(ref, person, event)

    def _learn(self, ref: str, text: str, event: Event, author: str | None) -> None:
        for owner_ref, owner in self.people.items():
            for fact in owner.facts.values():
                key = fact_key(owner_ref, fact.id)
                if not fact.match or self.knows(ref, key):
                    continue
                if all(contains(text, phrase) for phrase in fact.match):
                    learned = self.world.events.add(
                        "learned",
                        event.at,
                        person=ref,
                        fact=key,
                        message=event.n,
                        source=author or ("agent" if self.from_agent(event.data) else "other"),
                    )
                    self.state["learned"].setdefault(ref, {})[key] = {
                        "at": iso(event.at),
                        "event": learned.n,
                        "message": event.n,
                    }

    def _reveal(self, ref: str, person: Person, text: str, event: Event) -> None:
        for fact in person.facts.values():
            if any(contains(text, phrase) for phrase in fact.asked_by):
                self._schedule(ref, person, "reveal", fact_key(ref, fact.id), fact.says, event)

    def _note_asked(self, ref: str, person: Person, text: str, event: Event) -> None:
        for decision in person.decisions.values():
            key = fact_key(ref, decision.id)
            if key in self.state["asked"]:
                continue
            if any(contains(text, phrase) for phrase in decision.asked_by):
                self.state["asked"][key] = {"message": event.n, "place": self._place(event)}

    def _decide(self, ref: str, person: Person, event: Event) -> None:
        for decision in person.decisions.values():
            key = fact_key(ref, decision.id)
            if key in self.state["decided"] or any(p["key"] == key for p in self.state["pending"]):
                continue
            if not all(self.knows(ref, fact_key(*after)) for after in decision.after):
                continue
            if decision.asked_by:
                asked = self.state["asked"].get(key)
                if asked is None:
                    continue
                place, asking = asked["place"], asked["message"]
            else:
                place, asking = self._place(event), event.n
            self._schedule(ref, person, "decide", key, decision.says, event, place=place, asking=asking)

    def _schedule(
        self,
        ref: str,
        person: Person,
        kind: str,
        key: str,
        says: str,
        event: Event,
        *,
        place: dict[str, Any] | None = None,
        asking: int | None = None,
    ) -> None:
        delay = person.reply_after if person.reply_after is not None else self.world.clock.per_call
        self.state["pending"].append(
            {
                "due": iso(event.at + delay),
                "person": ref,
                "kind": kind,
                "key": key,
                "says": says,
                "place": place or self._place(event),
                "asking": asking or event.n,
                "asked_text": str(event.data.get("text") or "")[:2000],
            }
        )

    # -- where a reply goes --------------------------------------------------------------------------
    def _place(self, event: Event) -> dict[str, Any]:
        data = event.data
        if data.get("tool") == "github":
            return {"tool": "github", "repo": data["repo_name"], "number": data["number"]}
        thread = data.get("thread_ts")
        channel = ((self.world.states.get("slack") or {}).get("channels") or {}).get(data["channel"]) or {}
        if channel.get("is_im") and not thread:  # asked in a DM: answered in the DM
            return {"tool": "slack", "channel": data["channel"], "thread_ts": None}
        return {"tool": "slack", "channel": data["channel"], "thread_ts": thread or data.get("ts")}

    def reach(self, data: Mapping[str, Any]) -> list[str]:
        """The people a message reaches, in the scene's order (never its author)."""
        author = self.person_of(data)
        if data.get("tool") == "github":
            return self._github_reach(data, author)
        if data.get("tool") == "slack":
            return self._slack_reach(data, author)
        return []

    def _slack_reach(self, data: Mapping[str, Any], author: str | None) -> list[str]:
        slack = self.world.states.get("slack") or {}
        channel = (slack.get("channels") or {}).get(data.get("channel")) or {}
        members = set(channel.get("members") or ())
        if channel.get("is_im"):
            members |= {channel.get("user"), slack.get("bot")}
        mentions = set(data.get("mentions") or ())
        thread, ts = data.get("thread_ts"), data.get("ts")
        is_reply = bool(thread) and thread != ts
        participants: set[str] = set()
        if is_reply:
            for message in slack.get("messages") or ():
                if (
                    message["channel"] == data.get("channel")
                    and message["ts"] != ts
                    and (message["ts"] == thread or message.get("thread_ts") == thread)
                ):
                    participants.add(message["user"])
        out = []
        for ref, person in self.people.items():
            uid = self.slack_id(ref)
            if ref == author or uid is None:
                continue
            direct = channel.get("is_im") and channel.get("user") == uid
            direct = direct or (channel.get("is_mpim") and uid in members)
            mentioned = uid in mentions and uid in members
            if is_reply:
                listens = uid in participants
            else:
                listens = any(self.world.ids.get(c) == data.get("channel") for c in person.listens)
            if direct or mentioned or listens:
                out.append(ref)
        return out

    def _github_reach(self, data: Mapping[str, Any], author: str | None) -> list[str]:
        participants = set(data.get("participants") or ())
        mentioned = {m.casefold() for m in AT_LOGIN.findall(str(data.get("text") or ""))}
        out = []
        for ref in self.people:
            login = self.login(ref)
            if ref == author or login is None:
                continue
            if login in participants or login.casefold() in mentioned:
                out.append(ref)
        return out

    # -- replies -------------------------------------------------------------------------------------
    def next_due(self) -> datetime | None:
        pending = self.state["pending"]
        return min((parse_iso(p["due"]) for p in pending), default=None)

    def apply_due(self, until: datetime) -> bool:
        """Apply the earliest reply due at or before ``until``; whether there was one."""
        pending = self.state["pending"]
        due = [(parse_iso(p["due"]), i) for i, p in enumerate(pending) if parse_iso(p["due"]) <= until]
        if not due:
            return False
        at, index = min(due)
        reply = pending.pop(index)
        self._reply(reply, at)
        return True

    def _reply(self, reply: dict[str, Any], at: datetime) -> None:
        ref, place = reply["person"], reply["place"]
        events = self.world.events
        person = self.people[ref]
        says = reply["says"]
        voice = self.world.voice if person.voice == "llm" else None
        text = speak(voice, person.persona, reply.get("asked_text", ""), says)
        canonical = says if text != says else None
        if place["tool"] == "github":
            sim = self.world.simulator("github")
            login = self.login(ref)
            if sim is None or login is None:
                return
            posted_n = len(events) + 1
            sim.post_comment(place["repo"], place["number"], login, text, at=at, canonical=canonical)
        else:
            sim = self.world.simulator("slack")
            uid = self.slack_id(ref)
            if sim is None or uid is None:
                return
            posted_n = len(events) + 1
            sim.post(
                place["channel"], uid, text, thread_ts=place.get("thread_ts"), at=at, canonical=canonical
            )
        key = reply["key"]
        if reply["kind"] == "reveal":
            if key not in self.state["revealed"]:
                event = events.add(
                    "revealed", at, person=ref, fact=key, asked=reply["asking"], reply=posted_n
                )
                self.state["revealed"][key] = {"at": iso(at), "event": event.n, "asked": reply["asking"]}
        elif key not in self.state["decided"]:
            decision = self.people[ref].decisions[key.partition(".")[2]]
            event = events.add(
                "decided",
                at,
                person=ref,
                decision=decision.id,
                option=decision.choose,
                asked=reply["asking"],
                reply=posted_n,
            )
            self.state["decided"][key] = {
                "at": iso(at),
                "event": event.n,
                "option": decision.choose,
                "asked": reply["asking"],
            }
