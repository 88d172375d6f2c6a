"""The Tokens page: a new token's secret, shown once, copies to the clipboard with one button."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_copy_button_puts_the_new_token_on_the_clipboard(page: Page, live_server, log_in, member, shot):
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    log_in("alice", "pw-alice")
    page.goto(f"{live_server.url}/tokens/")
    page.get_by_label("Name").fill("CI")
    page.get_by_role("button", name="Create token").click()
    secret = page.locator("#new-token").inner_text()
    assert re.fullmatch(r"ect_\w+_\S+", secret)

    copy = page.get_by_role("button", name="Copy token")
    expect(copy).to_be_visible()
    copy.click()
    expect(page.locator("#new-token-status")).to_have_text("Copied to the clipboard.")
    expect(page.get_by_role("status")).to_contain_text("Copied")  # the card's live region announces it
    assert page.evaluate("navigator.clipboard.readText()") == secret
    shot("token_copied", full_page=False)
    assert errors == []


def test_copy_button_only_for_a_new_token(page: Page, live_server, log_in, member):
    log_in("alice", "pw-alice")
    page.goto(f"{live_server.url}/tokens/")
    expect(page.get_by_role("button", name="Copy token")).to_have_count(0)


def test_a_refused_clipboard_selects_the_token_instead(page: Page, live_server, log_in, member):
    page.add_init_script(
        "Object.defineProperty(navigator, 'clipboard', "
        "{value: {writeText: () => Promise.reject(new Error('denied'))}})"
    )
    log_in("alice", "pw-alice")
    page.goto(f"{live_server.url}/tokens/")
    page.get_by_label("Name").fill("CI")
    page.get_by_role("button", name="Create token").click()
    page.get_by_role("button", name="Copy token").click()
    expect(page.locator("#new-token-status")).to_contain_text("Press Ctrl+C")
    assert page.evaluate("window.getSelection().toString().trim()") == page.locator("#new-token").inner_text()
