"""Page-test fixtures: a fake agent on loopback, an agent row at it (with a secret header that pages must
never show), a test with checks, runs finished in place, a logged-in client.

Page test modules import them: `from tests.support.page_fixtures import live_agent, ...  # noqa: F401`.
"""

from __future__ import annotations

import pytest

from tests import factories


@pytest.fixture
def live_agent(team, admin_user, fake):
    """An agent at the fake server, never retried, with a secret header no page may show."""
    return factories.agent(
        team,
        admin_user,
        name="Fake bot",
        endpoint_url=fake.url,
        timeout_s=5.0,
        retries=0,
        headers={"Authorization": "Bearer sk-very-secret-value"},
    )


@pytest.fixture
def order_test(live_agent, member, order_checks):
    return factories.test(
        live_agent,
        member,
        test_set=factories.test_set(live_agent, member, name="Orders"),
        name="Order status",
        scenarios=[
            {"name": "Known order", "input": "Where is my order EC-1042?"},
            {"name": "No order id", "input": "Where is my parcel?"},
        ],
        checks=order_checks,
        samples=2,
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
