"""The check library draws its rows in Python (checks.views._library_row) from tuples, not model
instances: each row is the HTML the template's row drew from the checks, for archived, unused and used
checks and names that need escaping."""

from __future__ import annotations

import pytest
from django.template import engines

from checks.models import Check
from checks.services import archive_check, create_check, create_test
from checks.views import LIBRARY_ROW_COLUMNS, LibraryUrls, _kind_labels, _library_row, _use_counts
from monitors.services import create_monitor

pytestmark = pytest.mark.django_db

# The row as checks/check_library.html drew it before the rows moved to Python.
TEMPLATE_ROW = """
    <tr class="check-row" data-check="{{ c.name }}">
      <td><a href="{{ c.get_absolute_url }}"><strong>{{ c.name|trunc }}</strong></a>{% if c.archived_at %} <span class="tag warn">archived</span>{% endif %}</td>
      <td><a href="{% url 'checks:check-list' c.agent_id %}">{{ c.agent.name|trunc }}</a></td>
      <td class="small">{{ c.kind_label }}</td>
      <td>v{{ c.version }}</td>
      <td class="small">{% if c.test_count %}{{ c.test_count }} test{{ c.test_count|pluralize }}{% endif %}{% if c.test_count and c.monitor_count %} · {% endif %}{% if c.monitor_count %}{{ c.monitor_count }} dashboard{{ c.monitor_count|pluralize }}{% endif %}{% if not c.test_count and not c.monitor_count %}<span class="muted">unused</span>{% endif %}</td>
      <td class="small muted">{{ c.updated_at|date:"Y-m-d H:i" }}</td>
    </tr>
  """  # noqa: E501


def test_rows_are_what_the_template_drew(agent, member, admin_user, test_set):
    unused = create_check(
        agent=agent, by=member, name='<b>"Tom & Jerry"</b>', kind="text_includes", config={"text": "x"}
    )
    once = create_check(agent=agent, by=member, name="Once", kind="text_includes", config={"text": "y"})
    twice = create_check(agent=agent, by=member, name="Twice", kind="latency", config={"max_ms": 5})
    create_test(test_set=test_set, by=member, name="T1", scenarios=["a"], checks=[{"check": once.pk}])
    for name in ("T2", "T3"):
        create_test(test_set=test_set, by=member, name=name, scenarios=["a"], checks=[{"check": twice.pk}])
    create_monitor(agent=agent, by=member, name="M1", checks=[once.pk])
    archive_check(check=unused, by=admin_user)
    labels = _kind_labels()
    template = engines["django"].from_string(TEMPLATE_ROW)
    rows = Check.objects.filter(agent=agent).select_related("agent").annotate(**_use_counts())
    assert len(rows) == 3
    tuples = {
        c[0]: c
        for c in Check.objects.filter(agent=agent).annotate(**_use_counts()).values_list(*LIBRARY_ROW_COLUMNS)
    }
    for check in rows:
        check.kind_label = labels.get(check.kind, check.kind)
        assert _library_row(tuples[check.pk], check.kind_label, LibraryUrls()) == template.render(
            {"c": check}
        )
