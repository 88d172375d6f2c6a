"""Review pages: queues, sending, the review page (keyboard help, evidence, labels), the calibration
section of a judge check's page; permissions; query counts that do not grow with the items."""

from __future__ import annotations

from django.urls import reverse

from reviews import services
from reviews.models import Label, ReviewItem, ReviewQueue
from tests import factories
from tests.support.page_fixtures import login  # noqa: F401  (a fixture)
from tests.support.queries import query_count


def test_a_member_creates_a_queue_and_sends_a_runs_failures(login, member, make_run, judge_check):
    page = login(member)
    created = page.post(reverse("reviews:queue-list"), {"name": "Weekly", "description": ""})
    queue = ReviewQueue.objects.get(name="Weekly")
    assert created.status_code == 302 and created["Location"] == queue.get_absolute_url()
    run = make_run(["pass", "fail", "fail"])
    assert "Send to review" in page.get(run.get_absolute_url()).content.decode()
    form = page.get(reverse("reviews:send") + f"?run={run.pk}")
    assert "samples of run #" in form.content.decode() and "at most 500 items" in form.content.decode()
    sent = page.post(
        reverse("reviews:send"),
        {"run": run.pk, "queue": queue.pk, "check_id": judge_check.pk, "outcome": "fail"},
        follow=True,
    )
    assert "2 items sent to Weekly" in sent.content.decode()
    assert ReviewItem.objects.filter(queue=queue).count() == 2
    again = page.post(reverse("reviews:send"), {"run": run.pk, "new_queue": "Weekly"})
    assert "already has a review queue called" in again.content.decode()


def test_tasks_are_sent_from_the_task_list_selection(login, member, agent, queue):
    tasks = [factories.task(agent, external_id=f"T-{i}", output="hello") for i in range(2)]
    page = login(member)
    assert 'id="send-tasks-to-review"' in page.get(reverse("monitors:task-list")).content.decode()
    sent = page.post(reverse("reviews:send"), {"task": [t.pk for t in tasks], "queue": queue.pk}, follow=True)
    assert "2 items sent to Politeness review" in sent.content.decode()


def test_the_review_page_shows_the_evidence_the_checks_and_the_keys(
    login, member, queue, make_run, judge_check
):
    services.send_samples(queue=queue, run=make_run(["pass", "fail"]), by=member)
    first, second = ReviewItem.objects.order_by("position")
    page = login(member).get(first.get_absolute_url())
    html = page.content.decode()
    for text in (
        "question 0",
        "answer 0",
        "lookup_order",
        "Polite",
        "The judge said",
        "Judge prompt",
        "<kbd>j</kbd>",
        "<kbd>p</kbd>",
        "<kbd>f</kbd>",
        "<kbd>n</kbd>",
        "<kbd>s</kbd>",
        "Item 1",
    ):
        assert text in html, text
    assert f'data-next="{second.get_absolute_url()}"' in html
    labelled = login(member).post(
        reverse("reviews:item-label", args=[queue.pk, first.pk]),
        {"check_version": judge_check.current_version_id, "verdict": "fail", "note": "rude"},
        HTTP_HX_REQUEST="true",
    )
    assert labelled.status_code == 200 and labelled["HX-Trigger"] == "label-saved"
    assert 'data-mine="fail"' in labelled.content.decode() and "rude" in labelled.content.decode()
    assert Label.objects.get().verdict == "fail"
    start = login(member).get(reverse("reviews:queue-start", args=[queue.pk]))
    assert start["Location"] == second.get_absolute_url()  # the first item not labelled yet


def test_viewers_read_and_outsiders_get_404(login, viewer, outsider, member, queue, make_run, judge_check):
    services.send_samples(queue=queue, run=make_run(["pass"]), by=member)
    item = ReviewItem.objects.get()
    page = login(viewer)
    html = page.get(item.get_absolute_url()).content.decode()
    assert "The judge said" in html and 'data-key="p"' not in html
    refused = page.post(
        reverse("reviews:item-label", args=[queue.pk, item.pk]),
        {"check_version": judge_check.current_version_id, "verdict": "pass"},
    )
    assert refused.status_code == 403 and not Label.objects.exists()
    page = login(outsider)
    for url in (
        queue.get_absolute_url(),
        item.get_absolute_url(),
        reverse("reviews:check-calibration", args=[judge_check.pk]),
    ):
        assert page.get(url).status_code == 404, url


def test_the_check_page_loads_its_calibration_with_disagreements_linked(
    login, member, queue, make_run, judge_check
):
    services.send_samples(queue=queue, run=make_run(["pass", "fail", "pass"]), by=member)
    for item, verdict in zip(ReviewItem.objects.order_by("position"), ["pass", "fail", "fail"], strict=True):
        services.label_item(
            item=item,
            check_version=judge_check.current_version,
            by=member,
            verdict=verdict,
            note="too curt" if item.position == 3 else "",
        )
    page = login(member)
    check_page = page.get(judge_check.get_absolute_url()).content.decode()
    url = reverse("reviews:check-calibration", args=[judge_check.pk])
    assert f'hx-get="{url}"' in check_page
    fragment = page.get(url, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="calibration").content.decode()
    assert "<html" not in fragment
    assert 'id="cal-labels">3<' in fragment and 'id="cal-agreement">66.7 %<' in fragment
    assert 'id="cal-kappa">0.40<' in fragment and 'id="cm-pass-fail">1<' in fragment
    third = ReviewItem.objects.get(position=3)
    assert third.get_absolute_url() in fragment and "too curt" in fragment
    promoted = page.post(
        reverse("reviews:check-promote", args=[judge_check.pk]),
        {"label": Label.objects.get(item=third).pk},
        follow=True,
    )
    assert "Saved Polite v2 with 1 new example" in promoted.content.decode()
    assert "Example 1: verdict fail (too curt)" not in promoted.content.decode()  # the prompt is the judge's
    assert (
        'data-version="2"' in promoted.content.decode() and 'id="cal-labels">0<' in promoted.content.decode()
    )


def _count(client, url) -> int:
    return query_count(lambda: client.get(url))


def test_queue_review_and_calibration_pages_do_not_grow_in_queries(
    login, member, team, queue, make_run, judge_check
):
    page = login(member)
    bea = factories.member_of(team, "member", "bea")

    def grow(outcomes):
        services.send_samples(queue=queue, run=make_run(outcomes), by=member)
        for item in ReviewItem.objects.filter(queue=queue):
            for who in (member, bea):
                services.label_item(
                    item=item, check_version=judge_check.current_version, by=who, verdict="fail"
                )
        services.create_queue(team=team, by=member, name=f"Q{ReviewItem.objects.count()}")

    grow(["pass"])
    first = ReviewItem.objects.get()
    urls = [
        reverse("reviews:queue-list"),
        queue.get_absolute_url(),
        first.get_absolute_url(),
        reverse("reviews:check-calibration", args=[judge_check.pk]),
    ]
    for url in urls:
        page.get(url)
    before = {url: _count(page, url) for url in urls}
    grow(["pass", "fail", "pass", "fail", "pass", "fail"])
    assert {url: _count(page, url) for url in urls} == before
    assert page.get(queue.get_absolute_url()).content.decode().count("data-item=") == 7
