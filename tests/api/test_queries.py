"""List endpoints run a fixed number of queries whatever the number of rows (1 vs N)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

pytestmark = pytest.mark.django_db

N = 6


def _grow(kind: str, n: int, *, team, admin_user, member, library, start: int = 0) -> str:
    """Add `n` rows of `kind` (with their related rows) and return the list URL."""
    from agents.services import create_agent
    from checks import services as checks
    from runs import services as runs
    from teams.services import issue_token

    agent, test_set = library["agent"], library["test_set"]
    for i in range(start, start + n):
        if kind == "agents":
            create_agent(
                team=team,
                by=admin_user,
                name=f"Bot {kind}{i}",
                endpoint_url="http://127.0.0.1:9/",
                nodes=[{"name": "a", "kind": "tool"}, {"name": "b"}],
            )
        elif kind == "checks":
            check = checks.create_check(
                agent=agent, by=member, name=f"Check {i}", kind="text_includes", config={"text": "x"}
            )
            checks.edit_check(check=check, by=member, config={"text": "y"})
        elif kind == "test-sets":
            new_set = checks.create_test_set(agent=agent, by=member, name=f"Set {i}")
            checks.create_test(test_set=new_set, by=member, name="T", scenarios=[{"input": "hi"}])
        elif kind == "tests":
            checks.create_test(
                test_set=test_set,
                by=member,
                name=f"Test {i}",
                scenarios=[{"input": "a"}, {"input": "b"}],
                checks=[{"check": library["check"].pk}, {"check": library["extra_check"].pk}],
            )
        elif kind == "runs":
            runs.launch_run(test=library["test"], by=member, additional_checks=[library["extra_check"]])
        elif kind == "samples":
            pass  # one run, more samples: see the test below
        elif kind == "versions":
            checks.edit_check(check=library["check"], by=member, config={"text": f"v{i}"})
        elif kind == "tokens":
            issue_token(user=member, name=f"token {i}")
    return {
        "samples": f"/api/v1/runs/{library['run'].pk}/samples/",
        "versions": f"/api/v1/checks/{library['check'].pk}/versions/",
    }.get(kind, f"/api/v1/{kind}/")


def _count(api, url) -> int:
    api.get("member", url)  # warm up: the token's last_used_at write happens at most once a minute
    with CaptureQueriesContext(connection) as queries:
        response = api.get("member", url)
    assert response.status_code == 200, response.content
    return len(queries)


# Every list starts with the token lookup and ends with the page. These first pages are not full (1 and
# 1 + N rows of 50), so the paginator counts their rows instead of asking a COUNT (core.listing.Paginator;
# a full page's count: test_a_full_first_page_is_counted).
QUERIES = {
    "agents": 3,  # token, agents, their nodes
    "checks": 2,  # token, checks with agent and current version
    "test-sets": 3,  # token, test sets with agent, their tests
    "tests": 4,  # token, tests with test set, agent and current version, attached checks, scenes
    "runs": 3,  # token, runs with agent, test, test version, launcher, run checks with check versions
    "versions": 3,  # token, the check, its versions with their authors
    "tokens": 2,  # token, tokens
}


@pytest.mark.parametrize("kind", list(QUERIES))
def test_list_queries_do_not_grow_with_rows(kind, api, team, admin_user, member, library):
    url = _grow(kind, 1, team=team, admin_user=admin_user, member=member, library=library)
    assert _count(api, url) == QUERIES[kind]
    _grow(kind, N, team=team, admin_user=admin_user, member=member, library=library, start=1)
    assert api.get("member", url).json()["count"] >= N
    assert _count(api, url) == QUERIES[kind]


def test_run_list_query_count(api, library, django_assert_num_queries):
    api.get("member", "/api/v1/runs/")
    # token, runs (with agent, test, test version, launcher), their run checks with check versions (a
    # first page that is not full: no count query)
    with django_assert_num_queries(3):
        api.get("member", "/api/v1/runs/")


def test_sample_list_queries_do_not_grow_with_samples_or_results(api, library, member):
    from checks.services import edit_test
    from runs import services as runs
    from runs.models import CheckResult, Sample

    def finished_run(scenarios: int, samples: int):
        edit_test(
            test=library["test"],
            by=member,
            scenarios=[{"input": f"q{i}"} for i in range(scenarios)],
            samples_per_scenario=samples,
            min_valid_per_scenario=1,
        )
        run = runs.launch_run(test=library["test"], by=member, additional_checks=[library["extra_check"]])
        for sample in Sample.objects.filter(run=run):
            for rc in run.run_checks.all():
                CheckResult.objects.create(
                    sample=sample, check_version_id=rc.check_version_id, outcome="pass", explanation="ok"
                )
        return f"/api/v1/runs/{run.pk}/samples/"

    small = _count(api, finished_run(1, 1))
    big_url = finished_run(2, 5)
    assert api.get("member", big_url).json()["count"] == 10
    # token, run (with its test version), samples, their results with check versions (a first page that
    # is not full: no count query)
    assert _count(api, big_url) == small == 4
