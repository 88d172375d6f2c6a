"""Consistency in a real browser: the run page's pass^k table, the compare page's regression and the
test page's chart across runs (uPlot, loaded into the page by htmx), with screenshots to look at."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from agents.services import create_agent
from checks.services import create_test, create_test_set, edit_check, edit_test
from runs import services
from tests import factories

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WOBBLY = {
    "name": "Wobbly",
    "input": "Refund EC-2001",
    "metadata": {"fake": {"outputs": ["DONE", "no", "DONE", "no", "DONE"]}},
}
STEADY = {"name": "Steady", "input": "Refund EC-1042", "metadata": {"fake": {"outputs": ["DONE"]}}}


def test_pass_hat_k_on_the_run_compare_and_test_pages(
    page: Page, live_server, log_in, shot, team, admin_user, fake
):
    agent = create_agent(team=team, by=admin_user, name="Refund bot", endpoint_url=fake.url, retries=0)
    check = factories.check(agent, admin_user, name="Says DONE", config={"text": "DONE"})
    steady_wobbly = {**WOBBLY, "metadata": {"fake": {"outputs": ["DONE"]}}}
    test = create_test(
        test_set=create_test_set(agent=agent, by=admin_user, name="Refunds"),
        by=admin_user,
        name="Refunds",
        scenarios=[STEADY, steady_wobbly],
        checks=[check.pk],
        samples_per_scenario=5,
        required_pass_rate=50,
    )
    before = services.launch_run(test=test, by=admin_user)
    edit_check(check=check, by=admin_user, config={"text": "DONE", "case_sensitive": False})
    edit_test(test=test, by=admin_user, scenarios=[STEADY, WOBBLY])
    after = services.launch_run(test=test, by=admin_user)
    after.refresh_from_db()
    assert after.status == "completed"

    log_in("ada", "pw-ada")
    page.goto(f"{live_server.url}{after.get_absolute_url()}")
    table = page.locator("#consistency-table")
    wobbly = table.locator('tr[data-scenario="1"][data-figure="pass^k"]')
    expect(wobbly.locator('td[data-k="1"]')).to_have_text("0.6")
    expect(wobbly.locator('td[data-k="3"]')).to_have_text("0.1")
    expect(wobbly.locator('td[data-k="5"]')).to_have_text("0")
    expect(table.locator('tr[data-scenario="all"][data-figure="pass^k"] td[data-k="3"]')).to_have_text("0.55")
    table.scroll_into_view_if_needed()
    shot("consistency-run")

    page.goto(f"{live_server.url}/runs/compare/?a={before.pk}&b={after.pk}")
    expect(page.locator("#regressions")).to_contain_text("Wobbly: pass^1 1 → 0.6")
    shot("consistency-compare")

    page.goto(f"{live_server.url}{test.get_absolute_url()}")
    expect(page.locator("#consistency-chart canvas").first).to_be_visible()
    expect(page.locator("#consistency-chart .u-legend")).to_contain_text("Wobbly pass^5")
    page.locator("#test-consistency").scroll_into_view_if_needed()
    shot("consistency-test-chart")
