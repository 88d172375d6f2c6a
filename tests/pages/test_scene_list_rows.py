"""An agent's scenes list draws its rows in Python (worlds.views._scene_row): each row is the HTML the
template's row drew, with and without a description, and with descriptions that need escaping."""

from __future__ import annotations

import pytest
from django.template import engines

from tests.support.scenes import crm_lookup, support_question
from worlds.models import Scene
from worlds.services import create_scene
from worlds.views import _scene_row, summary_of

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
    for scene in scenes:
        scene.summary = summary_of(scene.current_version)
        assert _scene_row(scene) == template.render({"s": scene})
    assert sum("muted small" in _scene_row(scene) for scene in scenes) == 2  # two have a description
