"""Scenes in the library (versions, every problem on its line, nothing saved on error) and worlds stored
in the database, served at /worlds/<id>/<tool>/... by the console over real HTTP."""

import httpx
import pytest

from core.crypto import decrypt_json
from core.errors import PermissionDenied
from tests import factories
from tests.support.scenes import crm_lookup
from worlds import services
from worlds.engine.http import Request
from worlds.models import Scene, SceneVersion, World

pytestmark = pytest.mark.django_db

CRM = crm_lookup(answers=True)

BROKEN = """\
scene: broken
task: t
clock: { per_call: 2 parsecs }
world:
  tools: { crm: {} }
checks:
  - id: a
    trace: { called: "GET /x" }
    colour: blue
  - id: a
    trace: { called: "GET /y" }
pass: [nope]
"""


@pytest.fixture
def team():
    return factories.team()


@pytest.fixture
def admin(team):
    return factories.member_of(team, "admin")


@pytest.fixture
def agent(team, admin):
    return factories.agent(team, admin)


def test_a_scene_is_saved_as_version_1_and_an_edit_makes_version_2(agent, admin):
    scene = services.create_scene(agent=agent, by=admin, source=CRM)
    assert (scene.name, scene.version, scene.current_version.number) == ("crm-lookup", 1, 1)
    same = services.edit_scene(scene=scene, by=admin, source=CRM)
    assert same.version == 1, "an identical text makes no version"
    edited = services.edit_scene(scene=scene, by=admin, source=CRM.replace("crm-lookup", "crm-lookup-2"))
    assert (edited.name, edited.version) == ("crm-lookup-2", 2)
    assert list(SceneVersion.objects.filter(parent=scene).values_list("number", flat=True)) == [2, 1]


def test_a_broken_scene_lists_every_problem_on_its_line_and_saves_nothing(agent, admin):
    with pytest.raises(services.SceneRejected) as caught:
        services.create_scene(agent=agent, by=admin, source=BROKEN)
    problems = caught.value.problems
    assert any(p.startswith("scene.yaml:3: clock.per_call:") for p in problems), problems
    assert any(p.startswith("scene.yaml:9: checks[0].colour:") for p in problems), problems
    assert any(p.startswith("scene.yaml:10: checks[1].id:") for p in problems), problems
    assert any("pass" in p and "nope" in p for p in problems), problems
    assert caught.value.errors == {"source": problems}
    assert not Scene.objects.exists() and not SceneVersion.objects.exists()


def test_a_scene_given_as_an_object_is_stored_as_json(agent, admin):
    scene = services.create_scene(
        agent=agent,
        by=admin,
        source={"scene": "as-object", "task": "t", "checks": [{"id": "c", "trace": {"called": "*"}}]},
    )
    assert scene.current_version.filename == "scene.json"
    assert scene.current_version.source.startswith("{")


def test_a_viewer_cannot_add_a_scene(team, agent):
    viewer = factories.member_of(team, "viewer")
    with pytest.raises(PermissionDenied):
        services.create_scene(agent=agent, by=viewer, source=CRM)


@pytest.fixture
def stored_world(agent, admin):
    scene = services.create_scene(agent=agent, by=admin, source=CRM)
    row, world = services.start_world(version=scene.current_version)
    return row, world


def test_a_stored_world_keeps_its_credentials_encrypted_and_out_of_its_state(stored_world, settings):
    row, world = stored_world
    row.refresh_from_db()
    assert "credentials" not in row.state
    assert decrypt_json(row.secrets) == world.credentials


def test_the_console_serves_a_stored_world_and_traces_each_call(stored_world, live_server):
    row, _ = stored_world
    base = f"{live_server.url}/worlds/{row.id}/crm/"
    with httpx.Client() as client:
        first = client.get(base + "crm/customers/7", params={"x": "1"})
        second = client.post(base + "crm/notes", json={"note": "hello"})
    assert (first.status_code, first.json()) == (200, {"plan": "pro"})
    assert second.status_code == 200
    world = services.load_world(row.id)
    assert [(e.seq, e.method, e.path, e.status) for e in world.trace] == [
        (1, "GET", "/crm/customers/7", 200),
        (2, "POST", "/crm/notes", 200),
    ]
    assert world.trace.entries[1].request == {"note": "hello"}
    row.refresh_from_db()
    assert row.calls == 2


def test_unknown_ids_tools_and_ended_worlds(stored_world, live_server):
    row, _ = stored_world
    with httpx.Client(base_url=live_server.url) as client:
        assert client.get("/worlds/guessed-id/crm/x").status_code == 404
        assert client.get(f"/worlds/{row.id}/slack/api/auth.test").status_code == 404
        big = client.post(f"/worlds/{row.id}/crm/upload", content=b"x" * (2 * 1024 * 1024))
        assert big.status_code == 413
        services.end_world(row.id)
        gone = client.get(f"/worlds/{row.id}/crm/crm/customers/1")
    assert gone.status_code == 410
    world = services.load_world(row.id)
    assert [e.status for e in world.trace] == [413], "the big body was the agent's call; after the end none"
    row.refresh_from_db()
    assert (row.end_reason, row.ended_at is not None) == ("reply", True)


def test_one_world_is_never_changed_by_calls_to_another(agent, admin, live_server):
    scene = services.create_scene(agent=agent, by=admin, source=CRM)
    one, _ = services.start_world(version=scene.current_version)
    two, _ = services.start_world(version=scene.current_version)
    assert one.id != two.id
    httpx.get(f"{live_server.url}/worlds/{one.id}/crm/crm/customers/1")
    assert len(services.load_world(one.id).trace) == 1
    assert len(services.load_world(two.id).trace) == 0
    assert World.objects.count() == 2


def test_the_admin_shows_a_worlds_trace_read_only(stored_world, client):
    from django.contrib.auth import get_user_model

    row, _ = stored_world
    services.call_world(row.id, "crm", Request.make("GET", "/crm/customers/9"))
    root = get_user_model().objects.create_superuser("root", "root@example.com", "pw")
    client.force_login(root)
    page = client.get(f"/admin/worlds/world/{row.id}/change/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "/crm/customers/9" in html
    assert 'name="calls"' not in html, "read-only: no inputs"
    assert client.get("/admin/worlds/world/").status_code == 200
