"""Page-test fixtures: a fake agent on loopback, an agent row at it (with a secret header that pages must
never show), a test with checks, runs finished in place, a logged-in client.

Page test modules import them: `from tests.support.page_fixtures import live_agent, ...  # noqa: F401`.
"""

from __future__ import annotations

import pytest


@pytest.fixture
def live_agent(team, admin_user, fake):
    from agents.services import create_agent

    return create_agent(
        team=team,
        by=admin_user,
        name="Fake bot",
        endpoint_url=fake.url,
        timeout_s=5.0,
        retries=0,
        headers={"Authorization": "Bearer sk-very-secret-value"},
    )


@pytest.fixture
def order_test(live_agent, member, order_checks):
    from checks.services import create_test, create_test_set

    test_set = create_test_set(agent=live_agent, by=member, name="Orders")
    return create_test(
        test_set=test_set,
        by=member,
        name="Order status",
        scenarios=[
            {"name": "Known order", "input": "Where is my order EC-1042?"},
            {"name": "No order id", "input": "Where is my parcel?"},
        ],
        checks=[{"check": c.pk, "required": True} for c in order_checks],
        samples_per_scenario=2,
    )


@pytest.fixture
def run_now(django_capture_on_commit_callbacks, member):
    """run_now(test, **launch kwargs) -> a Run whose samples ran (django-q2 sync mode, fake agent)."""
    from runs import services

    def run(test, by=None, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            launched = services.launch_run(test=test, by=by or member, **kwargs)
        launched.refresh_from_db()
        return launched

    return run


@pytest.fixture
def login(client):
    def as_user(user):
        client.force_login(user)
        return client

    return as_user
