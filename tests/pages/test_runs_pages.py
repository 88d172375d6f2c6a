"""Run launcher, the live run page, run list filters and the comparison of two runs."""

from __future__ import annotations

import pytest
from django.urls import reverse

from checks.services import create_check, create_test, create_test_set, edit_check
from runs import services
from runs.models import CheckResult, Run, RunCheck, Sample

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}
NAME = '<span class="trunc" title="{0}">{0}</span>'  # a name as pages show it (the |trunc filter)


def finish(run: Run, outcomes: list[str], *, check_outcome=None, details=None, latencies=None) -> Run:
    """Record finished samples directly (as a worker would), then let the service finalise the run."""
    run_checks = list(RunCheck.objects.filter(run=run).select_related("check_version"))
    samples = list(run.samples.order_by("scenario_index", "sample_index"))
    for index, (sample, outcome) in enumerate(zip(samples, outcomes, strict=True)):
        latency = (latencies or [100.0 * (index + 1)] * len(samples))[index]
        Sample.objects.filter(pk=sample.pk).update(
            status=Sample.Status.DONE,
            outcome=outcome,
            output=f"answer {index}",
            latency_ms=latency,
            tool_calls=[],
            attempts=[{"number": 1, "status_code": 200, "latency_ms": latency, "error": None}],
            error="agent unreachable" if outcome == "error" else "",
        )
        if outcome == "error":
            continue
        for rc in run_checks:
            CheckResult.objects.create(
                sample=sample,
                check_version=rc.check_version,
                required=rc.required,
                outcome=check_outcome or outcome,
                expected="the output to include EC-1042",
                actual=f"it was not found in sample {index}",
                explanation=f"Expected EC-1042 in sample {index}.",
                details=details or {},
            )
    services.finalise_run(run=run)
    run.refresh_from_db()
    return run


def test_launch_a_test_with_an_additional_check_redirects_to_the_run_page(
    login, member, order_test, live_agent, django_capture_on_commit_callbacks
):
    extra = create_check(agent=live_agent, by=member, name="Fast", kind="latency", config={"max_ms": 5000})
    client = login(member)
    page = client.get(reverse("runs:run-launch"), {"test": order_test.pk}).content.decode()
    assert "Fast" in page and "Mentions order" not in page  # attached checks are not offered again
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("runs:run-launch"),
            {"test": order_test.pk, "additional": [extra.pk], "advisory": [extra.pk]},
        )
    run = Run.objects.get()
    assert response.status_code == 302 and response["Location"] == run.get_absolute_url()
    added = run.run_checks.get(additional=True)
    assert added.check_version_id == extra.current_version_id and added.required is False
    run.refresh_from_db()
    assert run.status == "completed"  # django-q2 sync mode ran the samples on commit


def test_launch_a_whole_test_set_lists_the_batch(login, member, order_test):
    create_test(test_set=order_test.test_set, by=member, name="Second", scenarios=["hi"])
    client = login(member)
    response = client.post(reverse("runs:run-launch"), {"test_set": order_test.test_set_id})
    runs = list(Run.objects.all())
    assert len(runs) == 2 and len({r.batch for r in runs}) == 1
    assert response["Location"] == f"{reverse('runs:run-list')}?batch={runs[0].batch}"
    html = client.get(response["Location"]).content.decode()
    assert f"#{runs[0].pk}" in html and f"#{runs[1].pk}" in html


def test_launcher_shows_limit_errors_from_the_service(login, member, order_test, live_agent, settings):
    settings.EVALCONSOLE_MAX_ADDITIONAL_CHECKS = 1
    extras = [
        create_check(agent=live_agent, by=member, name=f"Extra {i}", kind="latency", config={"max_ms": 9})
        for i in range(2)
    ]
    response = login(member).post(
        reverse("runs:run-launch"), {"test": order_test.pk, "additional": [c.pk for c in extras]}
    )
    html = response.content.decode()
    assert response.status_code == 200 and "over the limit of 1 per run" in html
    assert html.count("checked") == 2  # the picks are kept
    assert not Run.objects.exists()


def test_run_page_shows_samples_tool_calls_checks_and_latency(login, member, order_test, run_now):
    run = run_now(order_test)
    html = login(member).get(run.get_absolute_url()).content.decode()
    assert run.result == "fail"  # "Where is my parcel?" has no order id: both checks fail there
    assert '<span class="badge big fail" id="run-result"' in html
    assert "Order EC-1042 was found and is in transit." in html  # the agent's answer in the conversation
    assert "<code>lookup_order</code>" in html and "&quot;orderId&quot;: &quot;EC-1042&quot;" in html
    assert "Expected the output to include" in html  # explanations
    assert 'class="explanation"' in html and "median latency" in html and "slowest" in html
    assert "Known order" in html and "No order id" in html
    assert 'hx-trigger="every 1s"' not in html  # finished: no polling
    assert 'class="check-version">v1<' in html


def test_progress_fragment_polls_while_active_and_stops_with_286(login, member, order_test):
    run = services.launch_run(test=order_test, by=member)  # on_commit never fires here: stays queued
    client = login(member)
    page = client.get(run.get_absolute_url()).content.decode()
    assert 'hx-trigger="every 1s"' in page and "run-updated from:body" in page
    fragment = client.get(run.get_absolute_url(), {"seen": "0"}, HTTP_HX_TARGET="run-progress", **HTMX)
    assert fragment.status_code == 200 and "HX-Trigger" not in fragment
    assert fragment.content.decode().lstrip().startswith('<section id="run-progress"')
    finish(run, ["pass", "pass", "fail", "pass"])
    done = client.get(run.get_absolute_url(), {"seen": "0"}, HTTP_HX_TARGET="run-progress", **HTMX)
    assert done.status_code == 286  # htmx stops polling
    assert done["HX-Trigger"] == "run-updated"
    body = done.content.decode()
    assert "every 1s" not in body and "100 %" in body and 'id="run-result"' in body
    samples = client.get(run.get_absolute_url(), HTTP_HX_TARGET="run-samples", **HTMX).content.decode()
    assert samples.lstrip().startswith('<div id="run-samples"') and "run-updated" not in samples


def test_errored_and_indeterminate_samples_are_marked_not_counted(
    login, member, live_agent, order_checks, run_now
):
    test_set = create_test_set(agent=live_agent, by=member, name="Faults")
    test = create_test(
        test_set=test_set,
        by=member,
        name="Faults",
        scenarios=[
            {"name": "Down", "input": "EC-1042", "metadata": {"fake": {"status": 503}}},
            {"name": "No evidence", "input": "EC-1042", "metadata": {"fake": {"omit_tool_calls": True}}},
        ],
        checks=[{"check": c.pk, "required": True} for c in order_checks],
    )
    run = run_now(test)
    outcomes = dict(run.samples.values_list("scenario_index", "outcome"))
    assert outcomes == {0: "error", 1: "indeterminate"}
    html = login(member).get(run.get_absolute_url()).content.decode()
    assert html.count('<span class="tag notcounted"') == 2
    assert "Agent call failed:" in html and "503" in html
    assert "Not reported by the agent" in html


def test_flaky_scenarios_and_per_check_rates(login, member, order_test):
    run = finish(
        services.launch_run(test=order_test, by=member),
        ["pass", "fail", "pass", "pass"],
        latencies=[100.0, 400.0, 200.0, 300.0],
    )
    html = login(member).get(run.get_absolute_url()).content.decode()
    assert "Flaky scenarios" in html
    assert f"<strong>{NAME.format('Known order')}</strong>: 1 passed, 1 failed" in html
    assert '<span class="v" id="latency-median">250 ms</span>' in html
    assert '<span class="v" id="latency-slowest">400 ms</span>' in html
    rates = html.split('id="check-rates"')[1].split("</table>")[0]
    assert "75 %" in rates


def test_judge_details_render_in_a_collapsible_block(login, member, order_test):
    judge = {
        "model": "gpt-test",
        "prompt": "Rubric <b>bold</b>",
        "reply": '{"verdict": "fail"}',
        "tokens_in": 12,
        "tokens_out": 3,
        "latency_ms": 40,
        "truncated": False,
    }
    run = finish(services.launch_run(test=order_test, by=member), ["fail"] * 4, details={"judge": judge})
    html = login(member).get(run.get_absolute_url()).content.decode()
    assert '<details class="judge"><summary class="small"><strong>Judge</strong>' in html
    assert "gpt-test" in html and "Rubric &lt;b&gt;bold&lt;/b&gt;" in html


def test_cancel_is_for_members_and_keeps_the_page(login, member, viewer, order_test):
    run = services.launch_run(test=order_test, by=member)
    assert login(viewer).post(reverse("runs:run-cancel", args=[run.pk])).status_code == 403
    assert "Cancel run" not in login(viewer).get(run.get_absolute_url()).content.decode()
    response = login(member).post(reverse("runs:run-cancel", args=[run.pk]), follow=True)
    assert "cancelled" in response.content.decode()
    run.refresh_from_db()
    assert run.status == "cancelled"


def test_viewer_cannot_launch(login, viewer, order_test):
    client = login(viewer)
    assert client.get(reverse("runs:run-launch"), {"test": order_test.pk}).status_code == 403
    assert client.post(reverse("runs:run-launch"), {"test": order_test.pk}).status_code == 403
    assert client.post(reverse("runs:run-launch"), {"test_set": order_test.test_set_id}).status_code == 403
    assert "Run this test" not in client.get(order_test.get_absolute_url()).content.decode()
    assert not Run.objects.exists()


def test_another_teams_runs_are_404(login, outsider, member, order_test):
    run = services.launch_run(test=order_test, by=member)
    client = login(outsider)
    assert client.get(run.get_absolute_url()).status_code == 404
    assert client.get(run.get_absolute_url(), HTTP_HX_TARGET="run-progress", **HTMX).status_code == 404
    assert client.post(reverse("runs:run-cancel", args=[run.pk])).status_code == 404
    assert client.get(reverse("runs:run-launch"), {"test": order_test.pk}).status_code == 404
    assert client.post(reverse("runs:run-launch"), {"test": order_test.pk}).status_code == 404
    assert client.get(reverse("runs:run-compare"), {"a": run.pk}).status_code == 404
    assert f"#{run.pk}<" not in client.get(reverse("runs:run-list")).content.decode()


def test_run_list_filters(login, member, order_test, live_agent):
    other = create_test(test_set=order_test.test_set, by=member, name="Other", scenarios=["hi"])
    passed = finish(services.launch_run(test=order_test, by=member), ["pass"] * 4)
    failed = finish(services.launch_run(test=order_test, by=member), ["fail"] * 4)
    queued = services.launch_run(test=other, by=member)
    client = login(member)
    url = reverse("runs:run-list")

    def shown(**params):
        html = client.get(url, params).content.decode()
        return {r.pk for r in (passed, failed, queued) if f"<strong>#{r.pk}</strong>" in html}

    assert shown() == {passed.pk, failed.pk, queued.pk}
    assert shown(result="fail") == {failed.pk}
    assert shown(status="queued") == {queued.pk}
    assert shown(test=other.pk) == {queued.pk}
    assert shown(agent=live_agent.pk, result="pass") == {passed.pk}
    today = passed.created_at.date().isoformat()
    assert shown(date_from=today, date_to=today) == {passed.pk, failed.pk, queued.pk}
    assert shown(date_to="2000-01-01") == set()


def test_run_list_paginates(login, member, order_test):
    for _ in range(27):
        services.launch_run(test=order_test, by=member)
    client = login(member)
    first = client.get(reverse("runs:run-list")).content.decode()
    assert first.count("<strong>#") == 25 and "Page 1 of 2" in first
    assert client.get(reverse("runs:run-list"), {"page": 2}).content.decode().count("<strong>#") == 2


def test_compare_two_runs_of_the_same_test(login, member, order_test, order_checks):
    before = finish(services.launch_run(test=order_test, by=member), ["pass"] * 4)
    edit_check(check=order_checks[0], by=member, config={"text": "EC-2000"})
    after = finish(services.launch_run(test=order_test, by=member), ["pass", "pass", "fail", "fail"])
    html = login(member).get(reverse("runs:run-compare"), {"a": after.pk, "b": before.pk}).content.decode()
    assert f'Before: <a href="{before.get_absolute_url()}">run #{before.pk}' in html  # older on the left
    scenarios = html.split('id="compare-scenarios"')[1].split("</table>")[0]
    assert "No order id" in scenarios and "-100 pts" in scenarios
    changed = html.split('id="compare-changed"')[1].split("</table>")[0]
    assert "Mentions order" in changed and "2 pass" in changed and "2 fail" in changed
    versions = html.split("Check versions that differ")[1]
    assert "v1</a>" not in versions and ": v1 → v2" in versions
    assert "<del>EC-1042</del>" in versions and "<ins>EC-2000</ins>" in versions


def test_compare_refuses_runs_of_different_tests(login, member, order_test):
    other = create_test(test_set=order_test.test_set, by=member, name="Other", scenarios=["hi"])
    a = services.launch_run(test=order_test, by=member)
    b = services.launch_run(test=other, by=member)
    response = login(member).get(reverse("runs:run-compare"), {"a": a.pk, "b": b.pk})
    assert response.status_code == 400 and "Only runs of the same test" in response.content.decode()


def test_unfinished_scenarios_say_waiting_then_cancelled(login, member, order_test):
    run = services.launch_run(test=order_test, by=member)
    client = login(member)
    html = client.get(run.get_absolute_url()).content.decode()
    assert '<span class="muted small">waiting</span>' in html
    services.cancel_run(run=run, by=member)
    html = client.get(run.get_absolute_url()).content.decode()
    assert '<span class="muted small">cancelled</span>' in html
    assert '<span class="muted small">running</span>' not in html


def test_run_list_refreshes_itself_while_runs_are_active_and_stops_with_286(
    login, member, order_test, django_assert_max_num_queries
):
    create_test(test_set=order_test.test_set, by=member, name="Second", scenarios=["hi"])
    runs = services.launch_test_set(test_set=order_test.test_set, by=member)  # stay queued (no worker)
    client = login(member)
    url = f"{reverse('runs:run-list')}?batch={runs[0].batch}"
    page = client.get(url).content.decode()
    assert 'id="run-rows"' in page and 'hx-trigger="every 2s"' in page
    assert page.count('<span class="badge queued">queued</span>') == 2
    poll = {"HTTP_HX_TARGET": "run-rows", **HTMX}
    # session, user, current team, COUNT runs, the page of runs: no selects, no switcher teams
    with django_assert_max_num_queries(5):
        fragment = client.get(url, **poll)
    assert fragment.status_code == 200
    body = fragment.content.decode()
    assert body.lstrip().startswith('<div id="run-rows"') and 'hx-trigger="every 2s"' in body
    assert "<header" not in body
    for run in runs:
        finish(run, ["pass"] * run.total_samples)
    done = client.get(url, **poll)
    assert done.status_code == 286  # htmx stops polling
    body = done.content.decode()
    assert "hx-trigger" not in body and body.count('<span class="badge completed">completed</span>') == 2
    assert "hx-trigger" not in client.get(url).content.decode()  # nothing runs: the page does not poll


def test_run_list_says_which_filters_are_active_with_a_way_to_clear_each(
    login, member, order_test, live_agent
):
    runs = services.launch_test_set(test_set=order_test.test_set, by=member)
    batch = runs[0].batch
    client = login(member)
    html = client.get(reverse("runs:run-list"), {"batch": batch, "status": "queued"}).content.decode()
    filters = html.split('id="active-filters"')[1].split("</p>")[0]
    assert f"batch <strong>{batch}</strong>" in filters and "status <strong>Queued</strong>" in filters
    assert 'href="?status=queued"' in filters  # clear the batch, keep the status
    assert f'href="?batch={batch}"' in filters  # clear the status, keep the batch
    assert f'href="{reverse("runs:run-list")}"' in filters  # clear all
    params = {"agent": live_agent.pk, "test": order_test.pk}
    html = client.get(reverse("runs:run-list"), params).content.decode()
    filters = html.split('id="active-filters"')[1].split("</p>")[0]
    assert f"agent <strong>{live_agent.name}</strong>" in filters
    assert f"test <strong>{order_test.name}</strong>" in filters
    assert 'id="active-filters"' not in client.get(reverse("runs:run-list")).content.decode()
