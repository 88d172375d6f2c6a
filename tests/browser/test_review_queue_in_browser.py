"""Human review in a real browser: a queue of 5 items labelled with the keyboard only, then the judge
check's page shows the calibration it changed."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from reviews import services
from reviews.models import Label, ReviewItem
from tests import factories
from tests.reviews.conftest import judged_run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_label_a_queue_of_five_with_the_keyboard_and_see_the_calibration(
    page: Page, live_server, log_in, shot, member, agent
):
    check = factories.check(
        agent, member, kind="ai_judge", name="Polite", config={"prompt": "The agent is polite."}
    )
    test = factories.test(agent, member, checks=[check], name="Politeness")
    run = judged_run(test, check, ["pass", "fail", "pass", "fail", "pass"])
    queue = services.create_queue(team=agent.team, by=member, name="Politeness review")
    services.send_samples(queue=queue, run=run, by=member)
    items = list(ReviewItem.objects.filter(queue=queue).order_by("position"))
    log_in("alice", "pw-alice")

    page.goto(live_server.url + check.get_absolute_url())
    calibration = page.locator("#calibration")
    expect(calibration.locator("#cal-labels")).to_have_text("0")  # loaded in place, no label yet
    expect(calibration.locator("#cal-kappa")).to_have_text("—")

    page.goto(live_server.url + items[0].get_absolute_url())
    expect(page.locator("#review-keys")).to_contain_text("p pass")
    expect(page.locator(".check-label.focused")).to_have_attribute("data-check", "Polite")
    page.keyboard.press("n")  # a note on the focused check, then back to the keys
    expect(page.locator(".check-label.focused textarea")).to_be_focused()
    page.keyboard.type("Dismissive tone")
    page.keyboard.press("Escape")
    shot("review-item")
    people = ["f", "f", "p", "p", "p"]  # the judge said pass, fail, pass, fail, pass
    for index, key in enumerate(people):
        expect(page).to_have_url(re.compile(f"/items/{items[index].pk}/$"))
        expect(page.locator("h1")).to_contain_text(f"Item {index + 1}")
        page.keyboard.press(key)
        if index < len(people) - 1:
            expect(page).to_have_url(re.compile(f"/items/{items[index + 1].pk}/$"))  # moved on by itself
    expect(page.locator(".check-label")).to_have_attribute(
        "data-mine", "pass"
    )  # the last one, labelled in place
    page.keyboard.press("k")  # back to item 4: its label is shown
    expect(page).to_have_url(re.compile(f"/items/{items[3].pk}/$"))
    expect(page.locator(".check-label .your-label .badge")).to_have_text("pass")
    page.keyboard.press("j")
    expect(page).to_have_url(re.compile(f"/items/{items[4].pk}/$"))
    shot("review-item-labelled")
    verdicts = [Label.objects.get(item=item).verdict for item in items]
    assert verdicts == ["fail", "fail", "pass", "pass", "pass"]
    assert Label.objects.get(item=items[0]).note == "Dismissive tone"

    page.goto(live_server.url + check.get_absolute_url())
    expect(calibration.locator("#cal-labels")).to_have_text("5")
    expect(calibration.locator("#cal-agreement")).to_have_text("60.0 %")
    expect(calibration.locator("#cal-kappa")).to_have_text("0.17")
    expect(calibration.locator("#cm-pass-fail")).to_have_text("1")
    expect(calibration.locator("#cm-fail-pass")).to_have_text("1")
    expect(calibration.locator("#disagreements")).to_contain_text("Dismissive tone")
    calibration.scroll_into_view_if_needed()
    shot("check-calibration")
