"""The run page's reading tools in a real browser: the "failures only" filter (swapped in place by
HTMX, reflected in the URL, cleared again)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from agents.services import create_agent
from checks.services import create_check, create_test, create_test_set
from runs import services

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def finished_run(team, admin_user, fake):
    """A completed run (django-q2 sync mode calls the fake agent on commit): 2 pass, 2 fail, 2 error."""
    agent = create_agent(team=team, by=admin_user, name="Order bot", endpoint_url=fake.url, retries=0)
    check = create_check(
        agent=agent,
        by=admin_user,
        name="Mentions the order",
        kind="text_includes",
        config={"text": "EC-1042"},
    )
    test = create_test(
        test_set=create_test_set(agent=agent, by=admin_user, name="Orders"),
        by=admin_user,
        name="Order status",
        scenarios=[
            {
                "name": "Known order",
                "input": "Where is EC-1042?",
                "metadata": {"fake": {"output": "Order EC-1042\nis in transit.\nArrives on Friday."}},
            },
            {
                "name": "No order id",
                "input": "Where is my parcel?",
                "metadata": {"fake": {"output": "Which order?\nis in transit.\nSend me the order id."}},
            },
            {"name": "Down", "input": "EC-1042", "metadata": {"fake": {"status": 503}}},
        ],
        checks=[check.pk],
        samples_per_scenario=2,
    )
    run = services.launch_run(test=test, by=admin_user)
    run.refresh_from_db()
    assert run.status == "completed", run.status
    return run


def test_failures_only_filter_swaps_the_samples_and_updates_the_url(
    page: Page, live_server, log_in, shot, admin_user, finished_run
):
    log_in("ada", "pw-ada")
    url = f"{live_server.url}{finished_run.get_absolute_url()}"
    page.goto(url)
    samples = page.locator("#run-samples details.sample")
    expect(samples).to_have_count(6)
    page.evaluate("window.notReloaded = true")
    page.locator("#sample-filter").get_by_role("link", name="Failures only").click()
    expect(page).to_have_url(f"{url}?failures=1")
    expect(samples).to_have_count(4)
    outcomes = samples.evaluate_all("ds => ds.map(d => d.dataset.outcome)")
    assert sorted(outcomes) == ["error", "error", "fail", "fail"]
    expect(page.locator("#active-filter")).to_contain_text("failed and errored samples only, 4 of 6")
    expect(page.locator("a[data-filter=failures]")).to_have_attribute("aria-current", "true")
    assert page.evaluate("window.notReloaded") is True  # swapped in place, not a new page
    shot("run-failures-only")
    page.locator("#active-filter").get_by_role("link", name="Clear filter").click()
    expect(page).to_have_url(url)
    expect(samples).to_have_count(6)
    expect(page.locator("#active-filter")).to_have_count(0)
    page.go_back()
    expect(page).to_have_url(f"{url}?failures=1")
    expect(samples).to_have_count(4)
