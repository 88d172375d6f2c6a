"""Fixtures for run execution tests: a fake agent on loopback, an agent row pointing at it, checks."""

from __future__ import annotations

import pytest

from tests.support.workers import pytest_runtest_makereport, qcluster, qcluster_factory  # noqa: F401


@pytest.fixture
def live_agent(team, admin_user, fake):
    """An evalconsole-protocol agent at the fake server (short timeout, one retry)."""
    from agents.services import create_agent

    return create_agent(
        team=team,
        by=admin_user,
        name="Fake bot",
        endpoint_url=fake.url,
        timeout_s=5.0,
        retries=1,
        max_concurrency=10,
    )


@pytest.fixture
def make_test(live_agent, member, order_checks):
    """make_test(scenarios=[...], samples=1, checks=order_checks, **thresholds) -> Test of live_agent."""
    from checks.services import create_test, create_test_set

    counter = {"n": 0}

    def make(scenarios=None, samples: int = 1, checks=None, test_set=None, **extra):
        counter["n"] += 1
        test_set = test_set or create_test_set(agent=live_agent, by=member, name=f"Set {counter['n']}")
        scenarios = scenarios or ["Where is my order EC-1042?"]
        checks = order_checks if checks is None else checks
        return create_test(
            test_set=test_set,
            by=member,
            name=f"Test {counter['n']}",
            scenarios=scenarios,
            checks=[{"check": c.pk, "required": True} for c in checks],
            samples_per_scenario=samples,
            min_valid_per_scenario=extra.pop("min_valid", 1),
            required_pass_rate=extra.pop("rate", 100),
            **extra,
        )

    return make
