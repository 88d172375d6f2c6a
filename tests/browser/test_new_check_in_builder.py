"""'+ New check' inside the test builder, in a real browser: a library check created in place (HTMX),
attached, and nothing typed in the builder lost. The page never reloads (a marker on `window` survives)."""

from __future__ import annotations

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from checks.models import Check, Test
from checks.services import create_test_set

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_create_checks_in_place_while_building_a_test(page: Page, live_server, log_in, shot, member, agent):
    test_set = create_test_set(agent=agent, by=member, name="Orders")
    log_in("alice", "pw-alice")
    page.goto(live_server.url + reverse("checks:test-create", args=[test_set.pk]))
    page.evaluate("window.__stillHere = true")

    # -- what has been typed so far
    page.locator("#id_name").fill("Order status")
    page.locator("#id_s-0-input").fill("Where is my order EC-1042?")
    page.locator("#id_samples_per_scenario").fill("2")
    expect(page.locator("#new-check")).to_have_count(0)

    # -- + New check: a kind-driven form in place
    page.get_by_role("button", name="+ New check").click()
    expect(page.locator("#new-check")).to_be_visible()
    expect(page.locator("#id_nc-name")).to_be_focused()
    page.locator("#id_nc-name").fill("Looked up the order")
    with page.expect_response(lambda r: r.request.method == "POST"):
        page.locator("#id_nc-kind").select_option("tool_usage")
    expect(page.locator("#new-check-fields")).to_have_attribute("data-kind", "tool_usage")
    page.locator("#id_cfg-tool").fill("lookup_order")
    page.locator("#id_cfg-count").fill("1")
    page.locator("#new-check-fields").get_by_role("button", name="+ Add a row").click()
    row = page.get_by_role("group", name="Input conditions: row 1")
    expect(row).to_be_visible()
    row.get_by_label("Row 1 Field").fill("orderId")
    row.get_by_label("Row 1 Value").fill("EC-1042")
    expect(page.locator("#id_nc-name")).to_have_value("Looked up the order")  # kept across the round trips
    shot("test-builder-new-check")
    page.get_by_role("button", name="Create and attach").click()

    # -- attached, saved to the library, and the builder kept its state
    expect(page.locator("#new-check-notice")).to_contain_text("Looked up the order created in the library")
    expect(page.locator("tr[data-check='Looked up the order']")).to_be_visible()
    expect(page.locator("#new-check")).to_have_count(0)
    expect(page.locator("#id_name")).to_have_value("Order status")
    expect(page.locator("#id_s-0-input")).to_have_value("Where is my order EC-1042?")
    expect(page.locator("#id_samples_per_scenario")).to_have_value("2")
    check = Check.objects.get(name="Looked up the order")
    assert check.agent_id == agent.pk and check.kind == "tool_usage"
    inputs = check.current_version.config["inputs"]
    assert inputs == [{"field": "orderId", "op": "equals", "value": "EC-1042"}]

    # -- a second one: the same validation as the Checks tab, errors in place
    page.get_by_role("button", name="+ New check").click()
    page.locator("#id_nc-name").fill("Mentions the order")
    page.get_by_role("button", name="Create and attach").click()  # text_includes without its text
    fields = page.locator("#new-check-fields")
    expect(fields.locator("[data-field='text'] .errorlist")).to_be_visible()
    shot("test-builder-new-check-error")
    fields.locator("#id_cfg-text").fill("EC-1042")
    page.get_by_role("button", name="Create and attach").click()
    expect(page.locator("tr[data-check='Mentions the order']")).to_be_visible()
    assert page.evaluate("window.__stillHere") is True  # every step was an HTMX swap, no reload
    shot("test-builder-new-check-attached")

    page.locator("#save-test").click()
    expect(page.get_by_role("heading", name="Order status")).to_be_visible()
    test = Test.objects.get(name="Order status")
    attached = [tc.library_check.name for tc in test.current_version.attached_checks.order_by("position")]
    assert attached == ["Looked up the order", "Mentions the order"]
    assert test.current_version.samples_per_scenario == 2
