"""Lists in a real browser: the runs list keeps itself current and says how it is filtered."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from checks.services import create_test
from runs import queue, services
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


AGENT_NAME = "Enterprise-support-agent-" + "x" * 75  # 100 characters, the longest an agent name may be
CHECK_NAME = "Mentions-the-order-number-" + "c" * 174  # 200 characters, none of them a space
TEST_NAME = "Order status with a very long name " + "t" * 165
SET_NAME = "Orders " + "s" * 193
MONITOR_NAME = "Production traffic " + "m" * 181

# Anything wider than the window (a horizontal scrollbar on the page itself) fails the page.
WIDTH = "() => [document.documentElement.scrollWidth, window.innerWidth]"
TITLED = "name => [...document.querySelectorAll('[title]')].some(el => el.getAttribute('title') === name)"
# A visible element showing the full name untruncated (clipped text is wider than its box).
OVERFLOWING = """name => [...document.querySelectorAll('main *')].filter(el => el.children.length === 0
  && el.textContent.includes(name) && el.getBoundingClientRect().right > window.innerWidth)
  .map(el => el.parentElement.outerHTML.slice(0, 120))"""


def test_long_names_are_truncated_with_the_full_name_on_hover_on_every_page(
    page: Page, live_server, log_in, shot, team, admin_user
):
    from agents.services import create_agent
    from checks.services import create_check, create_test_set
    from monitors.services import create_monitor, ingest_tasks

    agent = create_agent(
        team=team, by=admin_user, name=AGENT_NAME, endpoint_url="http://127.0.0.1:9/a", retries=0
    )
    check = create_check(
        agent=agent, by=admin_user, name=CHECK_NAME, kind="text_includes", config={"text": "x"}
    )
    spare = "Spare-" + CHECK_NAME[6:]  # not attached: offered in the builder's and launcher's pickers
    create_check(agent=agent, by=admin_user, name=spare, kind="latency", config={"max_ms": 500})
    test_set = create_test_set(agent=agent, by=admin_user, name=SET_NAME)
    test = create_test(test_set=test_set, by=admin_user, name=TEST_NAME, scenarios=["hi"], checks=[check.pk])
    # django-q2's sync mode runs the samples at launch: the agent is unreachable, so they error.
    runs = [services.launch_run(test=test, by=admin_user) for _ in range(2)]
    monitor = create_monitor(
        agent=agent, by=admin_user, name=MONITOR_NAME, checks=[check.pk], sample_rate=100
    )
    task = {"external_id": "t-1", "output": "hello", "completed_at": "2025-01-01T00:00:00Z"}
    ingest_tasks(agent=agent, by=admin_user, items=task)
    task = agent.tasks.get()

    log_in("ada", "pw-ada")
    pages = {
        "agents": ("/agents/", [AGENT_NAME]),
        "agent": (agent.get_absolute_url(), [AGENT_NAME, SET_NAME, TEST_NAME]),
        "checks-tab": (f"/checks/agents/{agent.pk}/", [AGENT_NAME, CHECK_NAME]),
        "check-library": ("/checks/", [AGENT_NAME, CHECK_NAME]),
        "check": (check.get_absolute_url(), [AGENT_NAME, CHECK_NAME, TEST_NAME]),
        "check-edit": (f"/checks/{check.pk}/edit/", [AGENT_NAME]),
        "test-sets": ("/checks/tests/", [AGENT_NAME, SET_NAME, TEST_NAME]),
        "test-set": (test_set.get_absolute_url(), [AGENT_NAME, SET_NAME, TEST_NAME]),
        "test": (test.get_absolute_url(), [AGENT_NAME, SET_NAME, TEST_NAME, CHECK_NAME]),
        "builder": (f"/checks/tests/{test.pk}/edit/", [AGENT_NAME, SET_NAME, TEST_NAME]),
        "launch": (f"/runs/launch/?test={test.pk}", [AGENT_NAME, SET_NAME, TEST_NAME, spare]),
        "runs": ("/runs/", [AGENT_NAME, TEST_NAME]),
        "run": (runs[0].get_absolute_url(), [AGENT_NAME, TEST_NAME, CHECK_NAME]),
        "compare": (f"/runs/compare/?a={runs[0].pk}&b={runs[1].pk}", [TEST_NAME]),
        "monitors": ("/monitors/", [AGENT_NAME, MONITOR_NAME]),
        "monitor": (monitor.get_absolute_url(), [AGENT_NAME, MONITOR_NAME, CHECK_NAME]),
        "tasks": ("/tasks/", [AGENT_NAME]),
        "task": (f"/tasks/{task.pk}/", [AGENT_NAME]),
    }
    problems = []
    for label, (url, names) in pages.items():
        page.goto(f"{live_server.url}{url}")
        scroll, inner = page.evaluate(WIDTH)
        if scroll > inner:
            problems.append(f"{label}: the page is {scroll}px wide in a {inner}px window")
        for name in names:
            if not page.evaluate(TITLED, name):
                problems.append(f"{label}: no element has the full name {name[:20]}… in its title")
            for where in page.evaluate(OVERFLOWING, name):
                problems.append(f"{label}: {name[:20]}… runs past the window in {where}")
        shot(f"long-names-{label}")
    assert problems == [], "\n".join(problems)
