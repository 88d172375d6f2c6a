"""The tasks list draws its rows in Python (monitors.views._task_row) from tuples, not model instances:
each row is the HTML the template's row drew from the tasks, with and without the selection box, for
failing, sampled and plain tasks and ids that need escaping."""

from __future__ import annotations

import pytest
from django.db.models.functions import Left
from django.template import engines
from django.utils import timezone

from core.urls import pk_url_former
from monitors.models import Task
from monitors.services import ingest_tasks
from monitors.views import TASK_ROW_COLUMNS, _task_row

pytestmark = pytest.mark.django_db

# The row as monitors/task_list.html drew it before the rows moved to Python.
TEMPLATE_ROW = """
      <tr>
        {% if can_edit %}<td><input type="checkbox" name="task" value="{{ t.pk }}" id="task-{{ t.pk }}" aria-label="Select task {{ t.external_id }}"></td>{% endif %}
        <td><a href="{% url 'monitors:task-detail' t.pk %}">{{ t.external_id }}</a></td>
        <td>{{ t.agent.name|trunc }}</td>
        <td class="small">{{ t.completed_at|date:"Y-m-d H:i:s" }}</td>
        <td class="small">{{ t.preview|truncatechars:120 }}</td>
        <td>{% if t.has_failures %}<span class="badge fail">Failures</span>{% elif t.sampled %}<span class="tag">sampled</span>{% endif %}</td>
      </tr>
      """  # noqa: E501


def test_rows_are_what_the_template_drew(agent, member):
    now = timezone.now().isoformat()
    items = [
        {"external_id": '<x y="1">&', "completed_at": now, "output": "<b>" + "long " * 60},
        {"external_id": "plain", "completed_at": now, "output": ""},
        {"external_id": "sampled", "completed_at": now, "output": "ok"},
        {"external_id": "failing", "completed_at": now, "output": "no"},
    ]
    ingest_tasks(agent=agent, by=member, items=items)
    Task.objects.filter(external_id="sampled").update(sampled=True)
    Task.objects.filter(external_id="failing").update(sampled=True, has_failures=True)
    template = engines["django"].from_string(TEMPLATE_ROW)
    tasks = Task.objects.filter(agent=agent).select_related("agent").annotate(preview=Left("output", 160))
    assert len(tasks) == 4
    rows = {t[0]: t for t in tasks.values_list(*TASK_ROW_COLUMNS)}
    url = pk_url_former("monitors:task-detail")
    for task in tasks:
        for can_edit in (True, False):
            drawn = _task_row(rows[task.pk], can_edit, url)
            assert drawn == template.render({"t": task, "can_edit": can_edit})
