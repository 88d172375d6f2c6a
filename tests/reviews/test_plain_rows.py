"""The review lists drawn from plain column values (reviews.serializers.queue_rows, review_item_rows): each
row is exactly, key order included, what the serializer shows: queues with and without an author, items and
labels; a queue's sample and task items, with and without results and labels."""

from __future__ import annotations

import json

import pytest

from reviews import services
from reviews.models import Label, ReviewItem, ReviewQueue
from reviews.serializers import ReviewItemSerializer, ReviewQueueSerializer
from tests.support.page_fixtures import login  # noqa: F401  (a fixture)

pytestmark = pytest.mark.django_db


def test_item_rows_are_the_serializers(login, member, queue, make_run, judge_check, agent, other_member):
    from django.utils import timezone

    from monitors.models import Task
    from runs.models import CheckResult

    run = make_run(["pass", "fail", "pass"])
    services.send_samples(queue=queue, run=run, by=member)
    now = timezone.now()
    tasks = [Task.objects.create(agent=agent, external_id=f"t-{i}", completed_at=now) for i in range(2)]
    version = judge_check.current_version
    CheckResult.objects.create(task=tasks[0], check_version=version, outcome="indeterminate")
    services.send_tasks(queue=queue, by=member, task_ids=[t.pk for t in tasks])
    items = list(ReviewItem.objects.filter(queue=queue).order_by("position"))
    assert [i.kind for i in items] == ["sample"] * 3 + ["task"] * 2
    services.label_item(item=items[0], check_version=version, by=member, verdict="fail", note="rude")
    services.label_item(item=items[0], check_version=version, by=other_member, verdict="pass")
    judged = next(i for i in items if i.task_id == tasks[0].pk)
    services.label_item(item=judged, check_version=version, by=member, verdict="pass")
    assert Label.objects.count() == 3

    rows = login(member).get(f"/api/v1/review-queues/{queue.pk}/items/").json()["results"]
    shown = ReviewItemSerializer(items, many=True).data
    assert [json.dumps(r) for r in rows] == [json.dumps(s) for s in shown]
    by_task = {r["task"]: r for r in rows if r["kind"] == "task"}
    assert [len(r["labels"]) for r in rows[:3]] == [2, 0, 0] and len(by_task[tasks[0].pk]["labels"]) == 1
    assert [len(r["results"]) for r in rows[:3]] == [1, 1, 1] and by_task[tasks[1].pk]["results"] == []
    assert by_task[tasks[0].pk]["run"] is None and rows[0]["run"] == run.pk


def test_queue_rows_are_the_serializers(login, member, queue, make_run, team):
    other = services.create_queue(team=team, by=member, name="Orphan", description="no author")
    ReviewQueue.objects.filter(pk=other.pk).update(created_by=None)
    services.create_queue(team=team, by=member, name="Empty")
    services.send_samples(queue=queue, run=make_run(["pass", "fail"]), by=member)
    item = ReviewItem.objects.filter(queue=queue).first()
    version = item.sample.results.first().check_version
    services.label_item(item=item, check_version=version, by=member, verdict="pass")

    rows = login(member).get("/api/v1/review-queues/").json()["results"]
    queues = ReviewQueue.objects.with_counts().select_related("created_by").order_by("name", "id")
    assert [json.dumps(r) for r in rows] == [
        json.dumps(s) for s in ReviewQueueSerializer(queues, many=True).data
    ]
    by_name = {r["name"]: r for r in rows}
    assert by_name["Orphan"]["created_by"] is None and by_name[queue.name]["created_by"] == member.username
    assert (by_name[queue.name]["items"], by_name[queue.name]["labelled"], by_name["Empty"]["items"]) == (
        2,
        1,
        0,
    )


@pytest.fixture
def other_member(team):
    from teams.services import add_member, get_or_create_user

    user, _ = get_or_create_user(username="second-reviewer")
    add_member(team=team, user=user, role="member")
    return user
