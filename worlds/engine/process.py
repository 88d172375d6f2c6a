"""Process checks (WORLDS.md "Checks"; the reference's Process checks, Message selectors and
Milestones): what happened between the agent and the people, read from the world's records (events,
the people's state, the trace), never from the text a model wrote.

:func:`evaluate_process` answers one check as a :class:`~worlds.engine.results.StateResult`, citing its
trace ``seq`` numbers (evidence) and event numbers. Messages are the ``message`` events written during
the trial (the seed is never an event), on Slack and in GitHub issues, pull requests and comments; an
edit is another version of its message (``never`` fails if any version ever matched).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from checks.kinds._common import spoken_list
from checks.kinds.trace import compile_pattern

from .clock import iso, parse_iso
from .results import StateResult

if TYPE_CHECKING:  # pragma: no cover
    from .events import Event
    from .world import World

__all__ = ["Moment", "evaluate_process", "message_matches", "milestone", "selector_text"]


@dataclass(frozen=True)
class Moment:
    """When a milestone first happened, with what cites it."""

    at: datetime
    evidence: tuple[int, ...] = ()
    events: tuple[int, ...] = ()


def _key(fact: Any) -> str:
    return f"{fact[0]}.{fact[1]}" if isinstance(fact, (list, tuple)) else str(fact)


# -- messages ---------------------------------------------------------------------------------------


def _messages(world: World) -> list[Event]:
    """Every message version written during the trial, in order (posts and edits)."""
    return [e for e in world.events if e.type in ("message", "message_edited") and "text" in e.data]


def _identity(event: Event) -> tuple:
    d = event.data
    if d.get("tool") == "slack":
        return ("slack", d.get("channel"), d.get("ts"))
    return ("github", d.get("repo"), d.get("number"), d.get("comment_id") or d.get("kind"))


class _Selector:
    """A message selector resolved against a world: each field a test on a message event and the words
    that say what a miss lacked."""

    def __init__(self, world: World, spec: Mapping[str, Any]) -> None:
        self.world = world
        self.tests: list[tuple[str, Any, str]] = []  # (field, test, "is not ...")
        ids = world.ids
        if spec.get("to"):
            person = spec["to"]
            self.tests.append(("to", lambda e: person in _reached(world, e), f"does not reach {person}"))
        if spec.get("in"):
            where = self._place(spec["in"])
            self.tests.append(("in", where, f"is not in {spec['in']}"))
        if spec.get("in_thread_of"):
            root = self._thread_root(spec["in_thread_of"])
            parent = ids.get(spec["in_thread_of"])

            def in_thread(e: Event) -> bool:
                d = e.data
                return (
                    d.get("tool") == "slack"
                    and d.get("thread_ts") == root
                    and d.get("ts") not in (root, parent)
                )

            self.tests.append(
                ("in_thread_of", in_thread, f"is not a reply in the thread of {spec['in_thread_of']}")
            )
        if spec.get("from"):
            authors = self._authors(spec["from"])
            self.tests.append(
                (
                    "from",
                    lambda e: (e.data.get("tool"), e.data.get("user")) in authors,
                    f"is not from {spec['from']}",
                )
            )
        if spec.get("text_contains"):
            needles = (
                [spec["text_contains"]] if isinstance(spec["text_contains"], str) else spec["text_contains"]
            )
            folded = [n.casefold() for n in needles]
            self.tests.append(
                (
                    "text_contains",
                    lambda e: all(n in str(e.data.get("text") or "").casefold() for n in folded),
                    "does not contain " + " and ".join(repr(n) for n in needles),
                )
            )
        if spec.get("fact"):
            key = _key(spec["fact"])
            taught = _taught(world)
            self.tests.append(("fact", lambda e: key in taught.get(e.n, ()), f"told no one {key}"))

    def _place(self, ref: str):
        record = self.world.scene.records.get(ref)
        if record is not None and record.tool == "github":
            repo = self.world.scene.records[record.fields["repo"]].fields["name"]
            number = self.world.ids.get(ref)
            return lambda e: (
                e.data.get("tool") == "github"
                and (e.data.get("repo_name"), e.data.get("number"))
                == (
                    repo,
                    number,
                )
            )
        channel = self.world.ids.get(ref)
        return lambda e: e.data.get("tool") == "slack" and e.data.get("channel") == channel

    def _thread_root(self, ref: str) -> str | None:
        ts = self.world.ids.get(ref)
        for message in (self.world.states.get("slack") or {}).get("messages") or ():
            if message["ts"] == ts:
                return message.get("thread_ts") or ts
        return ts

    def _authors(self, ref: str) -> set[tuple[str, str]]:
        world = self.world
        out: set[tuple[str, str]] = set()
        if ref in world.scene.people:
            if world.people.slack_id(ref):
                out.add(("slack", world.people.slack_id(ref)))
            if world.people.login(ref):
                out.add(("github", world.people.login(ref)))
            return out
        record = world.scene.records.get(ref)
        if record is None:
            return out
        if record.tool == "slack":
            out.add(("slack", world.ids.get(ref)))
            if (
                record.fields.get("bot") and "github" in world.states
            ):  # the agent's user names it on GitHub too
                out.add(("github", world.states["github"].get("bot")))
        elif record.tool == "github":
            login = _login_of(world, world.ids.get(ref))
            out.add(("github", login))
            if record.fields.get("bot") and "slack" in world.states:
                out.add(("slack", world.states["slack"].get("bot")))
        return out

    def met(self, event: Event) -> tuple[bool, ...]:
        return tuple(bool(test(event)) for _, test, _ in self.tests)


def _login_of(world: World, user_id: Any) -> str | None:
    users = (world.states.get("github") or {}).get("users") or {}
    return next((login for login, u in users.items() if u.get("id") == user_id), None)


def _reached(world: World, event: Event) -> list[str]:
    return event.data.get("to") or []


def _taught(world: World) -> dict[int, set[str]]:
    """Message event n -> the facts it taught whoever it reached (from the ``learned`` events)."""
    taught: dict[int, set[str]] = {}
    for event in world.events.of_type("learned"):
        taught.setdefault(event.data["message"], set()).add(event.data["fact"])
    return taught


def message_matches(world: World, spec: Mapping[str, Any], event: Event) -> bool:
    """Whether one message event meets every field of the selector."""
    return event.type in ("message", "message_edited") and all(_Selector(world, spec).met(event))


def selector_text(spec: Mapping[str, Any], what: str = "a message") -> str:
    """``a message to laura, in thread of slack_question, with fact ben.root_cause``."""
    parts = []
    for field in ("to", "in", "in_thread_of", "from", "text_contains", "fact"):
        if spec.get(field):
            value = spec[field]
            name = field.replace("_", " ")
            if field == "fact":
                name, value = "with fact", _key(value)
            elif isinstance(value, list):
                value = " and ".join(repr(v) for v in value)
            parts.append(f"{name} {value}")
    return f"{what} " + ", ".join(parts)


def _quote(world: World, event: Event) -> str:
    d = event.data
    text = str(d.get("text") or "")
    short = text if len(text) <= 60 else text[:57] + "..."
    author = d.get("user")
    if d.get("tool") == "slack":
        slack = world.states.get("slack") or {}
        author = ((slack.get("users") or {}).get(author) or {}).get("name", author)
        channel = (slack.get("channels") or {}).get(d.get("channel")) or {}
        where = f"#{channel['name']}" if channel.get("name") else "a direct message"
        if d.get("thread_ts") and d.get("thread_ts") != d.get("ts"):
            where += " (thread reply)"
    else:
        where = f"{d.get('repo_name')}#{d.get('number')}"
    return f'"{short}" by {author} in {where} (event {event.n})'


def _select(world: World, spec: Mapping[str, Any]) -> tuple[list[Event], Event | None, str]:
    """(matching versions, the closest miss, the field it missed)."""
    selector = _Selector(world, spec)
    matched: list[Event] = []
    closest: tuple[tuple[int, tuple[bool, ...]], Event, str] | None = None
    for event in _messages(world):
        met = selector.met(event)
        if all(met):
            matched.append(event)
            continue
        rank = (sum(met), met)
        if closest is None or rank > closest[0]:
            closest = (rank, event, selector.tests[met.index(False)][2])
    if closest is None:
        return matched, None, ""
    return matched, closest[1], closest[2]


def _seqs(events: Iterable[Event]) -> tuple[int, ...]:
    return tuple(e.data["seq"] for e in events if e.data.get("seq"))


# -- milestones -------------------------------------------------------------------------------------


def milestone(world: World, spec: Mapping[str, Any]) -> Moment | None:
    """When the milestone first happened (None: it never did)."""
    ((kind, value),) = spec.items()
    if kind == "called":
        pattern = compile_pattern(value)
        entry = next((e for e in world.trace if pattern.matches(e)), None)
        if entry is None:
            return None
        event = next((e.n for e in world.events.of_type("call") if e.data.get("seq") == entry.seq), None)
        return Moment(entry.at, (entry.seq,), (event,) if event else ())
    if kind == "message":
        matched, _, _ = _select(world, value)
        if not matched:
            return None
        first = matched[0]
        return Moment(first.at, _seqs([first]), (first.n,))
    people = world.people.state
    if kind == "decided":
        key = f"{value['person']}.{value['decision']}"
        record = people["decided"].get(key)
        if record is None or (value.get("option") is not None and record["option"] != value["option"]):
            return None
        return Moment(parse_iso(record["at"]), (), (record["event"],))
    if kind in ("knows", "told"):
        moments = [world.people.known_at(value["person"], _key(f)) for f in value["facts"]]
        if any(m is None for m in moments):
            return None
        learned = world.people.state["learned"].get(value["person"], {})
        events = tuple(learned[_key(f)]["event"] for f in value["facts"] if _key(f) in learned)
        return Moment(max(moments), (), events)
    if kind == "revealed":
        records = [people["revealed"].get(_key(f)) for f in value]
        if any(r is None for r in records):
            return None
        return Moment(max(parse_iso(r["at"]) for r in records), (), tuple(r["event"] for r in records))
    if kind == "issue_labeled":
        return _labeled(world, value)
    if kind == "fault_resolved":
        at = world.faults.resolved_at(value)
        if at is None:
            return None
        progress = world.faults.progress.get(value, {})
        seq = progress.get("resolved_seq")
        return Moment(at, (seq,) if seq else (), (progress.get("resolved_event"),))
    return None


def _labeled(world: World, spec: Mapping[str, Any]) -> Moment | None:
    """The first time an issue of the repo had every label (seed labels count from the start)."""
    repo = world.scene.records[spec["repo"]].fields["name"]
    wanted = {label.casefold() for label in spec["labels"]}
    have: dict[Any, set[str]] = {}
    seed_repo = ((world.seed.get("github") or {}).get("repos") or {}).get(repo) or {}
    for number, issue in (seed_repo.get("issues") or {}).items():
        have[int(number)] = {label.casefold() for label in issue.get("labels") or ()}
        if wanted <= have[int(number)]:
            return Moment(world.clock.start)
    for event in world.events.of_type("issue_labeled"):
        if event.data.get("repo_name") != repo:
            continue
        labels = have.setdefault(event.data.get("number"), set())
        labels |= {label.casefold() for label in event.data.get("labels") or ()}
        if wanted <= labels:
            return Moment(event.at, _seqs([event]), (event.n,))
    return None


def _describe_milestone(spec: Mapping[str, Any]) -> str:
    ((kind, value),) = spec.items()
    if kind == "called":
        return f"a call to {value}"
    if kind == "message":
        return selector_text(value)
    if kind == "decided":
        option = f" {value['option']}" if value.get("option") else ""
        return f"{value['person']} decided {value['decision']}{option}"
    if kind in ("knows", "told"):
        return f"{value['person']} knows " + ", ".join(_key(f) for f in value["facts"])
    if kind == "revealed":
        return "revealed " + ", ".join(_key(f) for f in value)
    if kind == "issue_labeled":
        return f"an issue of {value['repo']} labeled {', '.join(value['labels'])}"
    if kind == "fault_resolved":
        return f"fault {value} resolved"
    return kind


# -- the kinds --------------------------------------------------------------------------------------


def evaluate_process(world: World, kind: str, spec: Any) -> StateResult:
    return _KINDS[kind](world, spec)


def _revealed(world: World, facts: list) -> StateResult:
    keys = [_key(f) for f in facts]
    revealed = world.people.state["revealed"]
    missing = [k for k in keys if k not in revealed]
    expected = spoken_list(keys) + " revealed to the agent when asked"
    events = tuple(revealed[k]["event"] for k in keys if k in revealed)
    asked = [revealed[k]["asked"] for k in keys if k in revealed]
    evidence = _seqs(e for e in world.events if e.n in asked)
    if not missing:
        return StateResult.of(True, expected, "all revealed", evidence=evidence, events=events)
    notes = []
    for key in missing:
        owner = key.partition(".")[0]
        told = [p for p, learned in world.people.state["learned"].items() if key in learned]
        if told:
            notes.append(
                f"{key} was never asked for ({owner} shared it unasked; {', '.join(told)} learned it)"
            )
        else:
            notes.append(f"{key} was not revealed ({owner} was never asked for it)")
    return StateResult.of(False, expected, "; ".join(notes), evidence=evidence, events=events)


def _knows(world: World, spec: Mapping[str, Any]) -> StateResult:
    person, keys = spec["person"], [_key(f) for f in spec["facts"]]
    expected = f"{person} knows " + ", ".join(keys)
    learned = world.people.state["learned"].get(person, {})
    missing = [k for k in keys if not world.people.knows(person, k)]
    events = tuple(learned[k]["event"] for k in keys if k in learned)
    messages = {learned[k]["message"] for k in keys if k in learned}
    evidence = _seqs(e for e in world.events if e.n in messages)
    if not missing:
        sources = [
            f"{k} from event {learned[k]['message']}" if k in learned else f"{k} (their own)" for k in keys
        ]
        return StateResult.of(
            True, expected, f"{person} learned " + ", ".join(sources), evidence=evidence, events=events
        )
    return StateResult.of(
        False, expected, f"{person} does not know " + ", ".join(missing), evidence=evidence, events=events
    )


def _decided(world: World, spec: Mapping[str, Any]) -> StateResult:
    key = f"{spec['person']}.{spec['decision']}"
    option = spec.get("option")
    expected = f"{spec['person']} decided {spec['decision']}" + (f" = {option}" if option else "")
    record = world.people.state["decided"].get(key)
    if record is None:
        pending = any(p["key"] == key for p in world.people.state["pending"])
        why = "was about to answer when the trial ended" if pending else "never decided"
        return StateResult.of(False, expected, f"{spec['person']} {why}")
    asked = [e for e in world.events if e.n == record.get("asked")]
    passed = option is None or record["option"] == option
    actual = f"{spec['person']} decided {spec['decision']} = {record['option']} at {record['at']}"
    return StateResult.of(passed, expected, actual, evidence=_seqs(asked), events=(record["event"],))


def _message(world: World, spec: Mapping[str, Any]) -> StateResult:
    need = int(spec.get("count_gte") or 1)
    selector = {k: v for k, v in spec.items() if k != "count_gte"}
    matched, closest, why = _select(world, selector)
    count = len({_identity(e) for e in matched})
    expected = f"at least {need} " + selector_text(selector, "message" if need == 1 else "messages")
    actual = f"{count} matching message{'s' if count != 1 else ''}"
    cited = list(matched)
    if count < need and closest is not None:
        actual += f"; closest: {_quote(world, closest)}, which {why}"
        cited.append(closest)
    elif count < need:
        actual += "; no message was written during the trial"
    return StateResult.of(
        count >= need, expected, actual, evidence=_seqs(cited), events=tuple(e.n for e in cited)
    )


def _never(world: World, spec: Mapping[str, Any]) -> StateResult:
    matched, _, _ = _select(world, spec)
    expected = selector_text(spec, "no message")
    if not matched:
        return StateResult.of(True, expected, "no such message")
    first = matched[0]
    actual = f"{len(matched)} matching message version(s), first {_quote(world, first)}"
    return StateResult.of(
        False, expected, actual, evidence=_seqs(matched), events=tuple(e.n for e in matched)
    )


def _before(world: World, milestones: list) -> StateResult:
    names = [_describe_milestone(m) for m in milestones]
    expected = " before ".join(names) + ", each strictly earlier in simulated time"
    moments = [milestone(world, m) for m in milestones]
    evidence = tuple(s for m in moments if m for s in m.evidence)
    events = tuple(n for m in moments if m for n in m.events if n)
    never = [names[i] for i, m in enumerate(moments) if m is None]
    if never:
        return StateResult.of(
            False, expected, "never happened: " + "; ".join(never), evidence=evidence, events=events
        )
    times = [m.at for m in moments]
    for i in range(1, len(times)):
        if not times[i - 1] < times[i]:
            actual = f"{names[i - 1]} at {iso(times[i - 1])} is not before {names[i]} at {iso(times[i])}"
            return StateResult.of(False, expected, actual, evidence=evidence, events=events)
    actual = ", then ".join(f"{n} at {iso(t)}" for n, t in zip(names, times, strict=True))
    return StateResult.of(True, expected, actual, evidence=evidence, events=events)


def _within(world: World, spec: Mapping[str, Any]) -> StateResult:
    limit: timedelta = spec["limit"]
    event_name = _describe_milestone(spec["event"])
    of_name = "the start" if spec["of"] == "start" else _describe_milestone(spec["of"])
    expected = f"{event_name} within {_duration(limit)} of {of_name}"
    moment = milestone(world, spec["event"])
    base = Moment(world.clock.start) if spec["of"] == "start" else milestone(world, spec["of"])
    cited = [m for m in (moment, base) if m]
    evidence = tuple(s for m in cited for s in m.evidence)
    events = tuple(n for m in cited for n in m.events if n)
    if base is None:
        return StateResult.of(False, expected, f"{of_name} never happened", evidence=evidence, events=events)
    if moment is None:
        return StateResult.of(
            False, expected, f"{event_name} never happened", evidence=evidence, events=events
        )
    took = moment.at - base.at
    if took < timedelta(0):
        actual = f"it happened at {iso(moment.at)}, {_duration(-took)} before {of_name} ({iso(base.at)})"
        return StateResult.of(False, expected, actual, evidence=evidence, events=events)
    actual = f"it happened at {iso(moment.at)}, {_duration(took)} after {of_name}"
    return StateResult.of(took <= limit, expected, actual, evidence=evidence, events=events)


def _duration(delta: timedelta) -> str:
    total = delta.total_seconds()
    if total < 60:
        return f"{total:g}s"
    minutes, seconds = divmod(int(total), 60)
    hours, minutes = divmod(minutes, 60)
    return "".join(f"{v}{u}" for v, u in ((hours, "h"), (minutes, "m"), (seconds, "s")) if v) or "0s"


_KINDS = {
    "revealed": _revealed,
    "knows": _knows,
    "told": _knows,
    "decided": _decided,
    "message": _message,
    "never": _never,
    "before": _before,
    "within": _within,
}
