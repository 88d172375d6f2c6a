"""Lists in a real browser: the runs list keeps itself current and says how it is filtered."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from checks.services import create_test
from runs import queue
from runs.models import Run, Sample

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def finish_runs(runs) -> None:
    """Record every sample as passed and finalise, as a worker would (no worker runs in these tests)."""
    for run in runs:
        Sample.objects.filter(run=run).update(status=Sample.Status.DONE, outcome="pass", output="ok")
        queue.finalise_run(run=run)


def test_runs_list_after_run_all_tests_updates_itself_and_shows_the_batch_filter(
    page: Page, live_server, log_in, shot, admin_user, test_set, monkeypatch
):
    from django_q.conf import Conf

    monkeypatch.setattr(Conf, "SYNC", False)  # launched samples wait in the queue: no worker here
    for name in ("Greeting", "Refund"):
        create_test(test_set=test_set, by=admin_user, name=name, scenarios=["hi"])
    log_in("ada", "pw-ada")
    page.goto(f"{live_server.url}{test_set.get_absolute_url()}")
    page.get_by_role("link", name="Run all tests").click()
    page.get_by_role("button", name="Launch 2 runs").click()
    page.wait_for_url(re.compile(r".*/runs/\?batch=\w+$"))
    runs = list(Run.objects.order_by("pk"))
    expect(page.locator("#active-filters")).to_contain_text(f"Filtered by batch {runs[0].batch}")
    expect(page.locator("#active-filters").get_by_role("link", name="Clear the batch filter")).to_be_visible()
    expect(page.locator("#run-rows .badge.queued")).to_have_count(2)
    shot("runs-batch-queued")
    page.evaluate("window.__sameDocument = true")

    finish_runs(runs)
    expect(page.locator("#run-rows .badge.completed")).to_have_count(2, timeout=10_000)
    expect(page.locator("#run-rows .badge.pass")).to_have_count(2)
    assert page.evaluate("window.__sameDocument") is True  # refreshed in place, not reloaded
    expect(page.locator("#run-rows")).not_to_have_attribute("hx-trigger", re.compile("every"))  # stopped
    polls = []
    page.on("request", lambda request: polls.append(request.url) if "/runs/" in request.url else None)
    page.wait_for_timeout(4_500)
    assert polls == []  # nothing runs: no more polling
    shot("runs-batch-completed")
