"""A test set's page draws its tests' rows in Python (checks.views._set_test_row): each row is the HTML
the template's row drew, for tests never run, run and still queued, and names that need escaping, with
and without the Run button."""

from __future__ import annotations

import pytest
from django.template import engines
from django.urls import reverse

from checks.models import Test, TestCheck
from checks.services import create_check, create_test
from checks.views import SET_TEST_COLUMNS, _last_run, _set_test_row, set_urls
from core.views import count_related, count_subquery
from runs.models import Run
from runs.services import launch_run

pytestmark = pytest.mark.django_db

# The row as checks/testset_detail.html drew it before the rows moved to Python.
TEMPLATE_ROW = """
    <tr>
      <td><a href="{{ t.get_absolute_url }}"><strong>{{ t.name|trunc }}</strong></a></td>
      <td>v{{ t.version }}</td>
      <td class="num">{{ t.current_version.scenarios|length }}</td>
      <td class="num">{{ t.current_version.total_samples }}</td>
      <td class="num">{{ t.check_count|default:0 }}</td>
      <td class="small">≥ {{ t.current_version.required_pass_rate }} % of ≥ {{ t.current_version.min_valid_per_scenario }} valid</td>
      <td class="num">{{ t.run_count|default:0 }}</td>
      <td>{% if t.last_run_id %}<a href="{% url 'runs:run-detail' t.last_run_id %}"><span class="badge {{ t.last_run_result|default:t.last_run_status }}">{{ t.last_run_result|default:t.last_run_status }}</span></a>{% else %}<span class="muted">never</span>{% endif %}</td>
      <td>{% if can_edit and not test_set.archived_at %}<a class="button small" href="{% url 'runs:run-launch' %}?test={{ t.pk }}">Run</a>{% endif %}</td>
    </tr>
  """  # noqa: E501


def test_rows_are_what_the_template_drew(agent, member, test_set):
    check = create_check(agent=agent, by=member, name="C", kind="text_includes", config={"text": "x"})
    never = create_test(test_set=test_set, by=member, name="<b>Never & run</b>", scenarios=["a", "b"])
    ran = create_test(
        test_set=test_set,
        by=member,
        name="Ran",
        scenarios=["a"],
        checks=[{"check": check.pk}],
        samples_per_scenario=3,
        required_pass_rate=60,
    )
    launch_run(test=ran, by=member)
    Run.objects.filter(test=ran).update(status="completed", result="fail")
    launch_run(test=never, by=member)  # queued: no result yet
    template = engines["django"].from_string(TEMPLATE_ROW)
    tests = (
        Test.objects.filter(test_set=test_set)
        .select_related("current_version")
        .annotate(
            check_count=count_subquery(TestCheck, "test_version", outer="current_version"),
            run_count=count_related(Test, "runs"),
            **_last_run(),
        )
    )
    launch = reverse("runs:run-launch")
    rows = dict((t[0], t) for t in tests.values_list(*SET_TEST_COLUMNS))
    assert len(rows) == 2
    for test in tests:
        for can_edit in (True, False):
            context = {"t": test, "can_edit": can_edit, "test_set": test_set}
            drawn = _set_test_row(rows[test.pk], launch if can_edit else "", set_urls())
            assert drawn == template.render(context)
