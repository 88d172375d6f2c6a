"""Archiving a check that a test uses, in a real browser: asked first, shown as archived, named on edit."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from checks.models import Check, Test
from checks.services import create_check, create_test, create_test_set

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_archive_a_used_check_then_edit_the_test(page: Page, live_server, log_in, shot, admin_user, agent):
    check = create_check(agent=agent, by=admin_user, name="Mentions the order", kind="text_includes",
                         config={"text": "EC-1042"})
    test_set = create_test_set(agent=agent, by=admin_user, name="Orders")
    test = create_test(test_set=test_set, by=admin_user, name="Order status", scenarios=["Where is EC-1042?"],
                       checks=[check.pk])
    log_in("ada", "pw-ada")

    page.goto(live_server.url + check.get_absolute_url())
    page.get_by_role("button", name="Archive").click()
    confirm = page.locator("#archive-confirm")
    expect(confirm).to_contain_text("1 test uses this check")
    expect(confirm.get_by_role("link", name="Order status")).to_be_visible()
    shot("check-archive-confirm")
    assert Check.objects.get(pk=check.pk).archived_at is None
    confirm.get_by_role("button", name="Archive anyway").click()
    expect(page.locator("#archived-note")).to_contain_text("keep running its last version, v1")
    shot("check-archived")

    page.goto(live_server.url + test.get_absolute_url())
    row = page.locator("tr[data-check='Mentions the order']")
    expect(row.locator(".tag.warn")).to_have_text("archived")
    shot("test-with-archived-check")

    page.get_by_role("link", name="Edit test").click()
    expect(page.locator("#archived-checks")).to_contain_text("Mentions the order")
    page.locator("#save-test").click()
    top = page.locator("#archived-checks.errorbox")
    expect(top).to_contain_text("is archived")
    expect(page.locator("tr[data-check='Mentions the order'] .errorlist")).to_contain_text("is archived")
    shot("test-edit-archived-check")
    assert Test.objects.get(pk=test.pk).version == 1
    page.get_by_role("button", name="Remove check Mentions the order").click()
    expect(page.locator("#archived-checks")).to_have_count(0)
    page.locator("#save-test").click()
    expect(page.locator("h2", has_text="Order status")).to_contain_text("v2")
