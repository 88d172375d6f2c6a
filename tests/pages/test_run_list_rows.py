"""The runs list draws its rows in Python (runs.views._run_row) from tuples, not model instances: each row
is the HTML the template's row drew from the run's instances, for queued and finished runs, with and
without a launcher, and names that need escaping."""

from __future__ import annotations

import pytest
from django.template import engines

from checks.services import create_test
from runs.consistency import summary_figures
from runs.models import Run
from runs.services import launch_run
from runs.views import RUN_ROW_COLUMNS, RunUrls, _run_row, consistency_text

pytestmark = pytest.mark.django_db

# The row as runs/run_list.html drew it before the rows moved to Python.
TEMPLATE_ROW = """
    <tr data-run="{{ r.pk }}">
      <td><a href="{{ r.get_absolute_url }}"><strong>#{{ r.pk }}</strong></a></td>
      <td><a href="{{ r.agent.get_absolute_url }}">{{ r.agent.name|trunc }}</a></td>
      <td><a href="{{ r.test.get_absolute_url }}">{{ r.test.name|trunc }}</a> <span class="muted small">v{{ r.test_version.number }}</span></td>
      <td><span class="badge {{ r.status }}">{{ r.status }}</span></td>
      <td>{% if r.result %}<span class="badge {{ r.result }}">{{ r.result }}</span>{% else %}<span class="muted">—</span>{% endif %}</td>
      <td class="num">{{ r.done_samples }} / {{ r.total_samples }}</td>
      <td class="small consistency">{{ r.consistency }}</td>
      <td class="small">{{ r.created_at|date:"Y-m-d H:i" }}{% if r.launched_by %} · {{ r.launched_by }}{% endif %}</td>
    </tr>
  """  # noqa: E501


def test_rows_are_what_the_template_drew(member, test_set):
    test = create_test(test_set=test_set, by=member, name="<b>Orders & more</b>", scenarios=["a", "b"])
    queued, done, orphan = (launch_run(test=test, by=member) for _ in range(3))
    Run.objects.filter(pk=done.pk).update(status="completed", result="pass", done_samples=2)
    Run.objects.filter(pk=orphan.pk).update(launched_by=None, status="cancelled")
    template = engines["django"].from_string(TEMPLATE_ROW)
    runs = Run.objects.filter(test=test).select_related("agent", "test", "test_version", "launched_by")
    assert len(runs) == 3
    rows = dict((r[0], r) for r in Run.objects.filter(test=test).values_list(*RUN_ROW_COLUMNS))
    for run in runs:
        run.consistency = consistency_text(summary_figures(run.summary, 2).run)
        assert _run_row(rows[run.pk], RunUrls()) == template.render({"r": run})
