"""A team member's day in a real browser, against a live server and a real qcluster worker.

Register an agent at the demo agent (a secret header), ping it, create three checks of different kinds,
build a test with two scenarios (one single input, one chat transcript), launch it with an additional
check, watch the progress reach 100 % without reloading, open a failing sample and read its
explanation, filter the checks tab, edit a check (version 2) while the old run keeps version 1, and
compare two runs. Screenshots of each main page go to docs/screenshots/.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from agents.demo_agent import DemoAgent

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.django_db(transaction=True)]

LABELLED = """() => [...document.querySelectorAll('input, select, textarea')]
  .filter(el => !['hidden', 'submit', 'button'].includes(el.type) && !el.classList.contains('offscreen'))
  .filter(el => !(el.labels && el.labels.length))
  .filter(el => !el.getAttribute('aria-label') && !el.getAttribute('aria-labelledby'))
  .map(el => el.name || el.id)"""


def assert_fields_labelled(page: Page) -> None:
    assert page.evaluate(LABELLED) == [], page.url


@pytest.fixture
def demo_agent():
    with DemoAgent(token="s3cret-demo-token") as agent:
        yield agent


def new_check(page: Page, name: str, kind: str, fill) -> None:
    page.get_by_role("link", name="New check").click()
    if page.locator("#id_kind").input_value() != kind:
        with page.expect_response(lambda r: f"kind={kind}" in r.url):
            page.locator("#id_kind").select_option(kind)
    expect(page.locator("#config-fields")).to_have_attribute("data-kind", kind)  # swapped in place by HTMX
    page.locator("#id_name").fill(name)
    fill()
    page.get_by_role("button", name="Create check").click()
    expect(page.locator("h2", has_text=name)).to_be_visible()
    page.locator(".crumbs").get_by_role("link", name="Checks").click()


def test_build_run_and_read_results(page: Page, live_server, log_in, shot, admin_user, qcluster, demo_agent):
    base = live_server.url
    log_in("ada", "pw-ada")

    # -- register the agent, with its API key as a write-only header, and ping it
    page.get_by_role("link", name="Register an agent").click()
    assert_fields_labelled(page)
    page.locator("#id_name").fill("Demo support")
    page.get_by_label("Endpoint URL").fill(demo_agent.url)
    page.get_by_label("Headers (secret)").fill("Authorization: Bearer s3cret-demo-token")
    page.get_by_role("button", name="Register agent").click()
    expect(page.get_by_role("heading", name="Demo support", level=1)).to_be_visible()
    page.get_by_role("button", name="Ping agent").click()
    expect(page.locator("#ping-result")).to_contain_text("Reachable")
    expect(page.locator("#ping-result")).to_contain_text(
        "I can help with order status"
    )  # its reply, in place
    assert "s3cret-demo-token" not in page.content()
    shot("agent")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Agents").click()
    shot("agents")
    page.get_by_role("link", name="Demo support").click()

    # -- three checks of different kinds
    page.locator("nav.tabs").get_by_role("link", name="Checks").click()

    def text_check():
        page.locator("#id_cfg-text").fill("has shipped")

    def tool_check():
        page.locator("#id_cfg-tool").fill("lookup_order")
        page.locator("#id_cfg-count").fill("1")
        page.get_by_role("button", name="+ Add a row").click()
        page.locator("input[name=cfg-inputs-0-field]").fill("orderId")
        page.locator("select[name=cfg-inputs-0-op]").select_option("equals")
        page.locator("input[name=cfg-inputs-0-value]").fill("EC-1042")
        expect(page.locator("#id_cfg-tool")).to_have_value("lookup_order")  # kept across the swap
        assert_fields_labelled(page)
        shot("check-form")

    def trace_check():
        page.locator("#id_cfg-called").fill("GET /orders/*")

    new_check(page, "Says the order shipped", "text_includes", text_check)
    new_check(page, "Looks up the order", "tool_usage", tool_check)
    new_check(page, "Calls the orders API", "trace", trace_check)
    expect(page.locator("a[data-filter=all] .count")).to_have_text("3")

    # -- a test set and a test with two scenarios
    page.locator("nav.tabs").get_by_role("link", name="Tests").click()
    page.get_by_role("link", name="New test set").click()
    page.locator("#id_name").fill("Orders")
    page.get_by_role("button", name="Create test set").click()
    page.get_by_role("link", name="New test").first.click()
    page.locator("#id_name").fill("Order status")
    page.locator("#id_s-0-name").fill("Known order")
    page.locator("#id_s-0-input").fill("Where is my order EC-1042?")
    page.get_by_role("button", name="+ Add scenario").click()
    expect(page.locator("#id_s-1-input")).to_be_focused()
    page.locator("#id_s-1-name").fill("No order id")
    page.locator("#id_s-1-mode-chat").check()
    page.locator("#id_s-1-m-0-content").fill("Hi")
    page.locator("button[value='add_message:1']").click()
    page.locator("#id_s-1-m-1-content").fill("Hello! How can I help?")
    page.locator("button[value='add_message:1']").click()
    page.locator("#id_s-1-m-2-content").fill("Where is my parcel?")
    for name in ("Says the order shipped", "Looks up the order"):
        page.locator("#id_add_check").select_option(label=f"{name} (v1)")
        page.get_by_role("button", name="Attach check").click()
        expect(page.locator(f"tr[data-check='{name}']")).to_be_visible()
    # the attach requests and the counter's own (250 ms after the last input) settle before typing
    page.wait_for_timeout(300)
    page.wait_for_function("() => !document.querySelector('.htmx-request')")
    page.locator("#id_samples_per_scenario").fill("6")
    expect(page.locator("#builder-counter")).to_contain_text("2 scenarios × 6 samples = 12 of 10")
    expect(page.locator("#builder-counter .errorlist")).to_contain_text(
        "over the limit of 10 samples per run"
    )
    page.locator("#id_samples_per_scenario").fill("2")
    expect(page.locator("#builder-counter")).to_contain_text("2 scenarios × 2 samples = 4 of 10")
    expect(page.locator("#builder-counter .errorlist")).to_have_count(0)
    assert_fields_labelled(page)
    shot("test-builder")
    page.locator("#save-test").click()
    expect(page.locator(".msg")).to_contain_text("saved as version 1")
    shot("test")

    # -- launch with an additional check and watch it finish without reloading
    page.get_by_role("link", name="Run this test").click()
    page.get_by_label("Calls the orders API").check()
    shot("run-launch")
    page.get_by_role("button", name="Launch run").click()
    page.wait_for_url(re.compile(r".*/runs/\d+/$"))
    run_url = page.url
    page.evaluate("window.__sameDocument = true")
    expect(page.locator("#run-percent")).to_have_text("100 %", timeout=60_000)
    expect(page.locator("#run-result")).to_have_text("fail")
    assert page.evaluate("window.__sameDocument") is True  # updated by polling, not a reload
    expect(page.locator("#run-progress")).not_to_have_attribute("hx-trigger", "every 1s")  # polling stopped
    expect(page.locator("details.sample")).to_have_count(4)

    # -- open a failing sample and read its explanation
    failing = page.locator("details.sample[data-outcome=fail]").first
    failing.locator(":scope > summary").click()
    explanation = failing.locator(".check-result[data-check='Says the order shipped'] .explanation")
    expect(explanation).to_contain_text('Expected the output to include "has shipped", but the output was')
    expect(failing.locator(".convo")).to_contain_text("Where is my parcel?")
    expect(failing.locator(".check-result[data-check='Calls the orders API']")).to_contain_text(
        "added at launch"
    )
    expect(page.locator("tr[data-check='Says the order shipped'] .check-version")).to_have_text("v1")
    shot("run")

    # -- filter the checks tab (HTMX swap, the URL follows)
    page.goto(f"{base}/agents/")
    page.get_by_role("link", name="Demo support").click()
    page.locator("nav.tabs").get_by_role("link", name="Checks").click()
    page.locator("a[data-filter=in_tests]").click()
    expect(page.locator("a[data-filter=in_tests]")).to_have_attribute("aria-current", "true")
    expect(page.locator("tr.check-row")).to_have_count(2)
    assert "used=in_tests" in page.url
    page.locator("a[data-filter=unused]").click()
    expect(page.locator("a[data-filter=unused]")).to_have_attribute("aria-current", "true")
    expect(page.locator("tr.check-row")).to_have_count(1)
    expect(page.locator("tr.check-row")).to_contain_text("Calls the orders API")
    page.locator("a[data-filter=all]").click()
    expect(page.locator("tr.check-row")).to_have_count(3)
    shot("checks")

    # -- edit a check: version 2 in its history, the old run still shows version 1
    page.get_by_role("link", name="Says the order shipped").click()
    page.get_by_role("link", name="Edit").click()
    page.locator("#id_cfg-text").fill("shipped")
    page.get_by_role("button", name="Save as a new version").click()
    expect(page.locator(".msg")).to_contain_text("as version 2")
    expect(page.locator("[data-version='2']")).to_contain_text("config.text")
    expect(page.locator("[data-version='2'] del")).to_have_text("has shipped")
    expect(page.locator("[data-version='2'] ins")).to_have_text("shipped")
    shot("check-history")
    page.goto(run_url)
    expect(page.locator("tr[data-check='Says the order shipped'] .check-version")).to_have_text("v1")

    # -- a second run uses version 2; compare the two
    page.get_by_role("link", name="Order status").click()
    page.get_by_role("link", name="Run this test").click()
    page.get_by_role("button", name="Launch run").click()
    page.wait_for_url(re.compile(r".*/runs/\d+/$"))
    expect(page.locator("#run-percent")).to_have_text("100 %", timeout=60_000)
    expect(page.locator("tr[data-check='Says the order shipped'] .check-version")).to_have_text("v2")
    page.get_by_role("button", name="Compare").click()
    expect(page.locator("h3", has_text="Says the order shipped")).to_contain_text("v1 → v2")
    shot("compare")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Runs").click()
    expect(page.locator("tbody tr")).to_have_count(2)
    assert_fields_labelled(page)
    shot("runs")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Tokens").click()
    assert_fields_labelled(page)
    shot("tokens")


def test_keyboard_reaches_the_content_and_the_filters(page: Page, live_server, log_in, admin_user, agent):
    log_in("ada", "pw-ada")
    page.goto(f"{live_server.url}/checks/agents/{agent.pk}/")
    page.keyboard.press("Tab")
    expect(page.locator(".skip")).to_be_focused()
    page.keyboard.press("Enter")
    assert page.evaluate("location.hash") == "#main"
    page.locator("a[data-filter=unused]").focus()
    page.keyboard.press("Enter")
    expect(page.locator("a[data-filter=unused]")).to_have_attribute("aria-current", "true")
