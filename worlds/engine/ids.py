"""Deterministic ids: the same scene name and ref always give the same id, in the real tool's format.

Slack users ``U…``, channels ``C…`` (private ``G…``), direct conversations ``D…``; PagerDuty ``P…``;
Okta users ``00u…``; GitHub and Datadog numeric ids. Based on SHA-256 of ``scene`` and ``ref``.
"""

from __future__ import annotations

import hashlib

__all__ = ["digest", "github_id", "numeric_id", "okta_id", "pagerduty_id", "slack_id"]

_BASE32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
_ALNUM = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_SLACK_PREFIX = {"user": "U", "bot": "B", "channel": "C", "private": "G", "dm": "D", "team": "T"}


def digest(scene: str, ref: str, salt: str = "") -> int:
    data = f"{scene}\0{ref}\0{salt}".encode()
    return int.from_bytes(hashlib.sha256(data).digest(), "big")


def _encode(number: int, alphabet: str, length: int) -> str:
    out = []
    for _ in range(length):
        number, r = divmod(number, len(alphabet))
        out.append(alphabet[r])
    return "".join(out)


def slack_id(scene: str, ref: str, kind: str = "user") -> str:
    """``U0123ABCDE``-shaped: the kind's prefix and 10 upper-case characters."""
    return _SLACK_PREFIX[kind] + _encode(digest(scene, ref, "slack"), _BASE32, 10)


def pagerduty_id(scene: str, ref: str) -> str:
    """``P`` and 6 upper-case characters, as PagerDuty's ids are."""
    return "P" + _encode(digest(scene, ref, "pagerduty"), _BASE32.replace("2", "").replace("3", ""), 6)


def okta_id(scene: str, ref: str) -> str:
    """``00u`` and 17 characters."""
    return "00u" + _encode(digest(scene, ref, "okta"), _ALNUM, 17)


def numeric_id(scene: str, ref: str, tool: str, digits: int = 8) -> int:
    """A positive id of ``digits`` digits (Datadog monitors, dashboards, ...)."""
    low = 10 ** (digits - 1)
    return low + digest(scene, ref, tool) % (9 * low)


def github_id(scene: str, ref: str) -> int:
    return numeric_id(scene, ref, "github", 8)
