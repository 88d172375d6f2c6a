"""The run page read in a real browser: what the status and result badges mean, one wording per check.

The samples are recorded directly (as a worker would) so the page is seen finished, without a worker.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from checks.services import create_check, create_test, create_test_set
from runs import queue, services
from runs.models import CheckResult, Sample

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def no_worker(monkeypatch):
    """Launching enqueues nothing (django-q2's sync mode would call the agent at once)."""
    monkeypatch.setattr(services, "enqueue_drain", lambda: None)


def _finished_run(agent, by, *, error: bool):
    check = create_check(agent=agent, by=by, name="Mentions the order", kind="text_includes",
                         config={"text": "EC-1042"})
    test_set = create_test_set(agent=agent, by=by, name="Orders")
    test = create_test(
        test_set=test_set, by=by, name="Order status", checks=[check.pk], samples_per_scenario=2,
        scenarios=[{"name": "Known order", "input": "Where is EC-1042?"}],
    )
    run = services.launch_run(test=test, by=by)
    version = check.current_version
    for sample in run.samples.all():
        if error:
            Sample.objects.filter(pk=sample.pk).update(
                status="done", outcome="error", error="connection refused by 127.0.0.1:9 (after 1 attempt)"
            )
            continue
        Sample.objects.filter(pk=sample.pk).update(status="done", outcome="fail", output="Hello")
        CheckResult.objects.create(
            sample=sample, check_version=version, outcome="fail", expected='the output to include "EC-1042"',
            actual='the output was "Hello"',
            explanation='Expected the output to include "EC-1042", but the output was "Hello".',
        )
    queue.finalise_run(run=run)
    return run


def test_a_failed_agent_run_says_which_badge_is_status_and_which_is_result(
    page: Page, live_server, log_in, shot, admin_user, agent
):
    run = _finished_run(agent, admin_user, error=True)
    log_in("ada", "pw-ada")
    page.goto(f"{live_server.url}{run.get_absolute_url()}")
    progress = page.locator("#run-progress")
    expect(progress.get_by_text("Status", exact=False).first).to_be_visible()
    expect(page.locator("#run-status")).to_have_text("Completed")
    expect(page.locator("#run-result")).to_have_text("error")
    expect(page.locator("#run-verdict")).to_contain_text("every sample finished")
    expect(page.locator("#run-verdict")).to_contain_text("every sample errored, so no check could run")
    expect(page.locator("#run-verdict")).to_contain_text("connection refused")
    shot("run-agent-failed")


def test_a_check_card_shows_the_sentence_once(page: Page, live_server, log_in, shot, admin_user, agent):
    run = _finished_run(agent, admin_user, error=False)
    log_in("ada", "pw-ada")
    page.goto(f"{live_server.url}{run.get_absolute_url()}")
    sample = page.locator("details.sample").first
    sample.locator("summary").click()
    card = sample.locator(".check-result")
    expect(card.locator(".explanation")).to_have_text(
        'Expected the output to include "EC-1042", but the output was "Hello".'
    )
    expect(card.locator(".expected")).to_have_count(0)
    expect(card.locator(".actual")).to_have_count(0)
    assert card.inner_text().count("EC-1042") == 1
    shot("run-check-card")
