"""The run page's reading tools in a real browser: the "failures only" filter (swapped in place by
HTMX, reflected in the URL, cleared again), output diffs (two samples of a run; a scenario in two
runs on the compare page) and the CSV / JSON export links."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from agents.services import create_agent
from checks.services import create_test, create_test_set, edit_test
from runs import services
from tests import factories

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def finished_run(team, admin_user, fake):
    """A completed run (django-q2 sync mode calls the fake agent on commit): 2 pass, 2 fail, 2 error."""
    agent = create_agent(team=team, by=admin_user, name="Order bot", endpoint_url=fake.url, retries=0)
    check = factories.check(agent, admin_user, name="Mentions the order")  # text_includes EC-1042
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


DIFF_COLOURS = """() => ['added', 'removed', 'same'].map(op => {
  const row = document.querySelector('table.outputdiff tr.diff-' + op);
  return row ? getComputedStyle(row).backgroundColor : null;
})"""


def test_output_diff_of_two_samples_and_of_a_scenario_in_two_runs(
    page: Page, live_server, log_in, shot, admin_user, finished_run
):
    log_in("ada", "pw-ada")
    url = f"{live_server.url}{finished_run.get_absolute_url()}"
    page.goto(url)
    first, second = finished_run.samples.order_by("scenario_index", "sample_index")[1:3]  # 1.2 and 2.1
    page.evaluate("window.notReloaded = true")
    page.locator("#diff-a").select_option(str(first.pk))
    page.locator("#diff-b").select_option(str(second.pk))
    page.get_by_role("button", name="Show diff").click()
    rows = page.locator("#sample-diff table.outputdiff tbody tr")
    expect(rows).to_have_count(5)
    ops = rows.evaluate_all("rs => rs.map(r => r.className + ' ' + r.querySelector('.text').textContent)")
    assert ops == [
        "diff-removed Order EC-1042",
        "diff-added Which order?",
        "diff-same is in transit.",
        "diff-removed Arrives on Friday.",
        "diff-added Send me the order id.",
    ]
    added, removed, same = page.evaluate(DIFF_COLOURS)
    assert len({added, removed, same}) == 3 and same == "rgba(0, 0, 0, 0)"  # added and removed are tinted
    expect(page).to_have_url(f"{url}?diff_a={first.pk}&diff_b={second.pk}")
    assert page.evaluate("window.notReloaded") is True
    page.locator("#diff-picker").scroll_into_view_if_needed()
    shot("run-output-diff", full_page=False)

    # A second run of a new version of the test whose agent answers differently, then compare.
    test = finished_run.test
    scenarios = list(finished_run.test_version.scenarios)
    scenarios[0] = {
        **scenarios[0],
        "metadata": {"fake": {"output": "Order EC-1042\nwas delivered.\nArrives on Friday."}},
    }
    edit_test(test=test, by=admin_user, scenarios=scenarios)
    newer = services.launch_run(test=test, by=admin_user)
    page.goto(f"{live_server.url}/runs/compare/?a={newer.pk}&b={finished_run.pk}")
    diff = page.locator("#output-diff table.outputdiff tbody tr")
    expect(diff).to_have_count(4)  # Known order, sample 1 of each run by default
    expect(page.locator("#output-diff tr.diff-removed .text")).to_have_text("is in transit.")
    expect(page.locator("#output-diff tr.diff-added .text")).to_have_text("was delivered.")
    page.locator("#diff-scenario").select_option(label="No order id")
    page.get_by_role("button", name="Show diff").click()
    expect(page.locator("#output-diff")).to_contain_text("The two outputs are identical.")
    expect(page).to_have_url(re.compile(r"scenario=1&sample_a=1&sample_b=1"))
    page.locator("#diff-scenario").select_option(label="Known order")
    page.locator("#diff-sample-b").select_option("2")
    page.get_by_role("button", name="Show diff").click()
    expect(page.locator("#output-diff")).to_contain_text(f"run #{newer.pk} · Known order · sample 2 (pass)")
    expect(page.locator("#output-diff tr.diff-added .text")).to_have_text("was delivered.")
    page.locator("#diff-picker").scroll_into_view_if_needed()
    shot("compare-output-diff", full_page=False)


def test_export_links_download_the_run_as_csv_and_json(
    page: Page, live_server, log_in, shot, admin_user, finished_run
):
    log_in("ada", "pw-ada")
    page.goto(f"{live_server.url}{finished_run.get_absolute_url()}")
    exports = page.locator("#run-export")
    shot("run-export-links", full_page=False)
    with page.expect_download() as csv_download:
        exports.get_by_role("link", name="CSV").click()
    assert csv_download.value.suggested_filename == f"run-{finished_run.pk}-samples.csv"
    header, *rows = list(csv.reader(io.StringIO(Path(csv_download.value.path()).read_text())))
    assert header[:3] == ["run", "scenario_index", "scenario"] and len(rows) == 6  # one check, 6 samples
    with page.expect_download() as json_download:
        exports.get_by_role("link", name="JSON").click()
    assert json_download.value.suggested_filename == f"run-{finished_run.pk}-samples.json"
    samples = json.loads(Path(json_download.value.path()).read_text())
    assert sorted(s["outcome"] for s in samples) == ["error", "error", "fail", "fail", "pass", "pass"]
