"""The monitors list draws its rows in Python (monitors.views._monitor_row) from tuples, not model
instances: each row is the HTML the template's row drew from the monitors, for active and paused
monitors, whole and fractional sample rates, one check or several, and names that need escaping; the
page's checks read in one query of pairs (_list_checks) draw the same rows as a prefetch of the checks,
and the agent picker's options are the template's."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db.models import Prefetch
from django.template import engines

from agents.models import Agent
from agents.services import create_agent
from checks.models import Check
from checks.services import create_check
from monitors.models import Monitor
from monitors.services import create_monitor
from monitors.views import MONITOR_ROW_COLUMNS, MonitorUrls, _agent_options, _list_checks, _monitor_row

pytestmark = pytest.mark.django_db

# The row as monitors/monitor_list.html drew it before the rows moved to Python.
TEMPLATE_ROW = """
  <tr>
    <td><a href="{{ m.get_absolute_url }}">{{ m.name|trunc }}</a></td>
    <td><a href="{{ m.agent.get_absolute_url }}">{{ m.agent.name|trunc }}</a></td>
    <td class="num">{{ m.sample_rate|floatformat:"-2" }} %</td>
    <td class="small">{% for c in m.checks.all %}{{ c.name|trunc }} <span class="tag">v{{ c.version }}</span>{% if not forloop.last %}, {% endif %}{% empty %}<span class="muted">none</span>{% endfor %}</td>
    <td>{% if m.active %}<span class="badge running">Active</span>{% else %}<span class="badge idle">Paused</span>{% endif %}</td>
  </tr>
  """  # noqa: E501


def test_rows_are_what_the_template_drew(agent, member):
    one = create_check(
        agent=agent, by=member, name="<i>Tom & Jerry</i>", kind="text_includes", config={"text": "x"}
    )
    two = create_check(agent=agent, by=member, name="Two", kind="text_includes", config={"text": "y"})
    create_monitor(agent=agent, by=member, name="<b>All</b>", checks=[one.pk, two.pk], sample_rate=100)
    create_monitor(agent=agent, by=member, name="Some", checks=[two.pk], sample_rate="12.5", active=False)
    third = create_monitor(agent=agent, by=member, name="Empty", checks=[one.pk], sample_rate="0.25")
    Monitor.checks.through.objects.filter(monitor=third).delete()
    template = engines["django"].from_string(TEMPLATE_ROW)
    monitors = (
        Monitor.objects.filter(agent=agent)
        .select_related("agent")
        .prefetch_related(Prefetch("checks", queryset=Check.objects.order_by("name", "id")))
    )
    assert {m.sample_rate for m in monitors} == {Decimal("100"), Decimal("12.5"), Decimal("0.25")}
    rows = {m[0]: m for m in Monitor.objects.filter(agent=agent).values_list(*MONITOR_ROW_COLUMNS)}
    checks = _list_checks(list(rows))
    rates = {}
    for monitor in monitors:
        drawn = _monitor_row(rows[monitor.pk], checks[monitor.pk], MonitorUrls(), rates)
        assert drawn == template.render({"m": monitor})
    assert len(rates) == 3


def test_the_checks_read_as_pairs_draw_the_same_rows(agent, member, django_assert_num_queries):
    one = create_check(agent=agent, by=member, name="b <one>", kind="text_includes", config={"text": "x"})
    two = create_check(agent=agent, by=member, name="a & two", kind="text_includes", config={"text": "y"})
    create_monitor(agent=agent, by=member, name="Both", checks=[one.pk, two.pk])
    create_monitor(agent=agent, by=member, name="One", checks=[one.pk])
    empty = create_monitor(agent=agent, by=member, name="Empty", checks=[two.pk])
    Monitor.checks.through.objects.filter(monitor=empty).delete()
    prefetched = Monitor.objects.filter(agent=agent).select_related("agent").order_by("pk")
    by_name = Check.objects.order_by("name", "id")
    prefetched = prefetched.prefetch_related(Prefetch("checks", queryset=by_name))
    template = engines["django"].from_string(TEMPLATE_ROW)
    expected = [template.render({"m": m}) for m in prefetched]
    paired = list(Monitor.objects.filter(agent=agent).order_by("pk").values_list(*MONITOR_ROW_COLUMNS))
    listed = _list_checks([m[0] for m in paired])
    assert [listed[m[0]] for m in paired] == [[("a & two", 1), ("b <one>", 1)], [("b <one>", 1)], []]
    assert [_monitor_row(m, listed[m[0]], MonitorUrls(), {}) for m in paired] == expected
    with django_assert_num_queries(0):
        assert _list_checks([]) == {}  # an empty page: no query


OPTIONS = """{% for a in agents %}<option value="{{ a.pk }}"{% if agent_id == a.pk|stringformat:"d" %} selected{% endif %}>{{ a.name }}</option>{% endfor %}"""  # noqa: E501


def test_the_agent_options_are_what_the_template_drew(team, admin_user, agent):
    create_agent(team=team, by=admin_user, name='<b>"Odd" & co</b>', endpoint_url="http://127.0.0.1:9/")
    agents = list(Agent.objects.filter(team=team).order_by("name", "pk"))
    template = engines["django"].from_string(OPTIONS)
    pairs = [(a.pk, a.name) for a in agents]
    for chosen in ["", str(agent.pk), "999999", f"{agent.pk}0"]:
        assert _agent_options(pairs, chosen) == template.render({"agents": agents, "agent_id": chosen})
