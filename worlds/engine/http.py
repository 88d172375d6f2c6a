"""What a world hears and answers: a tool call as a :class:`Request` and the simulator's
:class:`Response`, free of any web framework. The console's view and the standalone server both turn
their HTTP requests into these, so every simulator is written once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote

__all__ = ["BODY_LIMIT", "BadBody", "Request", "Response", "split_target"]

BODY_LIMIT = 1024 * 1024  # 1 MB per request or response body (WORLDS.md "Limits")


class BadBody(ValueError):
    """The body is not what its content type says (malformed JSON, bad form encoding)."""


@dataclass(frozen=True)
class Request:
    """One call to a tool. ``path`` is below the tool's root, percent-decoded, starting with ``/``
    and without the query string; ``headers`` have lower-case names."""

    method: str
    path: str
    query: Mapping[str, list[str]] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""

    @classmethod
    def make(
        cls,
        method: str,
        path: str,
        query_string: str = "",
        headers: Mapping[str, str] | None = None,
        body: bytes = b"",
    ) -> Request:
        """From raw parts: ``path`` still percent-encoded, ``query_string`` without ``?``."""
        decoded = unquote(path or "/")
        # An SDK given the base URL with its trailing slash sends ".../datadog//api/v1/monitor": leading
        # slashes collapse to one (as nginx does), so routing and the trace see "/api/v1/monitor".
        decoded = "/" + decoded.lstrip("/")
        return cls(
            method=method.upper(),
            path=decoded,
            query=parse_qs(query_string or "", keep_blank_values=True),
            headers={k.lower(): v for k, v in (headers or {}).items()},
            body=body or b"",
        )

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";")[0].strip().lower()

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    def arg(self, name: str) -> str | None:
        """The first value of a query parameter."""
        values = self.query.get(name)
        return values[0] if values else None

    def json(self) -> Any:
        """The body parsed as JSON (``None`` when empty); raises :class:`BadBody`."""
        if not self.body.strip():
            return None
        try:
            return json.loads(self.body)
        except (ValueError, UnicodeDecodeError) as exc:
            raise BadBody(f"the body is not valid JSON: {exc}") from None

    def form(self) -> dict[str, str]:
        """An ``application/x-www-form-urlencoded`` body (the last value of a repeated field)."""
        try:
            text = self.body.decode()
        except UnicodeDecodeError:
            raise BadBody("the form body is not UTF-8") from None
        return {k: v[-1] for k, v in parse_qs(text, keep_blank_values=True).items()}

    def parsed_body(self) -> Any:
        """The body as the trace stores it: JSON, a form as an object, or text."""
        if not self.body:
            return None
        if self.content_type == "application/x-www-form-urlencoded":
            try:
                return self.form()
            except BadBody:
                pass
        try:
            return self.json()
        except BadBody:
            return self.body.decode("utf-8", errors="replace")


@dataclass
class Response:
    """A simulator's answer. ``body`` is JSON-able (or ``str``/``bytes`` sent as they are);
    ``coverage_gap`` marks an endpoint the simulator does not implement."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    coverage_gap: bool = False
    graphql_errors_only: bool = False
    _content: bytes | None = field(default=None, init=False, repr=False, compare=False)

    def content(self) -> bytes:
        """The body as sent, encoded once (the world checks its size, the server then sends it)."""
        if self._content is None:
            if self.body is None:
                self._content = b""
            elif isinstance(self.body, bytes):
                self._content = self.body
            elif isinstance(self.body, str):
                self._content = self.body.encode()
            else:
                self._content = _wire(self.body).encode()
        return self._content

    def content_type(self) -> str:
        if "Content-Type" in self.headers:
            return self.headers["Content-Type"]
        if isinstance(self.body, str | bytes):
            return "text/plain; charset=utf-8"
        return "application/json; charset=utf-8"

    @property
    def slack_ok(self) -> bool | None:
        if isinstance(self.body, dict) and isinstance(self.body.get("ok"), bool):
            return self.body["ok"]
        return None


_wire = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode  # a body as sent


def split_target(path: str) -> tuple[str, str, str] | None:
    """``/worlds/<id>/<tool>/<rest>`` → ``(id, tool, "/<rest>")``; None when it is not a world path."""
    parts = path.split("/", 4)
    if len(parts) < 4 or parts[0] != "" or parts[1] != "worlds" or not parts[2] or not parts[3]:
        return None
    rest = "/" + parts[4] if len(parts) == 5 else "/"
    return parts[2], parts[3], rest
