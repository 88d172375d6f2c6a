"""A review queue's page draws its item rows in Python (reviews.views._item_row): each row is the HTML the
template's row drew, for samples and tasks, with and without an outcome, results and labels, and names
that need escaping or truncating; the item's URL is the one it names itself."""

from __future__ import annotations

import pytest
from django.template import engines

from monitors.models import Task
from reviews import services
from reviews.views import _item_fields, _item_row, _item_url_parts, _items
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
    head, tail = _item_url_parts(queue)
    items = list(_items(queue))
    assert len(items) == 5
    for item in items:
        assert f"{head}{item.pk}{tail}" == item.get_absolute_url()
        row = _item_fields(item)
        assert _item_row(row, item.get_absolute_url()) == template.render({"row": row})
    assert [len(_item_fields(item)["labels"]) for item in items] == [2, 0, 0, 0, 0]
    assert sorted(len(_item_fields(item)["results"]) for item in items) == [0, 0, 1, 1, 1]
