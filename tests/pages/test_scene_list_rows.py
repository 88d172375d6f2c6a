"""An agent's scenes list draws its rows in Python (worlds.views._scene_row) from tuples, not model
instances: each row is the HTML the template's row drew, with and without a description, with
descriptions that need escaping, and for a scene without a current version."""

from __future__ import annotations

import pytest
from django.template import engines

from core.urls import pk_url_former
from tests.support.scenes import crm_lookup, support_question
from worlds.models import Scene
from worlds.services import create_scene
from worlds.views import SCENE_ROW_COLUMNS, _scene_row, summary_of

pytestmark = pytest.mark.django_db

# The row as worlds/scene_list.html drew it before the rows moved to Python.
TEMPLATE_ROW = """
    <tr class="scene-row" data-scene="{{ s.name }}">
      <td><a href="{{ s.get_absolute_url }}"><strong>{{ s.name|trunc }}</strong></a>{% if s.summary.description %}<div class="muted small">{{ s.summary.description|trunc }}</div>{% endif %}</td>
      <td>v{{ s.version }}</td>
      <td class="small">{% for t in s.summary.tools %}<span class="tag">{{ t }}</span> {% endfor %}</td>
      <td class="small">{{ s.summary.checks|length }}</td>
      <td class="small muted">{{ s.updated_at|date:"Y-m-d H:i" }}</td>
    </tr>
  """  # noqa: E501


def test_rows_are_what_the_template_drew(agent, member):
    create_scene(agent=agent, by=member, source=support_question(scene="plain"))
    told = support_question(scene="told", description='"<b>Tom & Jerry</b>"')
    create_scene(agent=agent, by=member, source=told)
    create_scene(agent=agent, by=member, source=crm_lookup(description="Looks up a customer"))
    template = engines["django"].from_string(TEMPLATE_ROW)
    scenes = Scene.objects.filter(agent=agent).select_related("current_version")
    assert len(scenes) == 3
    rows = {s[0]: s for s in Scene.objects.filter(agent=agent).values_list(*SCENE_ROW_COLUMNS)}
    url = pk_url_former("worlds:scene-detail")
    drawn = []
    for scene in scenes:
        scene.summary = summary_of(scene.current_version)
        drawn.append(_scene_row(rows[scene.pk], url))
        assert drawn[-1] == template.render({"s": scene})
    assert sum("muted small" in row for row in drawn) == 2  # two have a description


def test_a_scene_without_a_version_shows_no_tools_or_checks(agent, member):
    scene = create_scene(agent=agent, by=member, source=support_question(scene="plain"))
    Scene.objects.filter(pk=scene.pk).update(current_version=None)
    template = engines["django"].from_string(TEMPLATE_ROW)
    scene = Scene.objects.select_related("current_version").get(pk=scene.pk)
    scene.summary = summary_of(None)
    (row,) = Scene.objects.filter(pk=scene.pk).values_list(*SCENE_ROW_COLUMNS)
    assert _scene_row(row, pk_url_former("worlds:scene-detail")) == template.render({"s": scene})
