"""Per-world credentials, random, in each tool's own format, valid for one world only.

``make_credentials(["slack", "github"])`` → ``{"slack": {"token": "xoxb-…"}, "github": {"token": "ghp_…"}}``.
Other tools get none (their calls are traced, not authenticated). Compare with :func:`matches`.
"""

from __future__ import annotations

import hmac
import secrets
import string
from collections.abc import Callable, Iterable

__all__ = ["FORMATS", "make_credentials", "matches", "secret_values"]

_ALNUM = string.ascii_letters + string.digits


def _chars(n: int, alphabet: str = _ALNUM) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(n))


def _digits(n: int) -> str:
    return str(secrets.choice("123456789")) + _chars(n - 1, string.digits)


FORMATS: dict[str, Callable[[], dict[str, str]]] = {
    # xoxb-<team>-<bot>-<24 characters>, as Slack bot tokens are
    "slack": lambda: {"token": f"xoxb-{_digits(12)}-{_digits(13)}-{_chars(24)}"},
    # a classic personal access token: ghp_ and 36 characters
    "github": lambda: {"token": f"ghp_{_chars(36)}"},
    # a 32-hex API key and a 40-hex application key
    "datadog": lambda: {"api_key": secrets.token_hex(16), "app_key": secrets.token_hex(20)},
    # a 20-character REST API token (Authorization: Token token=…)
    "pagerduty": lambda: {"token": _chars(20, _ALNUM + "_-+")},
    # an SSWS API token: 00 and 40 characters
    "okta": lambda: {"token": f"00{_chars(40, _ALNUM + '_-')}"},
}


def make_credentials(tools: Iterable[str]) -> dict[str, dict[str, str]]:
    """Fresh credentials for each simulated tool in ``tools`` (other tools are skipped)."""
    return {tool: FORMATS[tool]() for tool in tools if tool in FORMATS}


def matches(given: str | None, expected: str) -> bool:
    """Constant-time comparison; a missing credential never matches."""
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


def secret_values(credentials: dict[str, dict[str, str]]) -> tuple[str, ...]:
    """Every credential value, for the trace to keep out of what it stores."""
    return tuple(v for creds in credentials.values() for v in creds.values())
