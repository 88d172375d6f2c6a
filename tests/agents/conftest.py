"""Fixtures for the agent-protocol tests: real loopback servers, fake sleeps, both call styles."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agents import protocols
from tests.agents.helpers import FakeSleep
from tests.support.fake_agent import FakeAgent


@pytest.fixture(scope="module")
def fake_agent_server() -> Iterator[FakeAgent]:
    with FakeAgent() as agent:
        yield agent


@pytest.fixture
def fake_agent(fake_agent_server: FakeAgent) -> FakeAgent:
    # Let connections from the previous test wind down first, so nothing of it lands in this one's counters.
    deadline = time.monotonic() + 2
    while fake_agent_server.stats()["open_connections"] and time.monotonic() < deadline:
        time.sleep(0.01)
    fake_agent_server.reset()
    return fake_agent_server


@pytest.fixture
def fake_sleep() -> FakeSleep:
    return FakeSleep()


@pytest.fixture(params=["async", "sync"])
def call(request: pytest.FixtureRequest) -> Callable[..., protocols.AgentReply]:
    """call(target, scenario=..., sleep=FakeSleep|None, **kw): call_agent or call_agent_sync, same rules."""
    mode = request.param

    def do(
        target: protocols.AgentTarget,
        *,
        scenario: dict[str, Any],
        run_id: str = "run-1",
        sample_id: str = "sample-1",
        sleep: FakeSleep | None = None,
        client: Any = None,
    ) -> Any:
        if mode == "sync":
            kw: dict[str, Any] = {"client": client} if client is not None else {}
            if sleep is not None:
                kw["sleep"] = sleep.sync
            return protocols.call_agent_sync(
                target, scenario=scenario, run_id=run_id, sample_id=sample_id, **kw
            )

        async def go() -> protocols.AgentReply:
            kw: dict[str, Any] = {"client": client} if client is not None else {}
            if sleep is not None:
                kw["sleep"] = sleep
            return await protocols.call_agent(
                target, scenario=scenario, run_id=run_id, sample_id=sample_id, **kw
            )

        return asyncio.run(go())

    do.mode = mode  # type: ignore[attr-defined]
    return do
