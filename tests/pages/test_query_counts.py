"""Every list page runs the same number of queries for 1 row and for N rows (no N+1)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agents.services import create_agent
from checks.services import create_check, create_test, create_test_set, edit_check
from runs import services
from teams.services import issue_token

pytestmark = pytest.mark.django_db

N = 6


@pytest.fixture
def measure(login, member, django_assert_num_queries):
    """measure(url, add_rows, expected): `expected` queries with one row, and again after add_rows()."""

    def run(url, add_rows, expected, *, user=None, contains=()):
        client = login(user or member)
        client.get(url)  # warm caches (content types, session) outside the counted request
        with django_assert_num_queries(expected):
            first = client.get(url)
        add_rows()
        with django_assert_num_queries(expected):
            second = client.get(url)
        assert first.status_code == second.status_code == 200
        html = second.content.decode()
        for text in contains:
            assert text in html
        return html

    return run


def _checks(agent, member, n, kind="text_includes"):
    return [
        create_check(
            agent=agent,
            by=member,
            name=f"{kind} {i}",
            kind=kind,
            config={"text": f"t{i}"} if kind == "text_includes" else {"max_ms": 10 + i},
        )
        for i in range(n)
    ]


def test_agent_list(measure, team, admin_user, agent):
    def add():
        for i in range(N):
            a = create_agent(team=team, by=admin_user, name=f"Agent {i}", endpoint_url="http://127.0.0.1:9/")
            _checks(a, admin_user, 2)

    # session, user, the user's teams (current team and switcher), membership (role), active/archived
    # counts, COUNT agents, agents page with check/test-set/last-run subqueries
    measure(reverse("agents:agent-list"), add, 7, contains=["Agent 5"])


def test_check_list(measure, agent, member):
    _checks(agent, member, 1)

    def add():
        checks = _checks(agent, member, N) + _checks(agent, member, N, kind="latency")
        test_set = create_test_set(agent=agent, by=member, name="S")
        create_test(
            test_set=test_set, by=member, name="T", scenarios=["x"], checks=[c.pk for c in checks[:3]]
        )

    # session, user, agent, the usage counts (all / in tests / in dashboards / unused / archived: one
    # aggregate), COUNT for the page, checks page (current version, usage subqueries), membership, the
    # user's teams (current team and switcher)
    measure(reverse("checks:check-list", args=[agent.pk]), add, 8, contains=["latency 5", "text_includes 5"])


def test_check_list_sorted_and_searched(measure, agent, member):
    _checks(agent, member, 1)

    def add():
        _checks(agent, member, N)
        _checks(agent, member, N, kind="latency")

    # the same 8 queries as test_check_list (with the archived count): the search narrows the library
    # and its counts, the sort orders the page
    url = f"{reverse('checks:check-list', args=[agent.pk])}?q=e&sort=-used&used=unused"
    measure(url, add, 8, contains=["latency 5", "text_includes 5"])


def test_testset_list(measure, agent, member):
    create_test(
        test_set=create_test_set(agent=agent, by=member, name="S0"), by=member, name="T", scenarios=["x"]
    )

    def add():
        for i in range(1, N):
            ts = create_test_set(agent=agent, by=member, name=f"S{i}")
            for j in range(3):
                test = create_test(test_set=ts, by=member, name=f"T{j}", scenarios=["x"])
                services.launch_run(test=test, by=member)

    # session, user, the user's teams (current team, switcher), COUNT sets, sets page (+agent), tests
    # prefetch (+current version, last-run subqueries), membership, agents for the "new set" picker
    measure(reverse("checks:testset-list"), add, 8, contains=["S5"])


def test_testset_detail(measure, test_set, member):
    create_test(test_set=test_set, by=member, name="T0", scenarios=["x"])

    def add():
        for i in range(1, N):
            test = create_test(test_set=test_set, by=member, name=f"T{i}", scenarios=["x", "y"])
            services.launch_run(test=test, by=member)

    # session, user, test set (+agent, team), COUNT tests, tests page (+version, creator, counts, last run),
    # membership, the user's teams (current, switcher)
    measure(test_set.get_absolute_url(), add, 7, contains=["T5"])


def test_test_detail(measure, test_set, member, agent):
    checks = _checks(agent, member, 1)
    test = create_test(test_set=test_set, by=member, name="T", scenarios=["x"], checks=[checks[0].pk])
    services.launch_run(test=test, by=member)

    def add():
        more = _checks(agent, member, N, kind="latency")
        for i in range(N):
            edit_test_kwargs = {"scenarios": ["x"] * (i % 3 + 1), "checks": [c.pk for c in more[: i + 1]]}
            from checks.services import edit_test

            edit_test(test=test, by=member, **edit_test_kwargs)
            services.launch_run(test=test, by=member)

    # session, user, test (+set, agent, team, version, creator), attached checks (+check, version),
    # versions (+creator, run counts), runs (+version, launcher), membership, the user's teams
    measure(test.get_absolute_url(), add, 8)


def test_check_detail_versions(measure, agent, member):
    check = _checks(agent, member, 1)[0]

    def add():
        for i in range(N):
            edit_check(check=check, by=member, config={"text": f"v{i}"})

    # session, user, check (+agent, team, version, creator), COUNT versions, versions page (+creator,
    # run counts), tests using it, monitors, recent runs using it, membership, the user's teams
    measure(check.get_absolute_url(), add, 10, contains=["Version 7"])


def test_run_list(measure, order_test, member):
    services.launch_run(test=order_test, by=member)

    def add():
        for _ in range(N):
            services.launch_run(test=order_test, by=member)

    # session, user, the user's teams (current team, switcher), COUNT runs, runs page (+agent, test,
    # version, launcher), agents and tests for the filter selects
    measure(reverse("runs:run-list"), add, 7)


def test_run_list_sorted_and_searched(measure, order_test, member):
    services.launch_run(test=order_test, by=member)

    def add():
        for _ in range(N):
            services.launch_run(test=order_test, by=member)

    # the same 8 queries: sorting and searching change the runs query, never add one
    measure(f"{reverse('runs:run-list')}?sort=-agent&q=order", add, 7)


def test_run_list_of_one_agent(measure, order_test, member):
    services.launch_run(test=order_test, by=member)
    agent = order_test.test_set.agent

    def add():
        for _ in range(N):
            services.launch_run(test=order_test, by=member)

    # the 8 queries, plus the picked agent (its tabs show its kind, protocol and address: no more)
    measure(f"{reverse('runs:run-list')}?agent={agent.pk}", add, 8, contains=[agent.shown_endpoint_url])


def test_run_detail_samples(measure, login, member, live_agent, order_checks, run_now):
    test_set = create_test_set(agent=live_agent, by=member, name="Q")
    small = create_test(
        test_set=test_set, by=member, name="Small", scenarios=["EC-1042"], checks=[c.pk for c in order_checks]
    )
    big = create_test(
        test_set=test_set,
        by=member,
        name="Big",
        scenarios=["EC-1042", "hello", "EC-2001"],
        checks=[c.pk for c in order_checks],
        samples_per_scenario=3,
    )
    one, many = run_now(small), run_now(big)
    client = login(member)
    counts = []
    for run in (one, many):
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        client.get(run.get_absolute_url())
        with CaptureQueriesContext(connection) as ctx:
            client.get(run.get_absolute_url())
        counts.append(len(ctx.captured_queries))
    # session, user, run (+agent, test, version, launcher, token), run checks, samples, their results
    # (+check versions), runs to compare with, membership, the user's teams (current, switcher)
    assert counts == [9, 9]


def test_token_list(measure, member):
    issue_token(user=member, name="first")

    def add():
        for i in range(N):
            issue_token(user=member, name=f"t{i}")

    # session, user, COUNT tokens, tokens page, the user's teams (current, switcher)
    measure(reverse("token-list"), add, 5, contains=["t5"])


def test_archived_agent_and_check_lists(measure, team, admin_user, agent):
    from agents.services import archive_agent
    from checks.services import archive_check

    archive_check(check=_checks(agent, admin_user, 1)[0], by=admin_user)
    archive_agent(
        agent=create_agent(team=team, by=admin_user, name="Spare 0", endpoint_url="http://127.0.0.1:9/"),
        by=admin_user,
    )

    def add_agents():
        for i in range(1, N):
            extra = create_agent(team=team, by=admin_user, name=f"Spare {i}", endpoint_url="http://127.0.0.1:9/")
            archive_agent(agent=extra, by=admin_user)

    def add_checks():
        for check in _checks(agent, admin_user, N, kind="latency"):
            archive_check(check=check, by=admin_user)

    # the same queries as the active lists (see test_agent_list and test_check_list)
    url = reverse("agents:agent-list") + "?archived=1"
    measure(url, add_agents, 7, user=admin_user, contains=["Spare 5"])
    url = reverse("checks:check-list", args=[agent.pk]) + "?archived=1"
    measure(url, add_checks, 8, user=admin_user, contains=["latency 5", "Restore"])


def test_check_library_across_agents(measure, team, admin_user, agent, member):
    _checks(agent, member, 1)

    def add():
        for i in range(N):
            other = create_agent(team=team, by=admin_user, name=f"Agent {i}", endpoint_url="http://127.0.0.1:9/")
            _checks(other, member, 2, kind="latency")

    # session, user, the user's teams (current team, switcher), COUNT checks, the page of checks (+agent,
    # current version, usage subqueries), agents for the filter select
    measure(reverse("checks:check-index"), add, 6, contains=["Agent 5", "latency 1"])
