"""The trace: every HTTP call the agent made to the world's tools, numbered from 1 (``seq``).

Entries are exactly WORLDS.md "The trace". Bodies are cut at 10 KB and marked truncated; credentials
(Slack ``token`` fields, Datadog keys in queries, every ``Authorization`` header) are never stored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .clock import iso, parse_iso

__all__ = ["BODY_LIMIT", "PartialHistory", "Trace", "TraceEntry", "scrub_body", "scrub_query"]

BODY_LIMIT = 10 * 1024
# Query and body fields that carry credentials (Slack's token, Datadog's keys), casefolded.
SECRET_FIELDS = frozenset(
    {"token", "api_key", "application_key", "app_key", "dd-api-key", "dd-application-key"}
)


class PartialHistory(RuntimeError):
    """The trace or event log holds only its latest entries (the earlier ones are stored elsewhere):
    it can carry on numbering, not be read whole (judge a world restored in full)."""


class History:
    """A numbered history, the trace or the event log, that may hold only its latest items: ``skipped``
    earlier ones are stored elsewhere. It carries on their numbering; reading it whole raises
    PartialHistory."""

    names = ("history", "items")  # (what it is, what it holds), for messages

    def __init__(self) -> None:
        self.held: list[Any] = []
        self.skipped = 0  # earlier items not held here (see continue_from / forget)

    def _next_number(self) -> int:
        return self.skipped + len(self.held) + 1

    def _carry_on(self, count: int) -> None:
        """Carry on after ``count`` items stored elsewhere and not loaded (an empty history only)."""
        if self.held:
            raise ValueError(f"continue_from needs an empty {self.names[0]}")
        self.skipped = count

    def forget(self) -> None:
        """Drop the items held (they are stored elsewhere); numbering carries on."""
        self.skipped += len(self.held)
        self.held = []

    def _whole(self) -> list[Any]:
        if self.skipped:
            raise PartialHistory(f"the {self.names[0]} holds {self.names[1]} after {self.skipped} only")
        return self.held

    def __iter__(self):
        return iter(self._whole())

    def __len__(self) -> int:
        return self.skipped + len(self.held)


@dataclass(frozen=True)
class TraceEntry:
    seq: int
    at: datetime
    tool: str
    method: str
    path: str
    query: dict[str, list[str]] = field(default_factory=dict)
    status: int = 200
    request: Any = None
    response: Any = None
    request_truncated: bool = False
    response_truncated: bool = False
    coverage_gap: bool = False
    slack_ok: bool | None = None
    graphql_errors_only: bool = False

    @property
    def worked(self) -> bool:
        """Below 400, not a coverage gap, no Slack ``ok: false``, not a GraphQL answer of only errors."""
        return (
            self.status < 400
            and not self.coverage_gap
            and self.slack_ok is not False
            and not self.graphql_errors_only
        )

    def to_dict(self, *, copy: bool = True) -> dict[str, Any]:
        """The entry as JSON-able data. Field by field rather than dataclasses.asdict, whose
        copy.deepcopy per value was most of a stored world's save (bench/README.md "Worlds").
        ``copy=False`` shares the bodies with the entry (for a snapshot about to be encoded)."""
        keep = _copy if copy else _same
        return {
            "seq": self.seq,
            "at": iso(self.at),
            "tool": self.tool,
            "method": self.method,
            "path": self.path,
            "query": {k: list(v) for k, v in self.query.items()},
            "status": self.status,
            "request": keep(self.request),
            "response": keep(self.response),
            "request_truncated": self.request_truncated,
            "response_truncated": self.response_truncated,
            "coverage_gap": self.coverage_gap,
            "slack_ok": self.slack_ok,
            "graphql_errors_only": self.graphql_errors_only,
            "worked": self.worked,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TraceEntry:
        """The entry :meth:`to_dict` wrote (a stored world)."""
        fields = {k: v for k, v in data.items() if k in _FIELDS}
        fields["at"] = parse_iso(data["at"])
        return cls(**fields)


_FIELDS = frozenset(TraceEntry.__dataclass_fields__)


def _same(value: Any) -> Any:
    return value


def _copy(value: Any) -> Any:
    """A copy of parsed JSON (dicts and lists copied, everything else shared: it is immutable)."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_copy(v) for v in value)
    return value


def scrub_query(query: dict[str, list[str]]) -> dict[str, list[str]]:
    return {k: list(v) for k, v in query.items() if k.casefold() not in SECRET_FIELDS}


def scrub_body(body: Any) -> Any:
    """Drop credential fields from a parsed body (top level of an object, as Slack sends ``token``)."""
    if isinstance(body, dict):
        return {k: v for k, v in body.items() if not (isinstance(k, str) and k.casefold() in SECRET_FIELDS)}
    return body


def cut(body: Any, secrets: tuple[str, ...] = (), wire: bytes | None = None) -> tuple[Any, bool]:
    """The body to store and whether it was truncated. A body over 10 KB (as JSON, UTF-8) is stored as
    its first 10 KB of text. Any known secret value left in the text is replaced by ``[redacted]``.

    ``wire`` is the body as the tool sent it (compact JSON of a dict or list, ``Response.content``):
    it spares encoding the body again when it settles the answer. The text cut here puts a space after
    every ``,`` and ``:`` between items, so it is at least ``wire``'s length and at most that plus one
    byte per ``,`` or ``:`` in ``wire``; a secret that holds none of the JSON text's structural
    characters is in the one text exactly when it is in the other. So a body whose bound is within the
    limit is kept as it is, and one whose wire is over it is cut from the first 10 KB of its text,
    encoded item by item (:func:`_text_head`), not whole. The stored values are the same as without."""
    if body is None:
        return None, False
    if wire is not None and type(body) in (dict, list) and _plain(secrets, wire):
        size = len(wire)
        if size + wire.count(b",") + wire.count(b":") <= BODY_LIMIT:
            return body, False
        if size > BODY_LIMIT:
            # The first BODY_LIMIT bytes of the text lie in its first BODY_LIMIT characters; a secret
            # starting after them cannot change them (it is not among the characters read here).
            longest = max((len(s) for s in secrets), default=0)
            head = _text_head(body, BODY_LIMIT + longest + 1)
            return head.encode()[:BODY_LIMIT].decode("utf-8", errors="ignore"), True
    text = body if isinstance(body, str) else _encode(body)
    redacted = text
    for secret in secrets:
        if secret:
            redacted = redacted.replace(secret, "[redacted]")
    if redacted != text:
        body = redacted if isinstance(body, str) else json.loads(redacted)
        text = redacted
    raw = text.encode()
    if len(raw) <= BODY_LIMIT:
        return body, False
    return raw[:BODY_LIMIT].decode("utf-8", errors="ignore"), True


_encode = json.JSONEncoder(ensure_ascii=False, sort_keys=False, default=str).encode  # the cut's text
_STRUCTURAL = frozenset(' ,:"\\[]{}')


def _plain(secrets: tuple[str, ...], wire: bytes) -> bool:
    """Whether no secret is in ``wire`` and none holds a character of JSON's structure or an escape
    (credentials never do), so that none is in the text :func:`cut` would encode either."""
    return all(s.isascii() and _STRUCTURAL.isdisjoint(s) and s.encode() not in wire for s in secrets if s)


def _text_head(value: Any, need: int) -> str:
    """A prefix of ``_encode(value)`` at least ``need`` characters long (the whole text when shorter).
    A list's items are encoded one by one until it is long enough, each whole (a record) unless it is
    a list itself; a dict's values likewise, going into those that are lists or dicts (an envelope
    such as Slack's ``{"ok": true, "messages": [...]}``). Anything else is encoded whole."""
    kind = type(value)
    if kind is list and value:
        opening, closing = "[", "]"
        items = ((", " if i else "", item, type(item) is list) for i, item in enumerate(value))
    elif kind is dict and value and all(type(k) is str for k in value):
        opening, closing = "{", "}"
        items = (
            (f", {_encode(key)}: " if i else f"{_encode(key)}: ", item, type(item) in (list, dict))
            for i, (key, item) in enumerate(value.items())
        )
    else:
        return _encode(value)
    parts, size = [opening], 1
    for lead, item, nested in items:
        parts.append(lead)
        size += len(lead)
        piece = _text_head(item, need - size) if nested else _encode(item)
        parts.append(piece)
        size += len(piece)
        if size >= need:
            return "".join(parts)
    parts.append(closing)
    return "".join(parts)


class Trace(History):
    """The world's trace. ``record`` numbers the entry and strips credentials; ``secrets`` are the
    world's credential values, never stored even where an agent puts them in a body."""

    names = ("trace", "entries")

    def __init__(self, secrets: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.secrets = tuple(secrets)

    @property
    def entries(self) -> list[TraceEntry]:
        """The entries held (all of them unless ``skipped``)."""
        return self.held

    def record(
        self,
        *,
        at: datetime,
        tool: str,
        method: str,
        path: str,
        query: dict[str, list[str]] | None = None,
        status: int,
        request: Any = None,
        response: Any = None,
        coverage_gap: bool = False,
        slack_ok: bool | None = None,
        graphql_errors_only: bool = False,
        response_wire: bytes | None = None,
    ) -> TraceEntry:
        """Number and store one call; ``response_wire`` is the response body as sent (see :func:`cut`)."""
        req, req_cut = cut(scrub_body(request), self.secrets)
        resp, resp_cut = cut(response, self.secrets, response_wire)
        entry = TraceEntry(
            seq=self._next_number(),
            at=at,
            tool=tool,
            method=method.upper(),
            path=path,
            query=scrub_query(query or {}),
            status=status,
            request=req,
            response=resp,
            request_truncated=req_cut,
            response_truncated=resp_cut,
            coverage_gap=coverage_gap,
            slack_ok=slack_ok if tool == "slack" else None,
            graphql_errors_only=graphql_errors_only,
        )
        self.held.append(entry)
        return entry

    @classmethod
    def restore(cls, entries: list[dict[str, Any]], secrets: tuple[str, ...] = ()) -> Trace:
        trace = cls(secrets)
        trace.held = [TraceEntry.from_dict(e) for e in entries]
        return trace

    def continue_from(self, count: int) -> None:
        """Carry on after ``count`` entries that are stored elsewhere and not loaded (an empty trace
        only): the next entry is ``count + 1``. Such a trace answers calls; reading it whole raises
        :class:`PartialHistory`."""
        self._carry_on(count)

    def to_list(self, *, copy: bool = True) -> list[dict[str, Any]]:
        return [e.to_dict(copy=copy) for e in self._whole()]
