"""Personas and helpers shared by every test folder."""

from __future__ import annotations

import os

import pytest

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
def make_user(db, django_user_model):
    def make(username: str, **extra):
        return django_user_model.objects.create_user(username=username, password="pw-" + username, **extra)

    return make


@pytest.fixture
def team(db):
    from evalconsole.services import create_team

    return create_team(name="Acme")


@pytest.fixture
def other_team(db):
    from evalconsole.services import create_team

    return create_team(name="Globex")


@pytest.fixture
def admin_user(make_user, team):
    from evalconsole.services import add_member

    user = make_user("ada")
    add_member(team=team, user=user, role="admin")
    return user


@pytest.fixture
def member(make_user, team):
    from evalconsole.services import add_member

    user = make_user("alice")
    add_member(team=team, user=user, role="member")
    return user


@pytest.fixture
def viewer(make_user, team):
    from evalconsole.services import add_member

    user = make_user("victor")
    add_member(team=team, user=user, role="viewer")
    return user


@pytest.fixture
def outsider(make_user, other_team):
    """Admin of another team: must see none of `team`'s objects."""
    from evalconsole.services import add_member

    user = make_user("bob")
    add_member(team=other_team, user=user, role="admin")
    return user


@pytest.fixture
def agent(team, admin_user):
    from agents.services import create_agent

    return create_agent(team=team, by=admin_user, name="Support bot", endpoint_url="http://127.0.0.1:9/agent")


@pytest.fixture
def test_set(agent, member):
    from checks.services import create_test_set

    return create_test_set(agent=agent, by=member, name="Orders")


@pytest.fixture
def order_checks(live_agent, member):
    """The peers-bench pair on the folder's `live_agent`: output includes EC-1042; lookup_order was called."""
    from checks.services import create_check

    return [
        create_check(agent=live_agent, by=member, name="Mentions order", kind="text_includes",
                     config={"text": "EC-1042"}),
        create_check(agent=live_agent, by=member, name="Looked up the order", kind="tool_usage",
                     config={"tool": "lookup_order", "mode": "at_least", "count": 1}),
    ]
