"""Agent output, tool inputs/outputs, traces and task transcripts are untrusted: rendered inert (escaped)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from checks.services import create_check, create_test, create_test_set
from tests import factories

pytestmark = pytest.mark.django_db

SCRIPT = '<script>alert("xss-script")</script>'
IMG = "<img src=x onerror=alert('xss-img')>"
SVG = '"><svg onload=alert(1)>'

FAKE = {
    "output": f"Sure. {SCRIPT} {IMG}",
    "tool_calls": [
        {
            "name": f"lookup{IMG}",
            "status": "succeeded",
            "node": SVG,
            "input": {"q": SCRIPT, IMG: IMG},
            "output": f"{IMG}{SCRIPT}",
        },
        {"name": "refund", "status": "failed", "input": SCRIPT, "error": IMG},
    ],
    "trace": [{"method": "GET", "path": f"/orders/{IMG}", "status": 200, "tool": SCRIPT}],
    "messages": [
        {"role": "user", "content": SCRIPT},
        {"role": "assistant", "content": IMG},
        {"role": SVG, "content": "odd role"},
    ],
}


def assert_inert(html: str) -> None:
    for raw in (SCRIPT, IMG, "<svg onload", "<img src=x", "<script>alert"):
        assert raw not in html, raw
    assert "&lt;script&gt;alert(" in html
    assert "&lt;img src=x onerror=alert(" in html


@pytest.fixture
def hostile_run(live_agent, member, run_now):
    checks = [
        create_check(
            agent=live_agent, by=member, name=f"Says {SCRIPT}", kind="text_includes", config={"text": IMG}
        ),
        create_check(
            agent=live_agent,
            by=member,
            name="Looks up",
            kind="tool_usage",
            config={
                "tool": f"lookup{IMG}",
                "mode": "at_least",
                "count": 1,
                "inputs": [{"field": "q", "op": "equals", "value": SCRIPT}],
            },
        ),
    ]
    test_set = create_test_set(agent=live_agent, by=member, name=f"Set {SCRIPT}")
    test = create_test(
        test_set=test_set,
        by=member,
        name=f"Test {IMG}",
        scenarios=[{"name": f"Scenario {IMG}", "input": f"Hi {SCRIPT}", "metadata": {"fake": FAKE}}],
        checks=[c.pk for c in checks],
    )
    return run_now(test)


def test_run_page_renders_agent_output_tool_calls_and_traces_inert(login, member, hostile_run):
    assert hostile_run.status == "completed"
    sample = hostile_run.samples.get()
    assert sample.output.startswith("Sure. <script>")  # stored as sent; only the page escapes it
    html = login(member).get(hostile_run.get_absolute_url()).content.decode()
    assert_inert(html)
    assert "&lt;svg onload=alert(1)&gt;" in html
    # The explanations quote the output too, and they are escaped like everything else.
    assert html.count('class="explanation"') == 2


def test_other_pages_showing_these_names_are_inert(login, member, hostile_run, live_agent):
    client = login(member)
    for url in (
        reverse("runs:run-list"),
        hostile_run.test.get_absolute_url(),
        reverse("checks:check-list", args=[live_agent.pk]),
        reverse("checks:testset-list"),
        reverse("checks:test-edit", args=[hostile_run.test_id]),
        reverse("runs:run-launch") + f"?test={hostile_run.test_id}",
    ):
        html = client.get(url).content.decode()
        for raw in (SCRIPT, IMG):
            assert raw not in html, url


def test_task_transcript_is_inert(login, member, live_agent):
    task = factories.task(
        live_agent,
        member,
        messages=[
            {"role": "user", "content": SCRIPT},
            {"role": "assistant", "content": IMG},
            {"role": "tool", "content": SVG},
        ],
        output=FAKE["output"],
        tool_calls=FAKE["tool_calls"],
        trace=FAKE["trace"],
    )
    client = login(member)
    for url in (reverse("monitors:task-list"), reverse("monitors:task-detail", args=[task.pk])):
        html = client.get(url).content.decode()
        for raw in (SCRIPT, IMG, "<svg onload"):
            assert raw not in html, url
    assert (
        "&lt;script&gt;alert(" in client.get(reverse("monitors:task-detail", args=[task.pk])).content.decode()
    )
