"""The agent list draws its rows in Python (agents.views._agent_row) from tuples, not model instances:
each row is the HTML the template's row drew from the agents, for agents never run, run (with and
without a result), archived (with and without the Restore button), workforce agents, long descriptions
and endpoints, names that need escaping; and the page shows them."""

from __future__ import annotations

import re

import pytest
from django.template import engines
from django.test import RequestFactory
from django.urls import reverse

from agents.models import Agent
from agents.services import archive_agent, create_agent
from agents.views import AGENT_ROW_COLUMNS, AgentUrls, _agent_row
from core.views import count_related, newest_related
from runs.models import Run
from runs.services import launch_run

pytestmark = pytest.mark.django_db

TOKEN = re.compile(r'name="csrfmiddlewaretoken" value="[A-Za-z0-9]{64}"')  # masked anew on every use

# The row as agents/agent_list.html drew it before the rows moved to Python.
TEMPLATE_ROW = """{% for a in agents %}
    <tr>
      <td><a href="{% url 'agents:agent-detail' a.pk %}"><strong>{{ a.name|trunc }}</strong></a>{% if a.kind == 'workforce' %} <span class="tag">workforce</span>{% endif %}{% if a.archived_at %} <span class="tag warn">archived</span>{% endif %}
        {% if a.archived_at and can_admin %}<form method="post" action="{% url 'agents:agent-archive' a.pk %}" class="inline-form">{% csrf_token %}<input type="hidden" name="restore" value="1"><button type="submit" class="small">Restore</button></form>{% endif %}
        {% if a.description %}<div class="muted small">{{ a.description|truncatechars:90 }}</div>{% endif %}</td>
      <td>{{ a.protocol }}</td>
      <td><code>{{ a.shown_endpoint_url|truncatechars:48 }}</code></td>
      <td class="num"><a href="{% url 'checks:check-list' a.pk %}">{{ a.check_count|default:0 }}</a></td>
      <td class="num">{{ a.test_set_count|default:0 }}</td>
      <td>{% if a.last_run_id %}<a href="{% url 'runs:run-detail' a.last_run_id %}">{% if a.last_run_result %}<span class="badge {{ a.last_run_result }}">{{ a.last_run_result }}</span>{% else %}<span class="badge {{ a.last_run_status }}">{{ a.last_run_status }}</span>{% endif %}</a> <span class="muted small">{{ a.last_run_at|timesince }} ago</span>{% else %}<span class="muted">never</span>{% endif %}</td>
    </tr>
  {% endfor %}"""  # noqa: E501


def test_rows_are_what_the_template_drew(team, admin_user, member, agent, test_set):
    from checks.services import create_test

    odd = create_agent(
        team=team,
        by=admin_user,
        name='<b>"Bots & co"</b> ' + "n" * 70,
        endpoint_url="http://127.0.0.1:9/" + "p" * 80,
        description="<i>Says</i> & does " + "d" * 120,
    )
    create_agent(team=team, by=admin_user, name="Crew", endpoint_url="http://127.0.0.1:9/", kind="workforce")
    gone = create_agent(team=team, by=admin_user, name="Gone", endpoint_url="http://127.0.0.1:9/")
    archive_agent(agent=gone, by=admin_user)
    test = create_test(test_set=test_set, by=member, name="T", scenarios=["a"])
    launch_run(test=test, by=member)  # the fixture agent: a run still queued (a status, no result)
    annotated = (
        Agent.objects.filter(team=team)
        .annotate(
            check_count=count_related(Agent, "checks", archived_at__isnull=True),
            test_set_count=count_related(Agent, "test_sets", archived_at__isnull=True),
            **newest_related(
                Agent,
                "runs",
                last_run_id="pk",
                last_run_result="result",
                last_run_status="status",
                last_run_at="created_at",
            ),
        )
        .order_by("pk")
    )
    agents = list(annotated)
    assert len(agents) == 4 and odd.pk
    template = engines["django"].from_string(TEMPLATE_ROW)
    request = RequestFactory().get("/")
    for finished in (False, True):
        if finished:
            Run.objects.filter(agent=agent).update(status="completed", result="pass")
            for a in agents:
                if a.pk == agent.pk:
                    a.last_run_status, a.last_run_result = "completed", "pass"
        for can_admin in (False, True):
            expected = template.render({"agents": agents, "can_admin": can_admin}, request)
            csrf = _csrf(request) if can_admin else None
            rows = annotated.values_list(*AGENT_ROW_COLUMNS)
            drawn = "".join(_agent_row(a, csrf=csrf, urls=AgentUrls()) for a in rows)
            assert TOKEN.sub("-", drawn) == TOKEN.sub("-", expected)
            assert ("Restore" in drawn) is can_admin


def _csrf(request) -> str:
    from django.template.backends.utils import csrf_input

    return str(csrf_input(request))


def test_the_page_shows_the_rows(login, team, admin_user, member, agent):
    gone = create_agent(team=team, by=admin_user, name="Gone & old", endpoint_url="http://127.0.0.1:9/")
    archive_agent(agent=gone, by=admin_user)
    html = login(member).get(reverse("agents:agent-list")).content.decode()
    assert agent.get_absolute_url() in html and "never" in html and "Gone &amp; old" not in html
    archived = login(admin_user).get(reverse("agents:agent-list") + "?archived=1").content.decode()
    assert "Gone &amp; old" in archived and ">Restore</button>" in archived
    assert 'name="csrfmiddlewaretoken"' in archived
    as_member = login(member).get(reverse("agents:agent-list") + "?archived=1").content.decode()
    assert "Gone &amp; old" in as_member and ">Restore</button>" not in as_member
