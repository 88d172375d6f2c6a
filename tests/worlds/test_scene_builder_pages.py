"""The test builder picks scenes (checks/scene_mode.py, filled by worlds/builder.py): a test holds
scenarios or scenes; library scenes with their versions, or a file pasted or uploaded right there,
validated as you type with every problem on its line, saved to the library and attached. Errors land
on their fields, nothing is saved on error, editing makes a new version, the old "New scene test" URL
redirects, and the page's queries stay fixed."""

from __future__ import annotations

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from checks.models import Test
from tests import factories
from tests.support.page_fixtures import login  # noqa: F401
from tests.support.queries import assert_queries_do_not_grow
from worlds import services
from worlds.models import Scene

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}

GOOD = """\
scene: crm-lookup
description: Find the customer's plan.
task: Look the customer up.
world:
  tools: { crm: {} }
checks:
  - id: looked_up
    trace: { called: "GET /crm/customers/*" }
"""
SLACK = """\
scene: slack-question
task: "Answer the question in #support in its thread."
world:
  slack:
    users: { slack_bot: { name: bot, bot: true }, slack_ann: { name: ann } }
    channels: { slack_support: { name: support, members: [$slack_bot, $slack_ann] } }
checks:
  - id: said_something
    trace: { called: "POST /api/chat.postMessage" }
"""
# line 9: an unknown ref; line 10: a field no check kind has
BAD = SLACK.replace(
    '    trace: { called: "POST /api/chat.postMessage" }',
    "    state: { slack.message: { channel: $slak_support } }\n    colour: red",
)


def url(test_set) -> str:
    return f"/checks/test-sets/{test_set.pk}/tests/new/"


def form(**overrides) -> dict:
    data = {
        "name": "Plays scenes",
        "mode": "scenes",
        "scenario_count": "1",
        "s-0-name": "",
        "s-0-mode": "single",
        "s-0-input": "",
        "source": "",
        "check_count": "0",
        "samples_per_scenario": "2",
        "min_valid_per_scenario": "2",
        "required_pass_rate": "100",
    }
    data.update(overrides)
    return data


def test_the_old_new_scene_test_url_and_the_test_set_page_lead_to_the_builder_in_scene_mode(
    login, member, outsider, test_set
):
    client = login(member)
    page = client.get(f"/checks/test-sets/{test_set.pk}/").content.decode()
    assert f'href="{url(test_set)}?mode=scenes">New scene test</a>' in page
    old = client.get(f"/scenes/test-sets/{test_set.pk}/tests/new/")
    assert old.status_code == 302 and old["Location"] == f"{url(test_set)}?mode=scenes"
    assert login(outsider).get(f"/scenes/test-sets/{test_set.pk}/tests/new/").status_code == 404


def test_scene_mode_lists_the_library_scenes_with_their_versions(login, member, agent, test_set):
    scene = services.create_scene(agent=agent, by=member, source=GOOD)
    services.edit_scene(scene=scene, by=member, source=GOOD.replace("Look", "Find"))
    services.create_scene(agent=agent, by=member, source=SLACK)
    html = login(member).get(f"{url(test_set)}?mode=scenes").content.decode()
    assert 'id="id_mode_scenes" checked' in html
    assert 'id="builder-scenarios" aria-describedby="scenarios-help" hidden' in html
    assert f'id="id_scene_{scene.pk}">' in html and 'title="crm-lookup">crm-lookup</span></strong>' in html
    assert "v2 · 1 check" in html and '<span class="tag">crm</span>' in html
    assert '<div class="scene-pick" data-scene="slack-question">' in html
    assert 'id="id_source"' in html and f'hx-post="/scenes/agents/{agent.pk}/validate/"' in html
    plain = login(member).get(url(test_set)).content.decode()
    assert (
        'id="id_mode_scenarios" checked' in plain
        and 'id="builder-scenes" aria-describedby="scenes-help" hidden' in plain
    )


def test_a_member_picks_a_library_scene_and_saves_a_scene_test(login, member, agent, test_set):
    scene = services.create_scene(agent=agent, by=member, source=GOOD)
    client = login(member)
    saved = client.post(url(test_set), form(scenes=[str(scene.pk)]))
    test = Test.objects.get(name="Plays scenes")
    assert saved.status_code == 302 and saved["Location"] == test.get_absolute_url()
    assert [s.pk for s in services.scenes_of(test.current_version)] == [scene.pk]
    assert test.current_version.samples_per_scenario == 2
    (scenario,) = test.current_version.scenarios
    assert (scenario["name"], scenario["input"], scenario["metadata"]) == (
        "crm-lookup", "Look the customer up.", {"scene": scene.pk}
    )
    assert "it plays 1 scene." in client.get(saved["Location"]).content.decode()


def test_no_scene_is_an_error_on_the_scene_picker_and_nothing_is_saved(login, member, test_set):
    answer = login(member).post(url(test_set), form(name=""))
    html = answer.content.decode()
    assert (
        '<ul class="errorlist" id="id_scenes_error" role="alert">'
        "<li>pick a library scene, or paste or upload a scene file</li></ul>" in html
    )
    assert 'id="id_name_error"' in html, "every problem at once"
    assert 'id="id_mode_scenes" checked' in html
    assert not Test.objects.exists()


def test_a_pasted_scene_shows_its_problems_on_their_lines_and_is_not_saved(login, member, agent, test_set):
    client = login(member)
    checked = client.post(f"/scenes/agents/{agent.pk}/validate/", {"source": BAD}, **HTMX).content.decode()
    assert '<li data-line="9"><a href="#L9">line 9</a>' in checked and "unknown ref $slak_support" in checked
    answer = client.post(url(test_set), form(_action="scene:add", source=BAD), **HTMX)
    html = answer.content.decode()
    assert html.lstrip().startswith('<div id="builder">')
    assert (
        '<ul class="errorlist" id="id_source_error" role="alert">'
        "<li>2 problems in the scene (see its lines)</li></ul>" in html
    )
    assert '<li id="L9" class="bad">' in html and '<li id="L10" class="bad">' in html
    assert "scene.yaml:9: checks[0].state.slack.message.channel: unknown ref $slak_support" in html
    assert "checks[0].colour" in html
    assert "slack-question" in html, "what was pasted is kept"
    assert not Scene.objects.exists()

    saving = client.post(url(test_set), form(source=BAD))
    assert '<li id="L9" class="bad">' in saving.content.decode()
    assert not Scene.objects.exists() and not Test.objects.exists()


def test_a_pasted_scene_is_saved_to_the_library_and_attached(login, member, agent, test_set):
    client = login(member)
    html = client.post(url(test_set), form(_action="scene:add", source=SLACK), **HTMX).content.decode()
    scene = Scene.objects.get()
    assert (scene.name, scene.version, scene.agent_id) == ("slack-question", 1, agent.pk)
    assert "Scene slack-question is in Support bot&#x27;s library (version 1) and attached." in html
    assert f'id="id_scene_{scene.pk}" checked' in html
    assert '<textarea name="source" id="id_source"' in html and (
        "slack_support" not in html.split('id="id_source"')[1].split("</textarea>")[0]
    )
    saved = client.post(url(test_set), form(scenes=[str(scene.pk)]))
    assert saved.status_code == 302
    assert [s.pk for s in services.scenes_of(Test.objects.get().current_version)] == [scene.pk]


def test_a_file_left_in_the_box_is_saved_with_the_test(login, member, agent, test_set):
    picked = services.create_scene(agent=agent, by=member, source=GOOD)
    saved = login(member).post(url(test_set), form(scenes=[str(picked.pk)], source=SLACK))
    assert saved.status_code == 302
    test = Test.objects.get()
    assert [s.name for s in services.scenes_of(test.current_version)] == ["crm-lookup", "slack-question"]


def test_a_pasted_scene_named_like_another_library_scene_is_an_error_naming_it(
    login, member, agent, test_set
):
    existing = services.create_scene(agent=agent, by=member, source=SLACK)
    client = login(member)
    html = client.post(
        url(test_set), form(_action="scene:add", source=SLACK.replace("Answer", "Reply to")), **HTMX
    ).content.decode()
    assert (
        "Support bot&#x27;s library already has a scene called &#x27;slack-question&#x27; (version 1)"
        in html
    )
    assert Scene.objects.count() == 1
    same = client.post(url(test_set), form(_action="scene:add", source=SLACK), **HTMX).content.decode()
    assert f'id="id_scene_{existing.pk}" checked' in same, "the same file is the library's scene"
    assert Scene.objects.count() == 1


def test_ids_that_are_no_scene_are_errors_never_a_crash(login, member, test_set):
    answer = login(member).post(url(test_set), form(scenes=["99999999999999999999", "x", "٣", "0"]))
    html = answer.content.decode()
    assert answer.status_code == 200
    assert "Scene 0 is not in Support bot's library." in html
    assert "scene 0 is not in Support bot&#x27;s library" in html.split('id="id_scenes_error"')[1]
    assert not Test.objects.exists()


def test_attaching_an_empty_box_names_the_field(login, member, test_set):
    html = login(member).post(url(test_set), form(_action="scene:add", source="  "), **HTMX).content.decode()
    assert (
        '<ul class="errorlist" id="id_source_error" role="alert">'
        "<li>paste a scene or upload a file first</li></ul>" in html
    )
    assert not Scene.objects.exists()


def test_an_archived_or_foreign_scene_is_an_error_on_the_picker(
    login, member, admin_user, agent, test_set, outsider, other_team
):
    archived = services.create_scene(agent=agent, by=member, source=GOOD)
    services.archive_scene(scene=archived, by=admin_user)
    foreign_agent = factories.agent(other_team, outsider, name="Theirs")
    foreign = services.create_scene(agent=foreign_agent, by=outsider, source=SLACK)
    html = (
        login(member).post(url(test_set), form(scenes=[str(archived.pk), str(foreign.pk)])).content.decode()
    )
    errors = html.split('id="id_scenes_error"')[1].split("</ul>")[0]
    assert "scene &#x27;crm-lookup&#x27; is archived; restore it first" in errors
    assert f"scene {foreign.pk} is not in Support bot&#x27;s library" in errors
    assert "slack-question" not in html, "another team's scene is never shown"
    assert f"Scene {foreign.pk} is not in Support bot's library." in html
    assert not Test.objects.exists()


def test_an_uploaded_scene_file_is_saved_and_attached(login, member, agent, test_set):
    upload = SimpleUploadedFile("q.yaml", SLACK.encode(), content_type="text/yaml")
    html = (
        login(member).post(url(test_set), form(_action="scene:add", upload=upload), **HTMX).content.decode()
    )
    scene = Scene.objects.get()
    assert f'id="id_scene_{scene.pk}" checked' in html


def test_an_upload_that_is_not_text_is_an_error_on_its_field(login, member, test_set):
    upload = SimpleUploadedFile("x.yaml", b"\xff\xfe\x00bad", content_type="text/yaml")
    html = login(member).post(url(test_set), form(upload=upload)).content.decode()
    assert (
        '<ul class="errorlist" id="id_upload_error" role="alert">'
        "<li>the file is not UTF-8 text</li></ul>" in html
    )
    assert not Scene.objects.exists() and not Test.objects.exists()


def test_a_library_state_check_that_does_not_fit_a_scene_is_an_error_on_its_row(
    login, member, agent, test_set
):
    scene = services.create_scene(agent=agent, by=member, source=SLACK)
    misfit = factories.check(
        agent, member, kind="state", config={"slack.message": {"channel": "$slack_eng"}}, name="Posts in eng"
    )
    html = login(member).post(
        url(test_set), form(scenes=[str(scene.pk)], check_count="1", **{"c-0-id": str(misfit.pk)})
    ).content.decode()
    row = html.split('data-check="Posts in eng"')[1].split("</tr>")[0]
    assert "does not fit scene &#x27;slack-question&#x27;" in row and "unknown ref $slack_eng" in row
    assert not Test.objects.exists()


def test_min_valid_over_samples_is_an_error_on_its_field(login, member, agent, test_set):
    scene = services.create_scene(agent=agent, by=member, source=GOOD)
    html = login(member).post(
        url(test_set), form(scenes=[str(scene.pk)], samples_per_scenario="1", min_valid_per_scenario="3")
    ).content.decode()
    field = html.split('id="id_min_valid_per_scenario"')[1].split("</div>")[0]
    assert '<ul class="errorlist" role="alert">' in field
    assert not Test.objects.exists()


def test_editing_a_scene_test_in_the_builder_saves_a_new_version(login, member, agent, test_set):
    first = services.create_scene(agent=agent, by=member, source=GOOD)
    second = services.create_scene(agent=agent, by=member, source=SLACK)
    test = services.create_scene_test(test_set=test_set, by=member, name="Lookup", scenes=[first.pk])
    client = login(member)
    page = client.get(f"/checks/tests/{test.pk}/edit/").content.decode()
    assert f'id="id_scene_{first.pk}" checked' in page and f'id="id_scene_{second.pk}">' in page
    assert 'id="id_mode_scenes" checked disabled' in page and "keeps the kind it was made with" in page
    saved = client.post(
        f"/checks/tests/{test.pk}/edit/",
        form(name="Lookup", mode="scenarios", scenes=[str(first.pk), str(second.pk)],
             samples_per_scenario="1", min_valid_per_scenario="1"),
    )
    assert saved.status_code == 302
    test.refresh_from_db()
    assert test.version == 2
    assert [s.pk for s in services.scenes_of(test.current_version)] == [first.pk, second.pk]
    assert "saved as version 2; it plays 2 scenes." in client.get(saved["Location"]).content.decode()


def test_saving_an_unchanged_scene_test_keeps_its_scene_order_and_makes_no_version(
    login, member, agent, test_set
):
    first = services.create_scene(agent=agent, by=member, source=GOOD)  # crm-lookup
    second = services.create_scene(agent=agent, by=member, source=SLACK)  # slack-question
    test = services.create_scene_test(
        test_set=test_set, by=member, name="Both", scenes=[second.pk, first.pk], samples_per_scenario=1
    )
    client = login(member)
    page = client.get(f"/checks/tests/{test.pk}/edit/").content.decode()
    posted = [int(pk) for pk in re.findall(r'name="scenes" value="(\d+)"', page)]
    assert posted == [second.pk, first.pk], "the test's order, not the library's"
    saved = client.post(
        f"/checks/tests/{test.pk}/edit/",
        form(
            name="Both",
            scenes=[str(pk) for pk in posted],
            samples_per_scenario="1",
            min_valid_per_scenario="1",
        ),
    )
    assert saved.status_code == 302
    test.refresh_from_db()
    assert test.version == 1
    assert "Nothing changed" in client.get(saved["Location"]).content.decode()


def test_viewers_cannot_build_scene_tests(login, viewer, test_set):
    client = login(viewer)
    assert client.get(f"{url(test_set)}?mode=scenes").status_code == 403
    assert client.post(url(test_set), form(_action="scene:add", source=SLACK)).status_code == 403
    assert not Scene.objects.exists()


def test_switching_to_scenes_keeps_what_was_typed(login, member, test_set):
    html = login(member).post(
        url(test_set), form(_action="refresh", **{"s-0-input": "Where is EC-1042?"}), **HTMX
    ).content.decode()
    assert 'id="builder-scenes" aria-describedby="scenes-help">' in html
    assert "Where is EC-1042?" in html, "the scenario stays (hidden) for a switch back"
    assert "0 scenes × 2 samples = 0 of" in html


def test_the_builder_in_scene_mode_runs_the_same_queries_for_1_and_6_scenes(login, member, agent, test_set):
    client = login(member)

    def fetch() -> None:
        assert client.get(f"{url(test_set)}?mode=scenes").status_code == 200

    def five_more() -> None:
        for i in range(5):
            services.create_scene(agent=agent, by=member, source=GOOD.replace("crm-lookup", f"s{i}"))

    services.create_scene(agent=agent, by=member, source=GOOD)
    assert_queries_do_not_grow(fetch, five_more)
