"""A review queue's page draws its item rows in Python (reviews.views._item_rows) from tuples, not model
instances: each row is the HTML the template's row drew from the items, samples, tasks, results and
labels as model instances, for samples and tasks, with and without an outcome, results and labels, and
names that need escaping or truncating; the item's URL is the one it names itself."""

from __future__ import annotations

import pytest
from django.db.models import Prefetch
from django.template import engines

from monitors.models import Task
from reviews import services
from reviews.models import Label, ReviewItem, shown_results
from reviews.views import _item_rows, _item_url_parts, _items, _subject
from runs.models import CheckResult
from tests import factories
from tests.reviews.conftest import judged_run

pytestmark = pytest.mark.django_db

# The row as reviews/queue_detail.html drew it before the rows moved to Python.
TEMPLATE_ROW = """
    <tr data-item="{{ row.item.position }}">
      <td>{{ row.item.position }}</td>
      <td><a href="{{ row.item.get_absolute_url }}">{{ row.title|truncatechars:90 }}</a> <span class="tag">{{ row.kind }}</span>{% if row.outcome %} <span class="badge {{ row.outcome }}">{{ row.outcome }}</span>{% endif %}</td>
      <td class="small">{% for r in row.results %}<span class="badge {{ r.outcome }}" title="{{ r.check_version.name }} v{{ r.check_version.number }}">{{ r.check_version.name|truncatechars:30 }}: {{ r.outcome }}</span> {% empty %}<span class="muted">none</span>{% endfor %}</td>
      <td class="small">{% for lab in row.labels %}<span class="tag" title="{{ lab.note }}">{{ lab.reviewer }} · {{ lab.check_version.name|truncatechars:20 }}: {{ lab.verdict }}</span> {% empty %}<span class="muted">not labelled</span>{% endfor %}</td>
    </tr>
  """  # noqa: E501


def _instances(queue):
    """The items as model instances, with what the template's row read of them (the page's former query)."""
    return list(
        ReviewItem.objects.filter(queue=queue)
        .select_related("sample__run__test_version", "task__agent")
        .prefetch_related(
            Prefetch("sample__results", queryset=shown_results(), to_attr="listed_results"),
            Prefetch("task__results", queryset=shown_results(), to_attr="listed_results"),
            Prefetch(
                "labels",
                queryset=Label.objects.select_related("reviewer", "check_version").order_by("id"),
                to_attr="listed_labels",
            ),
        )
        .order_by("position")
    )


def test_rows_are_what_the_template_drew(team, agent, member, admin_user):
    name = 'Polite <b> & "kind" ' + "very " * 8
    check = factories.check(agent, member, kind="ai_judge", name=name, config={"prompt": "Polite?"})
    scenario = {"name": "<Where> is & my order " + "long " * 20, "input": "Where is EC-1042?"}
    test = factories.test(agent, member, checks=[check], scenarios=[scenario], name="Order <status>")
    run = judged_run(test, check, ["pass", "fail", ""])
    version = check.versions.get()
    CheckResult.objects.filter(sample__run=run, sample__sample_index=2).delete()  # a sample nobody judged
    task = factories.task(agent, external_id='<t id="1">&', output="out")
    Task.objects.filter(pk=task.pk).update(has_failures=True)
    CheckResult.objects.create(task=task, check_version=version, outcome="fail")
    plain = factories.task(agent, external_id="plain", output="out")
    queue = services.create_queue(team=team, by=member, name="Politeness review")
    services.send_samples(queue=queue, run=run, by=member)
    services.send_tasks(queue=queue, by=member, task_ids=[task.pk, plain.pk])
    first = queue.items.order_by("position").first()
    services.label_item(item=first, check_version=version, by=member, verdict="fail", note='<"rude"> & more')
    services.label_item(item=first, check_version=version, by=admin_user, verdict="pass")

    template = engines["django"].from_string(TEMPLATE_ROW)
    # A second judgement of the task by the same version: the row shows the newer one only.
    CheckResult.objects.create(task=task, check_version=version, outcome="pass")
    head, tail = _item_url_parts(queue)
    items = _instances(queue)
    assert len(items) == 5
    rows = _item_rows(list(_items(queue)), (head, tail))
    assert len(rows) == 5
    for item, drawn in zip(items, rows, strict=True):
        assert f"{head}{item.pk}{tail}" == item.get_absolute_url()
        row = {"item": item, **_subject(item), "labels": item.listed_labels}
        assert drawn == template.render({"row": row})
    assert [len(item.listed_labels) for item in items] == [2, 0, 0, 0, 0]
    assert sorted(len(_subject(item)["results"]) for item in items) == [0, 0, 1, 1, 1]
    (judged,) = [row for row in rows if "Task &lt;t id" in row]
    assert judged.split("<td")[3].count("badge pass") == 1 and "badge fail" not in judged.split("<td")[3]


def test_an_empty_page_asks_nothing(team, member, django_assert_num_queries):
    queue = services.create_queue(team=team, by=member, name="Empty")
    with django_assert_num_queries(0):
        assert _item_rows([], _item_url_parts(queue)) == []
