"""The review API: queues, sending, labels, calibration figures, exports; permissions as everywhere."""

from __future__ import annotations

import csv
import io
import json

import pytest

from checks.services import edit_check
from reviews import services
from reviews.models import Label, ReviewItem
from reviews.services import create_queue
from tests import factories
from tests.support.page_fixtures import login  # noqa: F401  (a fixture)
from tests.support.queries import query_count

QUEUES = "/api/v1/review-queues/"


def post(client, url, body):
    return client.post(url, json.dumps(body), content_type="application/json")


def test_a_member_creates_a_queue_sends_a_run_and_labels_it(login, member, make_run, judge_check):
    api = login(member)
    made = post(api, QUEUES, {"name": "Politeness", "description": "Weekly"})
    assert made.status_code == 201, made.json()
    queue = made.json()
    assert (queue["name"], queue["items"], queue["labelled"]) == ("Politeness", 0, 0)
    run = make_run(["pass", "fail", "pass"])
    sent = post(
        api, f"{QUEUES}{queue['id']}/items/", {"run": run.pk, "check": judge_check.pk, "outcome": "pass"}
    )
    assert sent.status_code == 201 and sent.json() == {"queue": queue["id"], "added": 2, "already": 0}
    listed = api.get(f"{QUEUES}{queue['id']}/items/").json()
    assert listed["count"] == 2
    first = listed["results"][0]
    assert first["kind"] == "sample" and first["run"] == run.pk
    assert first["results"] == [
        {
            "check_id": judge_check.pk,
            "check_version": judge_check.current_version_id,
            "version": 1,
            "name": "Polite",
            "kind": "ai_judge",
            "outcome": "pass",
        }
    ]
    label = {
        "item": first["id"],
        "check_version": judge_check.current_version_id,
        "verdict": "fail",
        "note": "curt",
    }
    created = post(api, f"{QUEUES}{queue['id']}/labels/", label)
    assert created.status_code == 201, created.json()
    assert created.json()["verdict"] == "fail" and created.json()["result_outcome"] == "pass"
    changed = post(api, f"{QUEUES}{queue['id']}/labels/", {**label, "verdict": "pass"})
    assert changed.status_code == 200 and Label.objects.get().verdict == "pass"
    assert api.get(f"{QUEUES}{queue['id']}/").json()["labelled"] == 1


def test_calibration_endpoint_shape_kappa_null_and_versions(login, member, queue, make_run, judge_check):
    api = login(member)
    url = f"/api/v1/checks/{judge_check.pk}/calibration/"
    empty = api.get(url).json()
    assert empty == {
        "check": judge_check.pk,
        "version": 1,
        "labels": 0,
        "agreement": None,
        "kappa": None,
        "confusion": {"pass_pass": 0, "pass_fail": 0, "fail_pass": 0, "fail_fail": 0},
        "not_compared": 0,
        "inter_reviewer": {"items": 0, "agreement": None, "kappa": None},
    }
    post(api, f"{QUEUES}{queue.pk}/items/", {"run": make_run(["pass", "fail"]).pk})
    for item, verdict in zip(ReviewItem.objects.order_by("position"), ["pass", "pass"], strict=True):
        post(
            api,
            f"{QUEUES}{queue.pk}/labels/",
            {"item": item.pk, "check_version": judge_check.current_version_id, "verdict": verdict},
        )
    figures = api.get(url).json()
    assert (figures["labels"], figures["agreement"], figures["kappa"]) == (2, 50.0, 0.0)
    assert figures["confusion"] == {"pass_pass": 1, "pass_fail": 0, "fail_pass": 1, "fail_fail": 0}
    edit_check(check=judge_check, by=member, config={"prompt": "Polite and brief."})
    assert api.get(url).json()["version"] == 2 and api.get(url).json()["labels"] == 0  # its own figures
    assert api.get(url + "?version=1").json()["labels"] == 2  # the labels stayed with version 1
    bad = api.get(url + "?version=9")
    assert bad.status_code == 400 and "version" in bad.json()


def test_permissions_viewer_reads_outsider_sees_nothing(
    login, viewer, outsider, member, queue, make_run, judge_check
):
    post(login(member), f"{QUEUES}{queue.pk}/items/", {"run": make_run(["pass"]).pk})
    item = ReviewItem.objects.get()
    api = login(viewer)
    assert api.get(f"{QUEUES}{queue.pk}/items/").status_code == 200
    refused = post(
        api,
        f"{QUEUES}{queue.pk}/labels/",
        {"item": item.pk, "check_version": judge_check.current_version_id, "verdict": "pass"},
    )
    assert refused.status_code == 403
    assert post(api, QUEUES, {"name": "Mine"}).status_code == 403
    api = login(outsider)
    assert api.get(QUEUES).json()["count"] == 0
    for url in (
        f"{QUEUES}{queue.pk}/",
        f"{QUEUES}{queue.pk}/items/",
        f"{QUEUES}{queue.pk}/export/",
        f"/api/v1/checks/{judge_check.pk}/calibration/",
    ):
        assert api.get(url).status_code == 404, url


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({}, "run", "exactly one of run, monitor or tasks"),
        ({"run": 999999}, "run", "Run 999999 does not exist"),
        ({"tasks": [1], "outcome": "fail"}, "check", "narrow a run or a monitor only"),
    ],
)
def test_bad_sends_are_400_naming_the_field(login, member, queue, body, field, message):
    answer = post(login(member), f"{QUEUES}{queue.pk}/items/", body)
    assert answer.status_code == 400 and message in " ".join(answer.json()[field])


def test_a_send_over_the_limit_is_a_400(login, member, queue, make_run, monkeypatch):
    from reviews import services

    monkeypatch.setattr(services, "MAX_ITEMS_PER_SEND", 2)
    answer = post(login(member), f"{QUEUES}{queue.pk}/items/", {"run": make_run(["pass"] * 3).pk})
    assert answer.status_code == 400
    assert "more than 2 samples match; a send adds at most 2 items" in answer.json()["samples"][0]


def test_labels_export_as_csv_and_json_lines(login, member, queue, make_run, judge_check):
    api = login(member)
    post(api, f"{QUEUES}{queue.pk}/items/", {"run": make_run(["pass"]).pk})
    item = ReviewItem.objects.get()
    post(
        api,
        f"{QUEUES}{queue.pk}/labels/",
        {
            "item": item.pk,
            "check_version": judge_check.current_version_id,
            "verdict": "fail",
            "note": "=HYPERLINK(1)",
        },
    )
    csv_answer = api.get(f"{QUEUES}{queue.pk}/export/?format=csv")
    assert csv_answer.status_code == 200 and "attachment" in csv_answer["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(b"".join(csv_answer.streaming_content).decode())))
    assert len(rows) == 1 and rows[0]["verdict"] == "fail" and rows[0]["check_outcome"] == "pass"
    assert (
        rows[0]["note"] == "'=HYPERLINK(1)" and rows[0]["version"] == "1" and rows[0]["reviewer"] == "alice"
    )
    lines = (
        b"".join(api.get(f"{QUEUES}{queue.pk}/export/?format=jsonl").streaming_content).decode().splitlines()
    )
    assert [json.loads(line)["note"] for line in lines] == ["=HYPERLINK(1)"]
    assert api.get(f"{QUEUES}{queue.pk}/export/?format=xml").status_code == 400


def test_lists_and_calibration_do_not_grow_in_queries(login, member, team, queue, make_run, judge_check):
    api = login(member)
    bea = factories.member_of(team, "member", "bea")
    runs = iter([make_run(["pass", "fail"]), make_run(["fail"] * 5)])

    def grow():  # more items, each labelled by two reviewers
        post(api, f"{QUEUES}{queue.pk}/items/", {"run": next(runs).pk})
        for item in ReviewItem.objects.all():
            for who in (member, bea):
                services.label_item(
                    item=item, check_version=judge_check.current_version, by=who, verdict="pass"
                )
        create_queue(team=team, by=member, name=f"Queue {ReviewItem.objects.count()}")

    urls = [
        f"{QUEUES}{queue.pk}/items/",
        f"{QUEUES}{queue.pk}/labels/",
        QUEUES,
        f"/api/v1/checks/{judge_check.pk}/calibration/",
    ]
    grow()
    for url in urls:
        api.get(url)
    before = {url: query_count(lambda url=url: api.get(url)) for url in urls}
    grow()
    assert {url: query_count(lambda url=url: api.get(url)) for url in urls} == before
    assert api.get(f"{QUEUES}{queue.pk}/items/").json()["count"] == 7
    assert api.get(f"/api/v1/checks/{judge_check.pk}/calibration/").json()["inter_reviewer"]["items"] == 7


def test_the_api_root_lists_checks_and_review_queues(login, member):
    root = login(member).get("/api/v1/").json()
    assert root["checks"].endswith("/api/v1/checks/") and root["review-queues"].endswith(
        "/api/v1/review-queues/"
    )
