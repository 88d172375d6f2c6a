"""Hostile agent output, tool calls and task transcripts stay inert in a real browser.

A fake agent answers with `<script>` and `onerror=` payloads; a real worker runs the samples (slowly,
so the page is seen polling mid-run); no dialog may open and no injected element may exist.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from checks.services import create_check
from runs import services
from tests import factories
from tests.support.fake_agent import FakeAgent

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.django_db(transaction=True)]

SCRIPT = "<script>alert('xss-script')</script>"
IMG = "<img src=x onerror=\"alert('xss-img')\" class=injected>"
SVG = '"><svg onload="alert(\'xss-svg\')" class=injected>'

HOSTILE = {
    "delay_ms": 1500,
    "output": f"Here you go {SCRIPT}{IMG}",
    "tool_calls": [
        {
            "name": f"lookup{IMG}",
            "status": "succeeded",
            "node": SVG,
            "input": {"q": SCRIPT, "html": IMG},
            "output": f"{IMG}{SCRIPT}",
        },
        {"name": "refund", "status": "failed", "input": SCRIPT, "error": SVG},
    ],
    "trace": [{"method": "GET", "path": f"/orders/{IMG}", "status": 200, "tool": SCRIPT}],
    "messages": [{"role": "user", "content": SCRIPT}, {"role": "assistant", "content": IMG}],
}

INJECTED = "() => document.querySelectorAll('main script, .injected, main svg, main img').length"


@pytest.fixture
def hostile_agent():
    with FakeAgent(latency_ms=0) as server:
        yield server


def test_hostile_run_and_task_render_inert(
    page: Page, live_server, log_in, shot, admin_user, team, qcluster, hostile_agent
):
    from agents.services import create_agent

    agent = create_agent(
        team=team, by=admin_user, name="Hostile bot", endpoint_url=hostile_agent.url, retries=0
    )
    check = factories.check(agent, admin_user, name="Mentions the order")  # text_includes EC-1042
    tool = create_check(
        agent=agent,
        by=admin_user,
        name="Looks it up",
        kind="tool_usage",
        config={"tool": f"lookup{IMG}", "mode": "at_least", "count": 1},
    )
    test = factories.test(
        agent,
        admin_user,
        name="Payloads",
        scenarios=[
            {"name": f"Payload {IMG}", "input": f"Hi {SCRIPT}", "metadata": {"fake": HOSTILE}},
            {"name": "Plain", "input": "Where is EC-1042?", "metadata": {"fake": {"delay_ms": 4000}}},
        ],
        checks=[check, tool],
        samples=2,
    )
    factories.task(
        agent,
        admin_user,
        external_id="hostile-1",
        messages=HOSTILE["messages"],
        output=HOSTILE["output"],
        tool_calls=HOSTILE["tool_calls"],
        trace=HOSTILE["trace"],
    )

    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    log_in("ada", "pw-ada")
    run = services.launch_run(test=test, by=admin_user)
    page.goto(f"{live_server.url}{run.get_absolute_url()}")
    expect(page.locator("#run-progress")).to_have_attribute("hx-trigger", "every 1s")  # polling while it runs
    expect(page.locator("#run-percent")).to_have_text("50 %", timeout=30_000)  # the fast scenario is done
    expect(page.locator("#run-status")).to_have_text("Running")
    shot("run-live", full_page=False)
    opened = page.locator("details.sample[data-outcome=fail]").first
    opened.locator(":scope > summary").click()
    opened_id = opened.get_attribute("id")
    expect(page.locator("#run-percent")).to_have_text("100 %", timeout=60_000)
    finished = "#run-samples details.sample:not([data-outcome=queued]):not([data-outcome=running])"
    expect(page.locator(finished)).to_have_count(4)  # the samples region refreshed once more
    assert page.locator(f"#{opened_id}").evaluate("d => d.open")  # the samples refreshed, it stayed open
    page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    expect(page.locator("details.sample").first.locator(".convo")).to_contain_text(
        "<script>alert('xss-script')"
    )
    expect(page.locator(".tool-calls").first).to_contain_text("onerror=")  # shown as text
    page.wait_for_timeout(300)
    assert page.evaluate(INJECTED) == 0
    assert dialogs == []

    page.goto(f"{live_server.url}/tasks/")
    page.wait_for_load_state("networkidle")
    assert page.evaluate(INJECTED) == 0
    page.locator("a[href*='/tasks/']").filter(has_text="hostile-1").first.click()
    page.wait_for_load_state("networkidle")
    page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    expect(page.locator("main")).to_contain_text("<script>alert('xss-script')</script>")
    page.wait_for_timeout(300)
    assert page.evaluate(INJECTED) == 0
    assert dialogs == []
