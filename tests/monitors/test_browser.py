"""The monitor chart and the select -> choose checks -> grid flow in a real Chromium, by keyboard."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from monitors import services as monitoring
from tests.monitors.conftest import task_item

CHROMIUM = os.environ.get("EVALCONSOLE_CHROMIUM", "/usr/bin/chromium")
SHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"  # git-ignored, to look at
pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"no Chromium at {CHROMIUM}"),
]


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    args = [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
    ]
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": args}


def login(page: Page, live_server, username: str) -> None:
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", f"pw-{username}")
    page.press("input[name=password]", "Enter")
    page.wait_for_load_state()


def test_monitor_chart_and_keyboard_evaluation_flow(page: Page, live_server, member, agent, make_check):
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("dialog", lambda dialog: (errors.append(f"dialog: {dialog.message}"), dialog.dismiss()))
    check = make_check("Mentions answer", text="answer")
    monitor = monitoring.create_monitor(
        agent=agent, by=member, name="Live", checks=[check.pk], sample_rate=100
    )
    now = datetime.now(UTC)
    items = [
        task_item(i, when=now - timedelta(hours=i % 5), output="answer" if i % 3 else "nope")
        for i in range(12)
    ]
    monitoring.ingest_tasks(agent=agent, by=member, items=items)  # evaluated synchronously (test settings)
    login(page, live_server, member.username)

    page.goto(f"{live_server.url}{monitor.get_absolute_url()}")
    expect(page.locator("#monitor-chart canvas")).to_have_count(1)  # uPlot drew from the vendored file
    expect(page.locator(".u-legend")).to_contain_text("Mentions answer v1")
    page.get_by_role("link", name="Daily").focus()
    page.keyboard.press("Enter")  # HTMX swaps the dashboard; the chart is drawn again
    expect(page).to_have_url(f"{live_server.url}{monitor.get_absolute_url()}?bucket=day")
    expect(page.locator("#monitor-chart canvas")).to_have_count(1)

    page.goto(f"{live_server.url}/tasks/")
    for i in range(3):
        page.locator("#task-results tbody input[type=checkbox]").nth(i).focus()
        page.keyboard.press("Space")
    page.get_by_role("button", name="Choose checks…").focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", level=1)).to_have_text("Evaluate 3 tasks of Support bot")
    page.get_by_label("Mentions answer (v1, text_includes)").focus()
    page.keyboard.press("Space")
    page.get_by_role("button", name="Launch evaluation").focus()
    page.keyboard.press("Enter")
    expect(page.get_by_text("3 of 3 results recorded")).to_be_visible()
    expect(page.locator("table.grid tbody .badge")).to_have_count(3)
    assert errors == []


def test_monitor_form_shows_inline_errors_instead_of_browser_popups(
    page: Page, live_server, member, agent, make_check
):
    """Submitting bad values reaches the server, which names each problem under its field (issue 14, 13)."""
    make_check("Mentions answer", text="answer")
    login(page, live_server, member.username)
    page.goto(f"{live_server.url}/monitors/new/?agent={agent.pk}")
    page.get_by_label("Sample rate (%)").fill("150")
    page.get_by_role("button", name="Create monitor").click()
    page.wait_for_load_state()
    name_errors = page.locator("#id_name_error")
    expect(name_errors).to_have_text("a monitor needs a name")
    expect(page.locator("#id_sample_rate_error")).to_have_text("must be a percentage between 0 and 100")
    expect(page.locator("#id_checks_error")).to_have_text(
        "choose at least one check to run on the sampled tasks"
    )
    expect(page.get_by_label("Name")).to_have_attribute("aria-invalid", "true")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "monitor_form_errors.png"), full_page=True)


def test_task_list_search_box_and_sortable_headers(page: Page, live_server, member, admin_user, team, agent):
    from agents.services import create_agent

    other = create_agent(team=team, by=admin_user, name="Alpha bot", endpoint_url="http://127.0.0.1:9/alpha")
    items = [task_item(i) for i in range(4)]
    items[1]["output"] = "Your refund is on its way"
    monitoring.ingest_tasks(agent=agent, by=member, items=items)
    monitoring.ingest_tasks(agent=other, by=member, items=[task_item(9)])
    login(page, live_server, member.username)
    page.goto(f"{live_server.url}/tasks/")
    rows = page.locator("#task-results tbody tr")
    expect(rows).to_have_count(5)
    page.get_by_role("searchbox", name="Search").fill("refund")
    page.get_by_role("searchbox", name="Search").press("Enter")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("conv-1")
    expect(page).to_have_url(
        f"{live_server.url}/tasks/?agent=&completed_after=&completed_before=&q=refund&has_failures=&sort=-completed_at"
    )
    page.goto(f"{live_server.url}/tasks/")
    page.locator("#task-results").get_by_role("link", name="Agent", exact=True).click()
    expect(page.get_by_role("columnheader", name="Agent", exact=True)).to_have_attribute(
        "aria-sort", "ascending"
    )
    expect(rows.first).to_contain_text("Alpha bot")
    page.locator("#task-results").get_by_role("link", name="Agent", exact=True).click()
    expect(page.get_by_role("columnheader", name="Agent", exact=True)).to_have_attribute(
        "aria-sort", "descending"
    )
    expect(rows.first).to_contain_text("Support bot")
    expect(page.get_by_label("Sort by")).to_have_value("-agent")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "task_list_sorted.png"), full_page=True)
