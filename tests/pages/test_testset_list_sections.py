"""The Tests page draws each test set's card and its tests in Python (checks.views._set_section): each
card is the HTML the template drew, for sets with and without tests and description, tests never run,
queued and finished, names that need escaping and truncating, with and without the agent link and the
editing buttons; and the page shows them."""

from __future__ import annotations

import pytest
from django.db.models import Prefetch
from django.template import engines
from django.urls import reverse

from agents.services import create_agent
from checks.models import Test, TestSet
from checks.services import create_test, create_test_set
from checks.views import SET_SECTION_COLUMNS, _last_run, _set_sections
from runs.models import Run
from runs.services import launch_run

pytestmark = pytest.mark.django_db

# The card as checks/testset_list.html drew it before the cards moved to Python.
TEMPLATE_CARD = """{% for ts in test_sets %}
<section class="card" aria-labelledby="ts-{{ ts.pk }}">
  <div class="pagehead">
    <div>
      <h2 id="ts-{{ ts.pk }}" style="margin:0"><a href="{{ ts.get_absolute_url }}">{{ ts.name|trunc }}</a></h2>
      <p class="muted small">{% if not agent %}<a href="{% url 'agents:agent-detail' ts.agent_id %}">{{ ts.agent.name|trunc }}</a> · {% endif %}{{ ts.tests.all|length }} test{{ ts.tests.all|length|pluralize }}{% if ts.description %} · {{ ts.description|truncatechars:100 }}{% endif %}</p>
    </div>
    <div class="actions">
      {% if can_edit %}<a class="button small" href="{% url 'checks:test-create' ts.pk %}">New test</a>{% if ts.tests.all %} <a class="button small" href="{% url 'runs:run-launch' %}?test_set={{ ts.pk }}">Run all</a>{% endif %}{% endif %}
    </div>
  </div>
  {% if ts.tests.all %}
  <table class="list">
    <thead><tr><th scope="col">Test</th><th scope="col">Version</th><th scope="col" class="num">Scenarios</th><th scope="col" class="num">Samples each</th><th scope="col">Last run</th></tr></thead>
    <tbody>
    {% for t in ts.tests.all %}
      <tr><td><a href="{{ t.get_absolute_url }}">{{ t.name|trunc }}</a></td><td>v{{ t.version }}</td>
        <td class="num">{{ t.current_version.scenarios|length }}</td><td class="num">{{ t.current_version.samples_per_scenario }}</td>
        <td>{% if t.last_run_id %}<a href="{% url 'runs:run-detail' t.last_run_id %}"><span class="badge {{ t.last_run_result|default:t.last_run_status }}">{{ t.last_run_result|default:t.last_run_status }}</span></a>{% else %}<span class="muted">never run</span>{% endif %}</td></tr>
    {% endfor %}
    </tbody>
  </table>
  {% endif %}
</section>
{% endfor %}"""  # noqa: E501


# The "New test set for" picker's options as the template drew them.
PICKER = """{% for a in agents %}<option value="{{ a.pk }}">{{ a.name }}</option>{% endfor %}"""


def test_cards_are_what_the_template_drew(agent, member):
    odd = create_test_set(agent=agent, by=member, name='<b>"Sets & co"</b> ' + "x" * 80)
    odd.description = "<i>long</i> & " + "d" * 200
    odd.save(update_fields=["description"])
    create_test_set(agent=agent, by=member, name="Empty")
    never = create_test(test_set=odd, by=member, name="<b>Never & run</b>", scenarios=["a", "b"])
    ran = create_test(test_set=odd, by=member, name="Ran", scenarios=["a"], samples_per_scenario=3)
    queued = create_test(test_set=odd, by=member, name="Queued", scenarios=["a", "b", "c"])
    launch_run(test=ran, by=member)
    Run.objects.filter(test=ran).update(status="completed", result="fail")
    launch_run(test=queued, by=member)  # queued: no result yet
    assert never.pk
    active = (
        Test.objects.filter(archived_at__isnull=True)
        .select_related("current_version")
        .annotate(**_last_run())
    )
    template = engines["django"].from_string(TEMPLATE_CARD)
    for with_agent in (False, True):
        for can_edit in (False, True):
            by_template = list(
                TestSet.objects.filter(agent=agent)
                .select_related("agent")
                .prefetch_related(Prefetch("tests", queryset=active.order_by("name", "pk")))
                .order_by("name", "pk")
            )
            expected = template.render(
                {"test_sets": by_template, "agent": None if with_agent else agent, "can_edit": can_edit}
            )
            drawn = list(
                TestSet.objects.filter(agent=agent).order_by("name", "pk").values_list(*SET_SECTION_COLUMNS)
            )
            assert len(drawn) == 2
            assert "".join(_set_sections(drawn, with_agent=with_agent, can_edit=can_edit)) == expected


def test_no_sets_ask_nothing(django_assert_num_queries):
    with django_assert_num_queries(0):
        assert _set_sections([], with_agent=True, can_edit=True) == []


def test_the_page_shows_the_sets_and_their_tests(login, team, admin_user, agent, member, viewer):
    odd = create_agent(team=team, by=admin_user, name='<b>"Odd" & co</b>', endpoint_url="http://127.0.0.1:9/")
    test_set = create_test_set(agent=agent, by=member, name="Orders & more")
    create_test(test_set=test_set, by=member, name="Known <order>", scenarios=["a"])
    html = login(member).get(reverse("checks:testset-list")).content.decode()
    assert "Orders &amp; more" in html and "Known &lt;order&gt;" in html and "1 test" in html
    assert f"?test_set={test_set.pk}" in html and agent.get_absolute_url() in html
    options = engines["django"].from_string(PICKER).render({"agents": [odd, agent]})  # by name
    assert f'<select id="new-set-agent" name="agent" style="width:auto">{options}</select>' in html
    as_viewer = login(viewer).get(reverse("checks:testset-list")).content.decode()
    assert "Known &lt;order&gt;" in as_viewer and f"?test_set={test_set.pk}" not in as_viewer
