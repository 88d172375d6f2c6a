"""Run launcher, the live run page, run list filters and the comparison of two runs."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from checks.services import create_check, create_test, create_test_set, edit_check
from runs import queue, services
from runs.models import CheckResult, Run, RunCheck, Sample
from tests import factories
from tests.support.page_fixtures import live_agent, login, order_test, run_now  # noqa: F401

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
        factories.check_results(
            sample,
            run_checks,
            outcome=check_outcome or outcome,
            expected="the output to include EC-1042",
            actual=f"it was not found in sample {index}",
            explanation=f"Expected EC-1042 in sample {index}.",
            details=details or {},
        )
    queue.finalise_run(run=run)
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


def test_a_check_failing_one_scenario_and_passing_another_is_not_flaky(login, member, order_test):
    # Known order: both samples fail; No order id: both pass. Each scenario is consistent.
    run = finish(services.launch_run(test=order_test, by=member), ["fail", "fail", "pass", "pass"])
    html = login(member).get(run.get_absolute_url()).content.decode()
    assert '<span class="v">0</span><span class="k">flaky scenarios</span>' in html
    rates = html.split('id="check-rates"')[1].split("</table>")[0]
    assert "50 %" in rates and "flaky" not in rates
    assert "flaky" not in html.split('id="scenario-table"')[1].split("</table>")[0]


def test_a_check_with_both_outcomes_on_one_scenario_is_flaky_there(login, member, order_test):
    run = finish(services.launch_run(test=order_test, by=member), ["pass", "fail", "pass", "pass"])
    html = login(member).get(run.get_absolute_url()).content.decode()
    rates = html.split('id="check-rates"')[1].split("</table>")[0]
    tag = '<span class="tag warn" title="Both passed and failed on Known order">flaky</span>'
    assert rates.count(tag) == 2


def _cards(html: str) -> list[str]:
    return [part.split("</table>")[0] for part in html.split('class="card check-result"')[1:]]


def test_a_check_card_says_expected_and_actual_once(login, member, order_test, run_now):
    run = run_now(order_test)  # the real kinds: "Expected <expected>, but <actual>."
    html = login(member).get(run.get_absolute_url()).content.decode()
    cards = _cards(html)
    assert cards and all('class="explanation"' in card for card in cards)
    assert all('class="expected"' not in card and 'class="actual"' not in card for card in cards)
    assert "Expected the output to include" in html


def test_a_judge_card_shows_the_pair_without_repeating_the_reason(login, member, order_test):
    run = finish(services.launch_run(test=order_test, by=member), ["pass"] * 4)
    CheckResult.objects.filter(sample__run=run).update(
        expected="the judge to answer pass for the rubric 'polite'",
        actual="the judge answered pass: The reply is polite.",
        explanation="The reply is polite.",
    )
    cards = _cards(login(member).get(run.get_absolute_url()).content.decode())
    assert cards and all(card.count("The reply is polite.") == 1 for card in cards)
    assert all('class="expected"' in card and 'class="explanation"' not in card for card in cards)


def test_a_run_whose_agent_failed_labels_its_status_and_result(login, member, order_test):
    run = finish(services.launch_run(test=order_test, by=member), ["error"] * 4)
    assert (run.status, run.result) == ("completed", "error")
    html = login(member).get(run.get_absolute_url()).content.decode()
    progress = html.split('id="run-progress"')[1].split('id="scenario-table"')[0]
    assert 'Status <span class="badge completed" id="run-status">Completed</span>' in progress
    assert 'Result <span class="badge big error" id="run-result"' in progress
    assert "every sample finished" in progress
    assert "every sample errored, so no check could run" in progress
    assert "agent unreachable" in progress  # the first sample's error says why


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


# ---------------------------------------------------------------- no judge key (issue 14: 5)

NO_KEY = "No judge key is configured"


@pytest.fixture
def judged_test(live_agent, member, order_test):
    judge = create_check(agent=live_agent, by=member, name="Polite", kind="ai_judge",
                         config={"prompt": "The reply is polite."})
    from checks.services import edit_test

    attached = order_test.current_version.attached_checks.all()
    checks = [{"check": c.library_check_id, "required": True} for c in attached]
    return edit_test(test=order_test, by=member, checks=[*checks, {"check": judge.pk, "required": True}])


def test_launcher_warns_that_judge_checks_will_be_skipped_without_a_key(login, member, judged_test, settings):
    settings.EVALCONSOLE_JUDGE_API_KEY = ""
    html = login(member).get(reverse("runs:run-launch"), {"test": judged_test.pk}).content.decode()
    warning = html.split('id="judge-warning"')[1].split("</div>")[0]
    assert NO_KEY in warning and "Polite" in warning and "indeterminate" in warning
    settings.EVALCONSOLE_JUDGE_API_KEY = "sk-set"
    html = login(member).get(reverse("runs:run-launch"), {"test": judged_test.pk}).content.decode()
    assert NO_KEY not in html


def test_launcher_marks_additional_judge_checks_without_a_key(
    login, member, order_test, live_agent, settings
):
    settings.EVALCONSOLE_JUDGE_API_KEY = ""
    create_check(agent=live_agent, by=member, name="Polite", kind="ai_judge", config={"prompt": "polite"})
    html = login(member).get(reverse("runs:run-launch"), {"test": order_test.pk}).content.decode()
    assert "id=\"judge-warning\"" not in html  # none of the test's own checks needs the judge
    assert "skipped: no judge key" in html.split("Additional checks")[1]


def test_run_page_says_judge_checks_were_skipped_without_a_key(login, member, judged_test, run_now, settings):
    settings.EVALCONSOLE_JUDGE_API_KEY = ""
    run = run_now(judged_test)
    assert run.status == "completed"
    html = login(member).get(run.get_absolute_url()).content.decode()
    note = html.split('id="judge-note"')[1].split("</div>")[0]
    assert NO_KEY in note and "Polite" in note
    assert "skipped on 4 of 4 samples" in note
    settings.EVALCONSOLE_JUDGE_API_KEY = "sk-set"  # set since: the skipped results still say why
    note = login(member).get(run.get_absolute_url()).content.decode().split('id="judge-note"')[1]
    assert "no judge key was configured when they ran" in note.split("</div>")[0]


def test_run_page_warns_before_judge_checks_run_without_a_key(login, member, judged_test, settings):
    settings.EVALCONSOLE_JUDGE_API_KEY = ""
    run = services.launch_run(test=judged_test, by=member)  # stays queued: on_commit never fires here
    note = login(member).get(run.get_absolute_url()).content.decode().split('id="judge-note"')[1]
    assert NO_KEY in note.split("</div>")[0] and "will be skipped" in note.split("</div>")[0]
    settings.EVALCONSOLE_JUDGE_API_KEY = "sk-set"
    assert 'id="judge-note"' not in login(member).get(run.get_absolute_url()).content.decode()


def _sample_outcomes(html: str) -> list[str]:
    return re.findall(r'<details class="sample[^"]*" id="sample-\d+" data-outcome="(\w+)"', html)


def test_failures_only_filter_shows_failed_and_errored_samples(login, member, order_test):
    run = finish(services.launch_run(test=order_test, by=member), ["pass", "fail", "error", "pass"])
    client = login(member)
    url = run.get_absolute_url()
    page = client.get(url).content.decode()
    assert sorted(_sample_outcomes(page)) == ["error", "fail", "pass", "pass"]
    assert f'href="{url}?failures=1"' in page and 'id="active-filter"' not in page
    filtered = client.get(url, {"failures": "1"}).content.decode()
    assert sorted(_sample_outcomes(filtered)) == ["error", "fail"]
    assert 'aria-current="true" data-filter="failures"' in filtered
    active = filtered.split('id="active-filter">')[1].split("</p>")[0]
    assert "failed and errored samples only, 2 of 4" in active and f'href="{url}"' in active  # a way back
    assert '<span class="v" id="latency-median">250 ms</span>' in filtered  # stats still cover every sample
    # The HTMX toggle swaps only the samples region.
    fragment = client.get(url, {"failures": "1"}, HTTP_HX_TARGET="run-samples", **HTMX).content.decode()
    assert fragment.lstrip().startswith('<div id="run-samples"') and "<html" not in fragment
    assert sorted(_sample_outcomes(fragment)) == ["error", "fail"]


def test_failures_only_filter_says_when_nothing_failed_and_rejects_non_booleans(login, member, order_test):
    run = finish(services.launch_run(test=order_test, by=member), ["pass"] * 4)
    client = login(member)
    html = client.get(run.get_absolute_url(), {"failures": "true"}).content.decode()
    assert _sample_outcomes(html) == [] and "No sample failed or errored." in html
    bad = client.get(run.get_absolute_url(), {"failures": "maybe"})
    assert bad.status_code == 200
    assert "failures=&#x27;maybe&#x27; is not a boolean" in bad.content.decode()
    assert len(_sample_outcomes(bad.content.decode())) == 4


def test_failures_only_filter_is_kept_while_the_samples_refresh(login, member, order_test):
    run = services.launch_run(test=order_test, by=member)  # stays queued: the samples region polls
    html = login(member).get(run.get_absolute_url(), {"failures": "1"}).content.decode()
    assert f'<div id="run-samples" hx-get="{run.get_absolute_url()}?failures=1"' in html
    assert "No sample failed or errored so far." in html


def _outputs(run: Run, *texts: str) -> list[Sample]:
    samples = list(run.samples.order_by("scenario_index", "sample_index"))
    for sample, text in zip(samples, texts, strict=False):
        Sample.objects.filter(pk=sample.pk).update(output=text)
    return samples


def _diff_rows(html: str) -> list[tuple[str, str]]:
    table = html.split('class="outputdiff"')[1].split("</table>")[0]
    return re.findall(r'<tr class="diff-(\w+)">.*?<td class="text">(.*?)</td></tr>', table)


def test_run_page_diffs_the_outputs_of_two_samples(login, member, order_test):
    run = finish(services.launch_run(test=order_test, by=member), ["pass", "fail", "pass", "fail"])
    first, second, *_ = _outputs(
        run, "Order EC-1042\nis in transit.\n<b>Friday</b>", "Which order?\nis in transit."
    )
    client = login(member)
    url = run.get_absolute_url()
    page = client.get(url).content.decode()
    assert 'id="diff-picker"' in page and 'name="diff_a"' in page and 'class="outputdiff"' not in page
    html = client.get(url, {"diff_a": first.pk, "diff_b": second.pk}).content.decode()
    assert _diff_rows(html) == [
        ("removed", "Order EC-1042"),
        ("added", "Which order?"),
        ("same", "is in transit."),
        ("removed", "&lt;b&gt;Friday&lt;/b&gt;"),  # escaped, never markup
    ]
    assert "2 lines removed, 1 added" in html
    assert f'<option value="{second.pk}" selected>' in html  # the picks are kept
    fragment = client.get(
        url, {"diff_a": first.pk, "diff_b": second.pk}, HTTP_HX_TARGET="sample-diff", **HTMX
    )
    body = fragment.content.decode()
    assert fragment.status_code == 200 and body.lstrip().startswith('<div id="sample-diff"')
    assert len(_diff_rows(body)) == 4 and "<html" not in body
    same = client.get(url, {"diff_a": first.pk, "diff_b": first.pk}).content.decode()
    assert "The two outputs are identical." in same


PICKER = r'<select name="diff_a".*?</select>'


def test_the_diff_picker_names_outcomes_only_once_the_run_has_finished(login, member, order_test):
    # The picker is outside the region that refreshes while a run is active: an outcome it showed then
    # would still say "queued" after the samples below it had passed.
    client = login(member)
    live = services.launch_run(test=order_test, by=member)
    options = re.findall(PICKER, client.get(live.get_absolute_url()).content.decode())
    assert options and "sample 1</option>" in options[0] and "(queued)" not in options[0]
    done = finish(services.launch_run(test=order_test, by=member), ["pass", "fail", "pass", "fail"])
    options = re.findall(PICKER, client.get(done.get_absolute_url()).content.decode())
    assert "sample 1 (pass)</option>" in options[0] and "sample 2 (fail)</option>" in options[0]


def test_sample_diff_refuses_samples_of_another_run_and_bad_ids(login, member, outsider, order_test):
    run = finish(services.launch_run(test=order_test, by=member), ["pass"] * 4)
    other = finish(services.launch_run(test=order_test, by=member), ["pass"] * 4)
    mine, theirs = run.samples.first(), other.samples.first()
    client = login(member)
    for params in (
        {"diff_a": mine.pk, "diff_b": theirs.pk},
        {"diff_a": "x", "diff_b": "9" * 40},
        {"diff_a": ""},
    ):
        for extra in ({}, {"HTTP_HX_TARGET": "sample-diff", **HTMX}):
            response = client.get(run.get_absolute_url(), params, **extra)
            html = response.content.decode()
            assert response.status_code == 200 and 'role="alert">Pick two samples' in html, params
            assert "outputdiff" not in html
    assert (
        login(outsider).get(run.get_absolute_url(), {"diff_a": mine.pk, "diff_b": mine.pk}).status_code == 404
    )


def test_compare_page_diffs_a_scenario_across_the_two_runs(login, member, order_test):
    before = finish(services.launch_run(test=order_test, by=member), ["pass"] * 4)
    after = finish(services.launch_run(test=order_test, by=member), ["pass", "fail", "fail", "fail"])
    _outputs(before, "Found EC-1042.\nIn transit.", "b1", "Which order?", "b3")
    _outputs(after, "Found EC-1042.\nDelivered.", "a1", "Which <order>?", "a3")
    client = login(member)
    url = reverse("runs:run-compare")
    html = client.get(
        url, {"a": after.pk, "b": before.pk}
    ).content.decode()  # default: first scenario, 1 vs 1
    assert _diff_rows(html) == [
        ("same", "Found EC-1042."),
        ("removed", "In transit."),
        ("added", "Delivered."),
    ]
    assert f"run #{before.pk} · Known order · sample 1 (pass)" in html  # the older run is "before"
    picked = {"a": after.pk, "b": before.pk, "scenario": 1, "sample_a": 1, "sample_b": 1}
    html = client.get(url, picked).content.decode()
    assert _diff_rows(html) == [("removed", "Which order?"), ("added", "Which &lt;order&gt;?")]
    assert '<option value="1" selected>No order id</option>' in html
    second = client.get(url, {**picked, "sample_a": 2, "sample_b": 2}, HTTP_HX_TARGET="output-diff", **HTMX)
    assert second.content.decode().lstrip().startswith('<div id="output-diff"')
    assert _diff_rows(second.content.decode()) == [("removed", "b3"), ("added", "a3")]
    for bad, message in (
        ({"scenario": 7}, "Pick a scenario of these runs."),
        ({"scenario": "x"}, "Pick a scenario of these runs."),
        ({"sample_b": 3}, f"Run #{after.pk} has no sample 3 of No order id."),
        ({"sample_a": "-1"}, f"Run #{before.pk} has no sample ? of No order id."),
    ):
        response = client.get(url, {**picked, **bad})
        assert response.status_code == 200 and message in response.content.decode(), bad


def _run_order(html: str) -> list[int]:
    return [int(pk) for pk in re.findall(r"<strong>#(\d+)</strong>", html)]


def test_run_list_sorts_by_an_allowed_column_either_way(login, member, order_test):
    greeting = create_test(test_set=order_test.test_set, by=member, name="Greeting", scenarios=["hi"])
    first = finish(services.launch_run(test=order_test, by=member), ["pass"] * 4)
    queued = services.launch_run(test=greeting, by=member)
    failed = finish(services.launch_run(test=order_test, by=member), ["fail"] * 4)
    client = login(member)
    url = reverse("runs:run-list")

    def order(**params):
        return _run_order(client.get(url, params).content.decode())

    assert order() == [failed.pk, queued.pk, first.pk]  # newest first by default
    assert order(sort="test") == [queued.pk, first.pk, failed.pk]  # ties by id, same direction
    assert order(sort="-test") == [failed.pk, first.pk, queued.pk]
    assert order(sort="result") == [queued.pk, failed.pk, first.pk]  # "" (not finished) < fail < pass
    assert order(sort="launched") == [first.pk, queued.pk, failed.pk]
    assert order(sort="-run") == [failed.pk, queued.pk, first.pk]
    html = client.get(url, {"sort": "test", "result": "fail"}).content.decode()
    assert _run_order(html) == [failed.pk]  # sorting keeps the filters
    head = html.split("<thead>")[1].split("</thead>")[0]
    assert 'aria-sort="ascending"><a class="sort" href="?result=fail&amp;sort=-test"' in head  # flips
    assert 'aria-sort="none"><a class="sort" href="?result=fail&amp;sort=agent"' in head
    assert '<input type="hidden" name="sort" value="test">' in html  # the filter form keeps the sort


def test_run_list_ignores_a_sort_it_does_not_allow_and_says_so(login, member, order_test):
    runs = [services.launch_run(test=order_test, by=member) for _ in range(2)]
    client = login(member)
    for bad in ("password", "-launched_by__password", "agent__team__name", "--id", "x" * 500):
        response = client.get(reverse("runs:run-list"), {"sort": bad})
        html = response.content.decode()
        assert response.status_code == 200 and _run_order(html) == [runs[1].pk, runs[0].pk], bad
        assert 'role="alert">Cannot sort by' in html and "sorted by -launched" in html


def test_run_list_searches_by_test_or_agent_name_and_run_number(login, member, order_test):
    greeting = create_test(test_set=order_test.test_set, by=member, name="Greeting", scenarios=["hi"])
    order_run = services.launch_run(test=order_test, by=member)
    greeting_run = services.launch_run(test=greeting, by=member)
    client = login(member)
    url = reverse("runs:run-list")

    def found(q, **params):
        return set(_run_order(client.get(url, {"q": q, **params}).content.decode()))

    assert found("greet") == {greeting_run.pk}
    assert found("ORDER STATUS") == {order_run.pk}
    assert found("fake bot") == {order_run.pk, greeting_run.pk}  # the agent's name
    assert found(f"#{order_run.pk}") == {order_run.pk}
    assert found("greet", status="queued", sort="-agent") == {greeting_run.pk}
    assert found("nothing like it") == set()
    html = client.get(url, {"q": "greet"}).content.decode()
    assert 'name="q" id="run-search" value="greet"' in html and "No runs match these filters." not in html
    for bad, message in (("x" * 101, "at most 100 characters"), ("a\x00b", "NUL characters")):
        response = client.get(url, {"q": bad})
        assert response.status_code == 200 and message in response.content.decode()
        assert set(_run_order(response.content.decode())) == {order_run.pk, greeting_run.pk}


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


def test_run_page_links_to_the_csv_and_json_exports_which_a_session_may_download(
    login, member, outsider, order_test
):
    run = finish(services.launch_run(test=order_test, by=member), ["pass", "fail", "error", "pass"])
    client = login(member)
    html = client.get(run.get_absolute_url()).content.decode()
    links = html.split('id="run-export"')[1].split("</span>")[0]
    for fmt in ("csv", "json"):
        url = f"/api/v1/runs/{run.pk}/export/?format={fmt}"
        assert f'<a href="{url}" download>' in links
        response = client.get(url)  # the browser's session, no token
        assert (
            response.status_code == 200 and f"run-{run.pk}-samples.{fmt}" in response["Content-Disposition"]
        )
        assert b"".join(response.streaming_content).count(b"Mentions order") == 3  # 3 samples have results
        assert login(outsider).get(url).status_code == 404
        client = login(member)
