"""An agent's Checks tab draws its rows in Python (checks.views._check_row) from tuples, not model
instances: each row is the HTML the template's row drew from the checks and their versions, for used,
unused and archived checks, with and without the Restore button, names and configurations that need
escaping and a missing current version; and the page shows them."""

from __future__ import annotations

import re

import pytest
from django.template import engines
from django.test import RequestFactory
from django.urls import reverse

from checks.models import Check
from checks.services import archive_check, create_check, create_test
from checks.views import CHECK_ROW_COLUMNS, ChecksUrls, _check_row, _restore_form, _use_counts, config_summary
from monitors.services import create_monitor

pytestmark = pytest.mark.django_db

TOKEN = re.compile(r'name="csrfmiddlewaretoken" value="[A-Za-z0-9]{64}"')  # masked anew on every use

# The row as checks/check_list.html drew it before the rows moved to Python.
TEMPLATE_ROW = """{% for c in checks %}
        <tr class="check-row" data-check="{{ c.name }}">
          <td><a href="{{ c.get_absolute_url }}"><strong>{{ c.name|trunc }}</strong></a></td>
          <td>v{{ c.version }}</td>
          <td class="small"><code>{{ c.summary }}</code></td>
          <td class="small">{% if c.test_count %}{{ c.test_count }} test{{ c.test_count|pluralize }}{% endif %}{% if c.test_count and c.monitor_count %} · {% endif %}{% if c.monitor_count %}{{ c.monitor_count }} dashboard{{ c.monitor_count|pluralize }}{% endif %}{% if not c.test_count and not c.monitor_count %}<span class="muted">unused</span>{% endif %}</td>
          <td class="small muted">{% if c.archived_at %}archived {{ c.archived_at|date:"Y-m-d H:i" }}{% if can_admin %}
            <form method="post" action="{% url 'checks:check-archive' c.pk %}">{% csrf_token %}<input type="hidden" name="restore" value="1"><button type="submit" class="small">Restore</button></form>{% endif %}
            {% else %}{{ c.updated_at|date:"Y-m-d H:i" }}{% endif %}</td>
        </tr>
      {% endfor %}"""  # noqa: E501


def test_rows_are_what_the_template_drew(agent, member, admin_user, test_set):
    odd = create_check(
        agent=agent,
        by=member,
        name='<b>"Tom & Jerry"</b>',
        kind="text_includes",
        config={"text": "<x> & 'y'"},
    )
    once = create_check(agent=agent, by=member, name="Once", kind="text_includes", config={"text": "y" * 300})
    twice = create_check(agent=agent, by=member, name="Twice", kind="latency", config={"max_ms": 5})
    both = create_check(agent=agent, by=member, name="Both", kind="latency", config={"max_ms": 7})
    create_test(test_set=test_set, by=member, name="T1", scenarios=["a"], checks=[{"check": once.pk}])
    for name in ("T2", "T3"):
        create_test(
            test_set=test_set,
            by=member,
            name=name,
            scenarios=["a"],
            checks=[{"check": twice.pk}, {"check": both.pk}],
        )
    create_monitor(agent=agent, by=member, name="M1", checks=[once.pk, both.pk])
    create_monitor(agent=agent, by=member, name="M2", checks=[both.pk])
    archive_check(check=odd, by=admin_user)
    unused = create_check(agent=agent, by=member, name="Unused", kind="latency", config={"max_ms": 9})
    Check.objects.filter(pk=unused.pk).update(current_version=None)  # a missing version: an empty summary
    checks = list(
        Check.objects.filter(agent=agent)
        .select_related("current_version")
        .annotate(**_use_counts())
        .order_by("pk")
    )
    assert len(checks) == 5
    rows = list(
        Check.objects.filter(agent=agent)
        .annotate(**_use_counts())
        .order_by("pk")
        .values_list(*CHECK_ROW_COLUMNS)
    )
    for check in checks:
        check.summary = config_summary(check.current_version.config if check.current_version else {})
    template = engines["django"].from_string(TEMPLATE_ROW)
    request = RequestFactory().get("/")
    for can_admin in (False, True):
        expected = template.render({"checks": checks, "can_admin": can_admin}, request)
        restore_form = _restore_form(request) if can_admin else None
        drawn = "".join(_check_row(c, restore_form=restore_form, urls=ChecksUrls()) for c in rows)
        assert TOKEN.sub("-", drawn) == TOKEN.sub("-", expected)
        assert len(TOKEN.findall(drawn)) == len(TOKEN.findall(expected)) == (1 if can_admin else 0)
        assert ("Restore" in drawn) is can_admin


def test_the_page_shows_the_rows_and_the_restore_button_to_admins(login, agent, member, admin_user):
    kept = create_check(
        agent=agent, by=member, name="Kept & used", kind="text_includes", config={"text": "x"}
    )
    gone = create_check(agent=agent, by=member, name="Gone <old>", kind="text_includes", config={"text": "y"})
    archive_check(check=gone, by=admin_user)
    url = reverse("checks:check-list", args=[agent.pk])
    html = login(member).get(url).content.decode()
    assert 'data-check="Kept &amp; used"' in html and kept.get_absolute_url() in html
    archived = login(admin_user).get(f"{url}?archived=1").content.decode()
    assert 'data-check="Gone &lt;old&gt;"' in archived
    assert f'action="{reverse("checks:check-archive", args=[gone.pk])}"' in archived
    assert 'name="csrfmiddlewaretoken"' in archived and ">Restore</button>" in archived
    as_member = login(member).get(f"{url}?archived=1").content.decode()
    assert 'data-check="Gone &lt;old&gt;"' in as_member and ">Restore</button>" not in as_member


def test_the_rows_are_grouped_by_kind_as_the_template_s_regroup_did(login, agent, member):
    for name, kind, config in [
        ("b latency", "latency", {"max_ms": 5}),
        ("a text", "text_includes", {"text": "x"}),
        ("c latency", "latency", {"max_ms": 6}),
    ]:
        create_check(agent=agent, by=member, name=name, kind=kind, config=config)
    html = login(member).get(reverse("checks:check-list", args=[agent.pk])).content.decode()
    assert html.count('class="kindgroup"') == 2
    sections = html.split('<section class="kindgroup"')[1:]
    assert 'Latency <span class="muted small">2</span>' in sections[0]
    assert "b latency" in sections[0] and "c latency" in sections[0] and "a text" in sections[1]
    assert '<span class="muted small">1</span>' in sections[1]
