"""Sortable columns and the search box on the runs list and the checks tab, in a real browser."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from checks.services import create_check, create_test, create_test_set
from runs import services

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_sort_the_runs_list_and_search_the_checks_tab(
    page: Page, live_server, log_in, shot, admin_user, agent, monkeypatch
):
    checks = [
        create_check(agent=agent, by=admin_user, name=name, kind="text_includes", config={"text": name})
        for name in ("Mentions the refund", "Mentions the order", "Greets the user")
    ]
    test_set = create_test_set(agent=agent, by=admin_user, name="Orders")
    tests = [
        create_test(test_set=test_set, by=admin_user, name=name, scenarios=["hi"], checks=[checks[0].pk])
        for name in ("Refunds", "Address change")
    ]
    # Queued runs (no worker is asked to call the agent): a few per test, newest first by default.
    monkeypatch.setattr(services, "enqueue_drain", lambda: None)
    for test in (tests[0], tests[1], tests[0]):
        services.launch_run(test=test, by=admin_user)
    log_in("ada", "pw-ada")

    page.goto(f"{live_server.url}/runs/")
    tests_column = page.locator("#run-table tbody tr td:nth-child(3) a")
    expect(tests_column).to_have_text(["Refunds", "Address change", "Refunds"])
    page.locator("#run-table").get_by_role("link", name="Test").click()
    expect(page).to_have_url(re.compile(r"\?sort=test$"))
    expect(tests_column).to_have_text(["Address change", "Refunds", "Refunds"])
    expect(page.locator("#run-table th[aria-sort=ascending]")).to_have_text(re.compile("Test"))
    page.locator("#run-table").get_by_role("link", name="Test").click()  # again: descending
    expect(page).to_have_url(re.compile(r"\?sort=-test$"))
    expect(tests_column).to_have_text(["Refunds", "Refunds", "Address change"])
    page.get_by_label("Search").fill("address")
    page.get_by_role("button", name="Filter").click()
    expect(tests_column).to_have_text(["Address change"])
    expect(page).to_have_url(re.compile(r"q=address.*sort=-test|sort=-test.*q=address"))  # the sort is kept
    shot("runs-sorted-searched")

    page.goto(f"{live_server.url}/checks/agents/{agent.pk}/")
    rows = page.locator("#checks-panel tr.check-row")
    expect(rows).to_have_count(3)
    page.evaluate("window.notReloaded = true")
    page.locator("#check-q").fill("mentions")
    page.locator("#check-search").get_by_role("button", name="Search").click()
    expect(rows).to_have_count(2)
    expect(page).to_have_url(re.compile(r"\?q=mentions$"))
    assert page.evaluate("window.notReloaded") is True  # swapped in place by HTMX
    expect(page.locator("a[data-filter=all] .count")).to_have_text("2")
    page.locator("a[data-filter=in_tests]").click()
    expect(rows).to_have_count(1)
    expect(page).to_have_url(re.compile(r"\?q=mentions&used=in_tests$"))  # the search survives a filter
    page.locator("a[data-filter=all]").click()
    expect(rows).to_have_count(2)
    page.locator("#checks-panel a.sort[data-sort=name]").first.click()
    expect(page).to_have_url(re.compile(r"\?q=mentions&sort=-name$"))  # name is the default: flips
    expect(rows).to_have_text([re.compile("Mentions the refund"), re.compile("Mentions the order")])
    shot("checks-searched-sorted")
