"""A real OpenAI-compatible judge server on loopback, wired into the settings the judge client reads."""

from __future__ import annotations

import pytest

from tests.support.fake_openai import FakeOpenAI

JUDGE_KEY = "sk-test-judge-key"


@pytest.fixture
def fake_judge(settings):
    """A FakeOpenAI server; the console's judge settings point at it (short timeout, no backoff)."""
    with FakeOpenAI(mode="pass", hang_s=10.0) as fake:
        settings.EVALCONSOLE_JUDGE_BASE_URL = fake.base_url
        settings.EVALCONSOLE_JUDGE_API_KEY = JUDGE_KEY
        settings.EVALCONSOLE_JUDGE_MODEL = "judge-mini"
        settings.EVALCONSOLE_JUDGE_TIMEOUT_S = 0.5
        settings.EVALCONSOLE_JUDGE_RETRIES = 2
        settings.EVALCONSOLE_JUDGE_BACKOFF_MS = 0
        settings.EVALCONSOLE_JUDGE_MAX_RETRY_AFTER_S = 5
        settings.EVALCONSOLE_JUDGE_MONTHLY_TOKEN_BUDGET = 1_000_000
        yield fake
