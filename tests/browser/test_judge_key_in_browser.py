"""No judge key configured: the check form, the launcher and the run page say so before anyone is surprised.

The run executes in django-q2's sync mode when it is launched (tests/settings.py), against a fake agent.
"""

from __future__ import annotations

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from checks.services import create_check, create_test, create_test_set

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_no_judge_key_is_said_on_the_form_the_launcher_and_the_run(
    page: Page, live_server, log_in, shot, admin_user, team, fake, settings
):
    from agents.services import create_agent

    settings.EVALCONSOLE_JUDGE_API_KEY = ""
    agent = create_agent(team=team, by=admin_user, name="Fake bot", endpoint_url=fake.url, retries=0)
    log_in("ada", "pw-ada")

    # -- the check form: picking the AI judge kind swaps its fields in, with the warning
    page.goto(live_server.url + reverse("checks:check-create", args=[agent.pk]))
    expect(page.locator("#judge-warning")).to_have_count(0)
    with page.expect_response(lambda r: "kind=ai_judge" in r.url):
        page.locator("#id_kind").select_option("ai_judge")
    expect(page.locator("#config-fields")).to_have_attribute("data-kind", "ai_judge")
    expect(page.locator("#judge-warning")).to_contain_text("No judge key is configured")
    shot("check-form-no-judge-key")
    page.locator("#id_name").fill("Polite")
    page.locator("#id_cfg-prompt").fill("The reply is polite.")
    page.get_by_role("button", name="Create check").click()
    expect(page.locator("h2", has_text="Polite")).to_be_visible()

    # -- the launcher names the judge check that will be skipped
    from checks.models import Check

    judge = Check.objects.get(name="Polite")
    text = create_check(
        agent=agent, by=admin_user, name="Mentions the order", kind="text_includes",
        config={"text": "EC-1042"},
    )
    test_set = create_test_set(agent=agent, by=admin_user, name="Orders")
    test = create_test(
        test_set=test_set, by=admin_user, name="Order status", checks=[judge.pk, text.pk],
        scenarios=["Where is my order EC-1042?"], samples_per_scenario=2,
    )
    page.goto(f"{live_server.url}{reverse('runs:run-launch')}?test={test.pk}")
    expect(page.locator("#judge-warning")).to_contain_text("No judge key is configured")
    expect(page.locator("#judge-warning")).to_contain_text("Polite")
    shot("run-launch-no-judge-key")
    page.locator("#launch-button").click()

    # -- the run page says why its samples are indeterminate, at the top
    expect(page.locator("#run-result")).to_have_text("indeterminate")
    expect(page.locator("#judge-note")).to_contain_text("skipped on 2 of 2 samples")
    shot("run-no-judge-key")
