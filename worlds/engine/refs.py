"""Refs: one namespace of record names per scene.

Every key under a record map declares a ref (``slack_support`` under ``world.slack.channels``); a name
declared twice is an error. A ref is written ``$name`` or ``$kind.name`` (the kind must match the
record's); people also bare (``laura``), ``$laura`` or ``$person.laura``; facts and decisions
``<person>.<id>``. Fields accept some record kinds (``slack.channel``, ``person``, ...): a ref to
another kind is an error naming both.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["KINDS", "Namespace", "RefError", "Target"]

# The record kinds a ref may name (``$kind.name``), as the reference lists them.
KINDS = frozenset(
    [
        "user",
        "channel",
        "message",
        "repo",
        "commit",
        "pull",
        "issue",
        "fault",
        "monitor",
        "service",
        "escalation_policy",
        "schedule",
        "incident",
        "dashboard",
        "event",
        "log",
        "person",
    ]
)


class RefError(ValueError):
    """An unknown ref, a kind that does not match, or a malformed ref; the message says which."""


@dataclass(frozen=True)
class Target:
    """A declared record: its ref, kind (``channel``), tool (``slack``; ``""`` for people and faults)
    and the field path it is declared at."""

    ref: str
    kind: str
    tool: str
    path: str

    @property
    def qualified(self) -> str:
        """``slack.channel``; ``person`` and ``fault`` stand alone."""
        return f"{self.tool}.{self.kind}" if self.tool else self.kind


def _article(kind: str) -> str:
    return "an" if kind[0] in "aeiou" else "a"


def describe(kinds: tuple[str, ...]) -> str:
    """``("slack.channel", "github.issue")`` → ``a Slack channel or a GitHub issue``."""
    words = []
    for k in kinds:
        tool, _, base = k.rpartition(".")
        phrase = f"{_TOOL_NAMES.get(tool, tool) + ' ' if tool else ''}{base.replace('_', ' ')}"
        words.append(f"{'an' if phrase[0] in 'aeiouAEIOU' else 'a'} {phrase}")
    return " or ".join(words)


_TOOL_NAMES = {
    "slack": "Slack",
    "github": "GitHub",
    "datadog": "Datadog",
    "pagerduty": "PagerDuty",
    "okta": "Okta",
}


class Namespace:
    """Every ref of one scene, with each person's facts and decisions."""

    def __init__(self) -> None:
        self.targets: dict[str, Target] = {}
        self.facts: dict[str, set[str]] = {}  # person -> fact ids
        self.decisions: dict[str, dict[str, list[str]]] = {}  # person -> decision id -> options

    def declare(self, ref: str, kind: str, tool: str, path: str) -> Target | None:
        """Declare ``ref``; returns the earlier target when the name is taken (a duplicate)."""
        if ref in self.targets:
            return self.targets[ref]
        self.targets[ref] = Target(ref, kind, tool, path)
        return None

    def resolve(self, value: object, accepts: tuple[str, ...], *, bare_person: bool = False) -> Target:
        """The target ``value`` names, if it is of one of the kinds in ``accepts``.

        ``accepts`` holds qualified kinds (``slack.user``) or bare ones (``user``: any tool).
        Raises RefError with the message to report.
        """
        if not isinstance(value, str) or not value:
            raise RefError(f"must be a ref ($name), not {value!r}")
        if value.startswith("$"):
            name, asserted = value[1:], None
            if "." in name:
                asserted, _, name = name.partition(".")
                if asserted not in KINDS:
                    raise RefError(
                        f"unknown kind {asserted!r} in {value}; kinds are {', '.join(sorted(KINDS))}"
                    )
        elif bare_person:
            name, asserted = value, None
        else:
            raise RefError(f"must be a ref: write ${value}")
        target = self.targets.get(name)
        if target is None:
            raise RefError(f"unknown ref {value}")
        if asserted is not None and asserted != target.kind:
            raise RefError(
                f"{value} names {_article(target.kind)} {target.kind}, not {_article(asserted)} {asserted}"
            )
        if not any(a in (target.qualified, target.kind) for a in accepts):
            raise RefError(f"{value} is {describe((target.qualified,))}; expected {describe(accepts)}")
        if not value.startswith("$") and target.kind != "person":
            raise RefError(f"must be a ref: write ${value}")
        return target

    def fact(self, value: object) -> tuple[str, str]:
        """``laura.beta_on`` → (``laura``, ``beta_on``); raises RefError."""
        return self._owned(value, self.facts, "fact")

    def decision(self, value: object) -> tuple[str, str]:
        return self._owned(value, self.decisions, "decision")

    def _owned(self, value: object, table: dict, what: str) -> tuple[str, str]:
        if not isinstance(value, str) or value.count(".") != 1:
            raise RefError(f"must be a {what} written <person>.<id>, not {value!r}")
        person, item = value.lstrip("$").split(".")
        if person.startswith("person."):
            person = person[len("person.") :]
        target = self.targets.get(person)
        if target is None or target.kind != "person":
            raise RefError(f"unknown person {person!r} in {value}")
        if item not in table.get(person, ()):
            raise RefError(f"unknown {what} {value}: {person} has no {what} {item!r}")
        return person, item
