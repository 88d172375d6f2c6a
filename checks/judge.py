"""The AI judge's outside world: the official ``openai`` client, per-team monthly budgets and usage.

The ``ai_judge`` kind (``checks/kinds/ai_judge.py``) is pure; it talks to a judge client through the small
protocol in ``checks/kinds/judging.py``. This module provides the real ones:

- ``OpenAIJudge``: any OpenAI-compatible chat-completions endpoint, through ``openai.OpenAI`` with
  ``max_retries=0`` and our own retry loop: 429 (honouring ``Retry-After``, capped), 5xx, timeouts and
  connection errors are retried with exponential backoff; other 4xx fail at once. After the retries it
  raises ``JudgeCallError`` (the check is ``error``). Replies are requested as JSON
  (``response_format={"type": "json_object"}``).
- ``BudgetedJudge``: wraps a client for one team. Before each call it compares the team's usage this
  calendar month (UTC) plus the call's estimated prompt size with the team's budget
  (``Team.judge_monthly_token_budget``, else ``EVALCONSOLE_JUDGE_MONTHLY_TOKEN_BUDGET``) and raises
  ``BudgetExhausted`` instead of calling; after each successful call it adds the reported tokens to
  ``JudgeUsage`` with F() expressions. Concurrent workers can overshoot by at most the calls in flight.
- ``judge_for_team`` / ``judge_settings``: what ``checks.evaluation.make_context`` puts in the Context.

``OpenAIJudge`` needs no Django and no database (``evalconsole scene run`` builds one from the
environment); the budget and the settings wiring below are the console's.

No API key configured -> no client at all (the kind answers "skipped: no judge key"). The key is sent as
the ``Authorization`` header by the openai client and never stored in results.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from django.conf import settings

from agents.protocols import parse_retry_after
from checks.kinds.judging import (
    BudgetExhausted,
    JudgeCallError,
    JudgeReply,
    estimate_messages_tokens,
    estimate_tokens,
)

__all__ = [
    "BudgetedJudge",
    "OpenAIJudge",
    "judge_for_team",
    "judge_settings",
]


# --------------------------------------------------------------------------- the HTTP client


class OpenAIJudge:
    """A judge client over the official openai package. Thread-safe; the HTTP client is built lazily."""

    def __init__(self, *, base_url: str, api_key: str, timeout_s: float = 60.0, retries: int = 2,
                 backoff_s: float = 0.5, max_retry_after_s: float = 30.0, sleep=time.sleep) -> None:
        self.base_url = base_url
        self.timeout_s = float(timeout_s)
        self.retries = max(0, int(retries))
        self.backoff_s = max(0.0, float(backoff_s))
        self.max_retry_after_s = max(0.0, float(max_retry_after_s))
        self._api_key = api_key
        self._sleep = sleep
        self._client = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:  # the key is a secret: never in logs or tracebacks
        return f"OpenAIJudge(base_url={self.base_url!r}, timeout_s={self.timeout_s}, retries={self.retries})"

    @property
    def client(self):
        with self._lock:
            if self._client is None:
                from openai import OpenAI

                self._client = OpenAI(base_url=self.base_url, api_key=self._api_key,
                                      timeout=self.timeout_s, max_retries=0)
            return self._client

    def complete(self, *, model: str, messages: list[dict[str, str]],
                 estimated_tokens: int = 0) -> JudgeReply:
        import openai

        attempts = self.retries + 1
        last_error = ""
        last_status: int | None = None
        for attempt in range(1, attempts + 1):
            wait = self.backoff_s * (2 ** (attempt - 1))
            started = time.monotonic()
            try:
                response = self.client.chat.completions.create(
                    model=model, messages=messages, response_format={"type": "json_object"},
                )
            except openai.APITimeoutError:
                last_error, last_status = f"the judge did not answer within {self.timeout_s:g} s", None
            except openai.RateLimitError as exc:
                last_error, last_status = "the judge answered HTTP 429 (rate limited)", 429
                retry_after = parse_retry_after(exc.response.headers.get("retry-after"))
                if retry_after is not None:
                    wait = min(retry_after, self.max_retry_after_s)
            except openai.APIStatusError as exc:
                last_status = exc.status_code
                last_error = f"the judge answered HTTP {exc.status_code}{_message(exc)}"
                if exc.status_code < 500 and exc.status_code not in (408, 409):
                    raise JudgeCallError(last_error, attempts=attempt, status=exc.status_code) from None
            except openai.APIConnectionError as exc:
                last_error, last_status = f"could not connect to the judge ({_cause(exc)})", None
            except openai.OpenAIError as exc:  # a reply the client could not read, ...
                raise JudgeCallError(f"the judge's reply could not be read ({type(exc).__name__}: {exc})",
                                     attempts=attempt) from None
            else:
                latency_ms = (time.monotonic() - started) * 1000
                return _reply(response, messages, latency_ms, estimated_tokens)
            if attempt < attempts:
                self._sleep(wait)
        raise JudgeCallError(f"{last_error}, after {attempts} attempt{'s' if attempts != 1 else ''}",
                             attempts=attempts, status=last_status)


def _message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        text = error.get("message") if isinstance(error, dict) else error
        if isinstance(text, str) and text:
            return f": {text[:200]}"
    return ""


def _cause(exc: BaseException) -> str:
    cause = exc.__cause__ or exc.__context__
    return f"{type(cause).__name__}: {cause}"[:200] if cause else str(exc)[:200]


def _reply(response: Any, messages: list[dict[str, str]], latency_ms: float, estimated: int) -> JudgeReply:
    choices = getattr(response, "choices", None) or []
    text = ""
    if choices:
        message = getattr(choices[0], "message", None)
        content = getattr(message, "content", None)
        text = content if isinstance(content, str) else ""
    usage = getattr(response, "usage", None)
    tokens_in = getattr(usage, "prompt_tokens", None)
    tokens_out = getattr(usage, "completion_tokens", None)
    # A server that reports no usage is charged our estimate, so the budget still holds.
    if not isinstance(tokens_in, int):
        tokens_in = estimated or estimate_messages_tokens(messages)
    if not isinstance(tokens_out, int):
        tokens_out = estimate_tokens(text)
    return JudgeReply(text=text, tokens_in=tokens_in, tokens_out=tokens_out, latency_ms=round(latency_ms, 1),
                      model=str(getattr(response, "model", "") or ""))


class BudgetedJudge:
    """A judge client for one team: refuses once the month's budget is spent, records what it spends."""

    def __init__(self, client, team_id: int) -> None:
        self.client = client
        self.team_id = team_id

    def __repr__(self) -> str:
        return f"BudgetedJudge(team_id={self.team_id}, client={self.client!r})"

    def complete(self, *, model: str, messages: list[dict[str, str]],
                 estimated_tokens: int = 0) -> JudgeReply:
        from teams.budget import judge_usage_summary, record_judge_usage  # Django: the console only
        from teams.models import Team

        team = Team.objects.get(pk=self.team_id)
        summary = judge_usage_summary(team)
        if summary.exhausted or summary.used + max(0, estimated_tokens) > summary.budget:
            detail = (f"{summary.used:,} of {summary.budget:,} tokens used in {summary.month:%B %Y}; "
                      f"this call needs about {estimated_tokens:,} more")
            raise BudgetExhausted(detail, details={"used": summary.used, "budget": summary.budget,
                                                   "month": summary.month.isoformat()})
        reply = self.client.complete(model=model, messages=messages, estimated_tokens=estimated_tokens)
        record_judge_usage(team_id=self.team_id, tokens_in=reply.tokens_in, tokens_out=reply.tokens_out)
        return reply


# --------------------------------------------------------------------------- context wiring

_clients: dict[tuple, OpenAIJudge] = {}
_clients_lock = threading.Lock()


def _shared_client() -> OpenAIJudge | None:
    """One OpenAIJudge per distinct configuration (its connection pool is reused across evaluations)."""
    key = settings.EVALCONSOLE_JUDGE_API_KEY
    if not key:
        return None
    config = (
        settings.EVALCONSOLE_JUDGE_BASE_URL, key, float(settings.EVALCONSOLE_JUDGE_TIMEOUT_S),
        int(settings.EVALCONSOLE_JUDGE_RETRIES), settings.EVALCONSOLE_JUDGE_BACKOFF_MS / 1000,
        float(settings.EVALCONSOLE_JUDGE_MAX_RETRY_AFTER_S),
    )
    with _clients_lock:
        client = _clients.get(config)
        if client is None:
            base_url, api_key, timeout_s, retries, backoff_s, max_retry_after_s = config
            client = _clients[config] = OpenAIJudge(
                base_url=base_url, api_key=api_key, timeout_s=timeout_s, retries=retries,
                backoff_s=backoff_s, max_retry_after_s=max_retry_after_s,
            )
        return client


def judge_configured() -> bool:
    """Whether a judge key is set. Without one every ai_judge check is skipped (indeterminate)."""
    return bool(settings.EVALCONSOLE_JUDGE_API_KEY)


def judge_for_team(team_id: int | None):
    """The judge client for checks of ``team_id``: None without an API key (checks are skipped).

    Without a team (scripts, benchmarks) the client is not budgeted.
    """
    client = _shared_client()
    if client is None:
        return None
    return BudgetedJudge(client, team_id) if team_id is not None else client


def judge_settings() -> dict[str, Any]:
    """The plain values the ai_judge kind reads from ``ctx.settings``."""
    return {
        "judge_model": settings.EVALCONSOLE_JUDGE_MODEL,
        "judge_context_tokens": dict(settings.EVALCONSOLE_JUDGE_CONTEXT_TOKENS),
        "judge_default_context_tokens": int(settings.EVALCONSOLE_JUDGE_DEFAULT_CONTEXT_TOKENS),
        "judge_reply_tokens": int(settings.EVALCONSOLE_JUDGE_REPLY_TOKENS),
    }
