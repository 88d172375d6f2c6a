"""Personas and helpers shared by every test folder."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from tests import factories
from tests.support.fake_judge import fake_judge  # noqa: F401  (a loopback OpenAI-compatible judge)
from tests.support.playwright_fixtures import playwright_fixtures

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's sync API runs an event loop

# Every property test runs all its examples however busy the machine is: Hypothesis's own timing checks
# (a 200 ms deadline per example, "input generation is slow") measure the machine, not the property, and
# failed tests/runs/test_outcomes.py at load 10. A test's own @settings still sets its example count.
hypothesis_settings.register_profile("house", deadline=None, suppress_health_check=[HealthCheck.too_slow])
hypothesis_settings.load_profile("house")


# The longest tests (tens of seconds each: real `make up` cycles, schemathesis, a full browser flow, 501
# world calls), started first so that two xdist processes end together instead of one running a long
# test alone at the end. Order only: a name missing here just runs in its place.
LONG_FIRST = (
    "tests/evalconsole/test_make_up.py::",
    "tests/api/test_schemathesis.py::",
    "tests/browser/test_console_flow.py::",
    "tests/cli/test_scene_cli.py::test_the_call_budget_fails_the_trial",
    "tests/browser/test_scene_in_browser.py::",
    "tests/browser/test_untrusted_in_browser.py::",
    "tests/browser/test_lists.py::",
    "tests/adapters/test_end_to_end.py::test_a_test_with_tool_usage_checks_passes_end_to_end",
    "tests/runs/test_worker.py::",
    "tests/checks/test_kinds_registry.py::test_evaluate_never_raises_and_never_errors_on_any_evidence",
)


def _shared_fixture_group(item) -> str | None:
    """The xdist group of a test that uses a fixture shared by its package or its module, else None."""
    fixtures = getattr(item, "_fixtureinfo", None)
    scopes = {defs[-1].scope for defs in fixtures.name2fixturedefs.values() if defs} if fixtures else set()
    if "package" in scopes:
        return item.module.__name__.rpartition(".")[0]
    if "module" in scopes:
        return item.module.__name__
    return None


@pytest.hookimpl(wrapper=True)  # around xdist's worker, which reads the xdist_group marks
def pytest_collection_modifyitems(config, items):
    def rank(item):
        ranks = (i for i, prefix in enumerate(LONG_FIRST) if item.nodeid.startswith(prefix))
        return next(ranks, len(LONG_FIRST))

    # A module (a package) whose tests share a module-scoped (package-scoped) fixture (a browser, a server,
    # rows made once) runs in one xdist process (pytest.ini: --dist loadgroup), so that the fixture starts
    # once, not once per process.
    for item in items:
        group = None if item.get_closest_marker("xdist_group") else _shared_fixture_group(item)
        if group:
            item.add_marker(pytest.mark.xdist_group(group))
    items.sort(key=rank)  # stable: the rest keep their order
    yield
    if getattr(config.option, "loadgroup", False):  # set by xdist in its workers under --dist loadgroup
        _tell_the_controller_the_groups(items)


def _tell_the_controller_the_groups(items) -> None:
    """What `--dist loadgroup` needs and pytest-xdist 3.8 no longer gets through under pytest 9.2.

    xdist's worker tells the controller a test's group by appending "@<group>" to its node id, and does so
    by setting `item._nodeid`; pytest 9.2 reads a node id from `item._id` (a structured NodeId), so the
    suffix never reached the controller and every group was split between the processes (each ran the
    module's fixture: two browsers, two copies of the matrix's rows, the two `make up` rounds in two
    fresh var directories). This puts the same suffix where pytest 9.2 reads it.
    """
    from _pytest.nodeid import NodeId

    for item in items:
        names = {
            str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
            for mark in item.iter_markers("xdist_group")
        }
        suffix = "@" + "_".join(sorted(names))
        if names and not item.nodeid.endswith(suffix):
            item._id = NodeId.parse(item.nodeid + suffix)


@pytest.fixture(scope="session")
def django_db_setup(request, django_test_environment, django_db_blocker, django_db_modify_db_settings):
    """pytest-django's test database, copied from the migrated schema kept by tests/support/test_databases.py
    instead of migrated again in every pytest process."""
    from tests.support.test_databases import setup_test_databases, teardown_test_databases

    verbosity = request.config.option.verbose
    with django_db_blocker.unblock():
        config = setup_test_databases(verbosity)
    yield
    with django_db_blocker.unblock():
        try:
            teardown_test_databases(config, verbosity)
        except Exception as exc:  # as pytest-django: a database still in use is a warning, not a failure
            request.node.warn(pytest.PytestWarning(f"Error when trying to teardown test databases: {exc!r}"))


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


# Playwright per test module instead of per session (pytest-playwright's default), so that browser tests
# can share a process with the rest (tests/support/playwright_fixtures.py says why); tests/browser/ shares
# one per package.
playwright, browser_type, launch_browser, browser = playwright_fixtures("module")


@pytest.fixture(scope="module")
def browser_context_args(pytestconfig, playwright, device, base_url, _pw_artifacts_folder):
    args = {**playwright.devices[device]} if device else {}
    if base_url:
        args["base_url"] = base_url
    if pytestconfig.getoption("--video") in ["on", "retain-on-failure"]:
        args["record_video_dir"] = _pw_artifacts_folder.name
    return args


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
