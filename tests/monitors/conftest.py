"""Fixtures for live tasks, monitors and evaluations."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest


def task_item(
    i: int, *, output: str | None = None, tool_calls=None, when: datetime | None = None, **extra
) -> dict:
    """One ingestion item, as a production service would post it."""
    when = when or datetime(2025, 1, 1, tzinfo=UTC) + timedelta(minutes=i)
    return {
        "external_id": f"conv-{i}",
        "messages": [
            {"role": "user", "content": f"question {i}"},
            {"role": "assistant", "content": output or f"answer {i}"},
        ],
        "output": output if output is not None else f"answer {i}",
        "tool_calls": tool_calls,
        "metadata": {"customer": f"c{i % 7}", "plan": "pro" if i % 2 else "free"},
        "latency_ms": 120.5,
        "completed_at": when.isoformat(),
        **extra,
    }


@pytest.fixture
def make_check(agent, member):
    from checks.services import create_check

    def make(name: str, kind: str = "text_includes", **config):
        if kind == "text_includes" and not config:
            config = {"text": "answer"}
        return create_check(agent=agent, by=member, name=name, kind=kind, config=config)

    return make


@pytest.fixture
def checks(make_check):
    return [make_check("Says answer", text="answer"), make_check("Says refund", text="refund")]


@pytest.fixture
def api(member):
    """An API client holding a member's write token (what production automation uses)."""
    from rest_framework.test import APIClient

    from teams.services import issue_token

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_token(user=member, name='ingest').secret}")
    return client


@pytest.fixture
def api_as():
    from rest_framework.test import APIClient

    from teams.services import issue_token

    def make(user, *, can_write: bool = True):
        client = APIClient()
        client.credentials(
            HTTP_AUTHORIZATION=f"Bearer {issue_token(user=user, name='t', can_write=can_write).secret}"
        )
        return client

    return make
