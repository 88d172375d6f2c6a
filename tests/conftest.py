"""Personas and helpers shared by every test folder."""

from __future__ import annotations

import os

import pytest

from tests import factories
from tests.support.fake_judge import fake_judge  # noqa: F401  (a loopback OpenAI-compatible judge)

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's sync API runs an event loop


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """One line at the end when browser tests were skipped for want of Chromium, instead of bare `s`s."""
    skipped = [
        report for report in terminalreporter.stats.get("skipped", [])
        if "browser" in report.keywords and isinstance(report.longrepr, tuple)
        and "no Chromium at" in str(report.longrepr[2])
    ]
    if skipped:
        chromium = os.environ.get("EVALCONSOLE_CHROMIUM", "/usr/bin/chromium")  # as the browser tests read it
        noun = "browser test" if len(skipped) == 1 else "browser tests"
        terminalreporter.write_line(
            f"{len(skipped)} {noun} skipped: no Chromium at {chromium}; apt-get install chromium"
        )


@pytest.fixture(scope="module")
def fake_server():
    """A loopback fake agent (tests/support/fake_agent.py) shared by a module's tests."""
    from tests.support.fake_agent import FakeAgent

    with FakeAgent(latency_ms=0) as server:
        yield server


@pytest.fixture
def fake(fake_server):
    """The module's fake agent with its counters reset."""
    fake_server.reset()
    return fake_server


@pytest.fixture
def make_user(db):
    return factories.user


@pytest.fixture
def team(db):
    return factories.team("Acme")


@pytest.fixture
def other_team(db):
    return factories.team("Globex")


def _in_team(role: str, username: str):
    """A fixture: a new user `username` with `role` in `team`."""

    def person(team):
        return factories.member_of(team, role, username)

    person.__doc__ = f"{username}: {role} of `team`."
    return pytest.fixture(person)


admin_user = _in_team("admin", "ada")
member = _in_team("member", "alice")
viewer = _in_team("viewer", "victor")


@pytest.fixture
def outsider(other_team):
    """Admin of another team: must see none of `team`'s objects."""
    return factories.member_of(other_team, "admin", "bob")


@pytest.fixture
def agent(team, admin_user):
    return factories.agent(team, admin_user, name="Support bot")


@pytest.fixture
def test_set(agent, member):
    return factories.test_set(agent, member, name="Orders")


@pytest.fixture
def order_checks(live_agent, member):
    """The peers-bench pair on the folder's `live_agent`: output includes EC-1042; lookup_order was called."""
    return [
        factories.check(live_agent, member, name="Mentions order", config={"text": "EC-1042"}),
        factories.check(live_agent, member, name="Looked up the order", kind="tool_usage",
                        config={"tool": "lookup_order", "mode": "at_least", "count": 1}),
    ]
