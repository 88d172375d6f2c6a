"""Fixtures for run execution tests: a fake agent on loopback, an agent row pointing at it, checks."""

from __future__ import annotations

import pytest

from tests import factories
from tests.support.workers import pytest_runtest_makereport, qcluster, qcluster_factory  # noqa: F401


@pytest.fixture
def live_agent(team, admin_user, fake):
    """An evalconsole-protocol agent at the fake server (short timeout, one retry)."""
    return factories.agent(
        team, admin_user, name="Fake bot", endpoint_url=fake.url, timeout_s=5.0, retries=1, max_concurrency=10
    )


@pytest.fixture
def make_test(live_agent, member, order_checks):
    """make_test(scenarios=[...], samples=1, checks=order_checks, **thresholds) -> Test of live_agent."""
    def make(scenarios=None, samples: int = 1, checks=None, test_set=None, **extra):
        return factories.test(
            live_agent, member, test_set=test_set, scenarios=scenarios or ["Where is my order EC-1042?"],
            checks=order_checks if checks is None else checks, samples=samples, **extra,
        )

    return make
