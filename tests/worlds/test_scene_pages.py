"""Scene pages: the Scenes tab, the new/edit page with problems on their lines (as you type and on save),
uploads, versions, archive; viewers cannot write; another team's scene is a 404; bounded queries."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.support.page_fixtures import login  # noqa: F401
from tests.support.queries import assert_queries_do_not_grow
from tests.support.scenes import crm_lookup
from worlds import services
from worlds.models import Scene

pytestmark = pytest.mark.django_db

GOOD = crm_lookup(description="Find the customer's plan.")
# BAD's unknown field (shape) stands on line 9
BAD = GOOD.replace('trace: { called: "GET /crm/customers/*" }', "trace: { called: 5 }\n    shape: round")


@pytest.fixture
def agent(team, admin_user):
    from tests import factories

    return factories.agent(team, admin_user, name="Support bot")


def test_a_member_writes_a_scene_sees_its_problems_on_their_lines_fixes_it_and_saves(login, member, agent):
    client = login(member)
    page = client.get(f"/scenes/agents/{agent.pk}/new/")
    assert page.status_code == 200
    assert "scene: my-scene" in page.content.decode(), "a starter scene to edit"

    checked = client.post(f"/scenes/agents/{agent.pk}/validate/", {"source": BAD})
    html = checked.content.decode()
    assert checked.status_code == 200
    assert 'id="validation"' in html and "<html" not in html, "a fragment for HTMX"
    assert '<li data-line="9"><a href="#L9">line 9</a>' in html
    assert "checks[0].shape" in html
    assert '<li id="L9" class="bad">' in html

    refused = client.post(f"/scenes/agents/{agent.pk}/new/", {"source": BAD})
    assert refused.status_code == 400
    assert "problems in the scene" in refused.content.decode()
    assert "scene.yaml:9: checks[0].shape" in refused.content.decode()
    assert "task: Look the customer up." in refused.content.decode(), "what was typed is kept"
    assert not Scene.objects.exists()

    saved = client.post(f"/scenes/agents/{agent.pk}/new/", {"source": GOOD})
    scene = Scene.objects.get()
    assert saved.status_code == 302 and saved["Location"] == f"/scenes/{scene.pk}/"
    detail = client.get(saved["Location"]).content.decode()
    assert "Find the customer&#x27;s plan." in detail
    assert "looked_up" in detail and "crm" in detail

    edited = client.post(f"/scenes/{scene.pk}/edit/", {"source": GOOD.replace("Look", "Find")})
    assert edited.status_code == 302
    scene.refresh_from_db()
    assert scene.version == 2
    assert "v2" in client.get(f"/scenes/agents/{agent.pk}/").content.decode()


def test_a_valid_file_says_so_as_you_type(login, member, agent):
    html = login(member).post(f"/scenes/agents/{agent.pk}/validate/", {"source": GOOD}).content.decode()
    assert "The scene is valid: 1 check, tools crm." in html


def test_an_uploaded_scene_file_is_saved(login, member, agent):
    client = login(member)
    upload = SimpleUploadedFile("lookup.yaml", GOOD.encode(), content_type="text/yaml")
    answer = client.post(f"/scenes/agents/{agent.pk}/new/", {"source": "", "upload": upload})
    assert answer.status_code == 302
    assert Scene.objects.get().current_version.source == GOOD


def test_an_upload_that_is_not_text_is_an_error_on_its_field(login, member, agent):
    upload = SimpleUploadedFile("x.yaml", b"\xff\xfe\x00bad", content_type="text/yaml")
    answer = login(member).post(f"/scenes/agents/{agent.pk}/new/", {"source": "", "upload": upload})
    assert answer.status_code == 400
    assert "the file is not UTF-8 text" in answer.content.decode()


def test_an_empty_form_names_the_field(login, member, agent):
    answer = login(member).post(f"/scenes/agents/{agent.pk}/new/", {"source": "  "})
    assert answer.status_code == 400
    assert "paste a scene or upload a file" in answer.content.decode()


def test_viewers_read_but_cannot_write_and_outsiders_get_404(login, viewer, outsider, member, agent):
    scene = services.create_scene(agent=agent, by=member, source=GOOD)
    client = login(viewer)
    assert client.get(f"/scenes/{scene.pk}/").status_code == 200
    refused = client.get(f"/scenes/agents/{agent.pk}/new/")
    assert refused.status_code == 403 and "Viewers cannot add scenes." in refused.content.decode()
    refused = client.post(f"/scenes/{scene.pk}/edit/", {"source": GOOD})
    assert refused.status_code == 403 and "Viewers cannot edit scenes." in refused.content.decode()
    assert client.post(f"/scenes/{scene.pk}/archive/").status_code == 403
    other = login(outsider)
    assert other.get(f"/scenes/{scene.pk}/").status_code == 404
    assert other.get(f"/scenes/agents/{agent.pk}/").status_code == 404
    assert other.post(f"/scenes/agents/{agent.pk}/validate/", {"source": GOOD}).status_code == 404


def test_an_admin_archives_and_restores_a_scene(login, admin_user, agent):
    scene = services.create_scene(agent=agent, by=admin_user, source=GOOD)
    client = login(admin_user)
    client.post(f"/scenes/{scene.pk}/archive/")
    assert "No scenes in" in client.get(f"/scenes/agents/{agent.pk}/").content.decode()
    assert "crm-lookup" in client.get(f"/scenes/agents/{agent.pk}/?archived=1").content.decode()
    client.post(f"/scenes/{scene.pk}/archive/", {"restore": "1"})
    scene.refresh_from_db()
    assert scene.archived_at is None


def test_the_scenes_tab_runs_the_same_queries_for_1_and_6_scenes(login, member, agent):
    client = login(member)
    url = f"/scenes/agents/{agent.pk}/"

    def fetch() -> None:
        assert client.get(url).status_code == 200

    def five_more() -> None:
        for i in range(5):
            services.create_scene(agent=agent, by=member, source=GOOD.replace("crm-lookup", f"s{i}"))

    services.create_scene(agent=agent, by=member, source=GOOD)
    assert_queries_do_not_grow(fetch, five_more)
