"""The judge protocol: what the ``ai_judge`` kind needs from ``ctx.judge``. Pure Python, no Django, no openai.

A judge client is any object with::

    complete(*, model: str, messages: list[dict], estimated_tokens: int) -> JudgeReply

It sends ``messages`` (chat-completions shape, ``[{"role", "content"}]``) to ``model`` and returns the raw
reply text with its token counts and latency. It raises:

- ``JudgeUnavailable`` (and its subclass ``BudgetExhausted``): the call was not made, on purpose (no key,
  the team's monthly budget is spent). The check becomes INDETERMINATE ("skipped: ...").
- ``JudgeCallError``: the call was made and failed after the client's own retries (429, 5xx, timeout,
  connection, a 4xx refusal). The check becomes ERROR.

``estimated_tokens`` is the caller's estimate of the prompt size, so a budgeted client can refuse before
spending. The real client is ``checks.judge.OpenAIJudge`` (official ``openai`` package); the per-team
budget wrapper is ``checks.judge.BudgetedJudge``.

Token estimates: about four characters per token (``ceil(chars / 4)``) plus a few tokens of framing per
message. It is deliberately simple and slightly pessimistic for English; it decides truncation and the
budget pre-check, never billing (billing uses the ``usage`` the server reports).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = [
    "CHARS_PER_TOKEN",
    "DEFAULT_CONTEXT_TOKENS",
    "DEFAULT_CONTEXT_TABLE",
    "DEFAULT_REPLY_TOKENS",
    "MESSAGE_OVERHEAD_TOKENS",
    "BudgetExhausted",
    "JudgeCallError",
    "JudgeClient",
    "JudgeError",
    "JudgeReply",
    "JudgeUnavailable",
    "context_tokens_for",
    "estimate_messages_tokens",
    "estimate_tokens",
]

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD_TOKENS = 4  # role and separators of one chat message
PRIMING_TOKENS = 3  # every reply is primed with a few tokens
DEFAULT_REPLY_TOKENS = 512  # kept free in the context for the judge's answer
DEFAULT_CONTEXT_TOKENS = 8_192  # a model missing from the table is assumed this small

# Context windows (tokens) of common judge models. Keys match a model name exactly or as a prefix
# ("gpt-4o-2024-08-06" uses "gpt-4o"); the longest matching key wins. Settings extend or override it.
DEFAULT_CONTEXT_TABLE: dict[str, int] = {
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4.1-mini": 1_047_576,
    "gpt-4.1-nano": 1_047_576,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "gpt-5": 400_000,
    "o1": 200_000,
    "o3": 200_000,
    "o3-mini": 200_000,
    "o4-mini": 200_000,
    "claude": 200_000,
    "gemini-1.5": 1_000_000,
    "gemini-2": 1_000_000,
    "llama3.1": 128_000,
    "llama3.2": 128_000,
    "llama3.3": 128_000,
    "llama3": 8_192,
    "mistral-large": 128_000,
    "mistral": 32_768,
    "qwen2.5": 32_768,
}


@dataclass(frozen=True)
class JudgeReply:
    """One completion: the raw text the judge returned and what it cost."""

    text: str
    tokens_in: int
    tokens_out: int
    latency_ms: float
    model: str = ""  # as the server reported it ("" if it did not)


class JudgeClient(Protocol):
    def complete(self, *, model: str, messages: list[dict[str, str]],
                 estimated_tokens: int = 0) -> JudgeReply:
        ...


class JudgeError(Exception):
    """Base of the judge client's errors. ``str(exc)`` is a sentence fragment for explanations."""


class JudgeUnavailable(JudgeError):
    """The judge was deliberately not called (the check is skipped: INDETERMINATE)."""

    reason = "judge unavailable"

    def __init__(self, message: str = "", *, details: Mapping[str, Any] | None = None) -> None:
        self.details = dict(details or {})
        super().__init__(message or self.reason)


class BudgetExhausted(JudgeUnavailable):
    """The team's monthly judge token budget is spent (or this call would overspend it)."""

    reason = "judge budget exhausted"


class JudgeCallError(JudgeError):
    """The judge call was made and failed after retries (the check is ERROR)."""

    def __init__(self, message: str, *, attempts: int = 1, status: int | None = None) -> None:
        self.attempts = attempts
        self.status = status
        super().__init__(message)


def estimate_tokens(text: str) -> int:
    """About four characters per token, rounded up."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def estimate_messages_tokens(messages: Sequence[Mapping[str, Any]]) -> int:
    """Estimated prompt tokens of chat messages (content and role, plus framing per message)."""
    total = PRIMING_TOKENS
    for message in messages:
        total += MESSAGE_OVERHEAD_TOKENS + estimate_tokens(str(message.get("role", "")))
        total += estimate_tokens(str(message.get("content") or ""))
    return total


def context_tokens_for(model: str, table: Mapping[str, int] | None = None, default: int | None = None) -> int:
    """Context window of ``model``: exact key, else the longest key that prefixes it, else ``default``."""
    merged = {**DEFAULT_CONTEXT_TABLE, **dict(table or {})}
    if model in merged:
        return int(merged[model])
    name = model.lower()
    best = ""
    for key in merged:
        if name.startswith(key.lower()) and len(key) > len(best):
            best = key
    if best:
        return int(merged[best])
    return int(default if default is not None else DEFAULT_CONTEXT_TOKENS)
