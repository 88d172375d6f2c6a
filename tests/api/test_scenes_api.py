"""/api/v1/scenes/: create (version 1), edit (version n+1), versions, archive; every problem of a bad
scene in one 400 with its line; another team's scene is 404; the list's queries stay fixed."""

from __future__ import annotations

import pytest

from tests.support.queries import assert_queries_do_not_grow
from tests.support.scenes import crm_lookup
from worlds.models import Scene

pytestmark = pytest.mark.django_db

SCENE = crm_lookup()

# An unknown ref, a `$kind.name` of the wrong kind, a bad duration, 21 checks and an unknown field.
HOSTILE = """\
scene: hostile
task: t
clock: { per_call: 5 fortnights }
world:
  slack:
    users: { slack_bot: { name: bot, bot: true }, slack_ann: { name: ann, shoe_size: 9 } }
    channels: { slack_general: { name: general, members: [$slack_bot] } }
checks:
  - id: c0
    state: { slack.message: { channel: $slak_general } }
  - id: c1
    state: { slack.message: { channel: $slack.user.slack_ann } }
""" + "".join(f'  - id: x{i}\n    trace: {{ called: "GET /x" }}\n' for i in range(19))


def test_member_adds_a_scene_and_edits_it_into_version_2(api, agent):
    made = api.post("member", "/api/v1/scenes/", {"agent": agent.pk, "source": SCENE})
    assert made.status_code == 201, made.json()
    body = made.json()
    assert (body["name"], body["version"], body["agent"]) == ("crm-lookup", 1, agent.pk)
    assert body["source"] == SCENE
    edited = api.patch("member", f"/api/v1/scenes/{body['id']}/", {"source": SCENE.replace("Look", "Find")})
    assert edited.status_code == 200 and edited.json()["version"] == 2
    versions = api.get("viewer", f"/api/v1/scenes/{body['id']}/versions/").json()["results"]
    assert [v["number"] for v in versions] == [2, 1]


def test_a_scene_as_a_json_object_is_accepted(api, agent):
    made = api.post(
        "member",
        "/api/v1/scenes/",
        {
            "agent": agent.pk,
            "source": {"scene": "obj", "task": "t", "checks": [{"id": "c", "trace": {"called": "*"}}]},
        },
    )
    assert made.status_code == 201, made.json()
    assert made.json()["name"] == "obj"


def test_a_hostile_scene_is_one_400_with_every_problem_on_its_line_and_nothing_saved(api, agent):
    answer = api.post("member", "/api/v1/scenes/", {"agent": agent.pk, "source": HOSTILE})
    assert answer.status_code == 400
    problems = answer.json()["source"]
    text = "\n".join(problems)
    assert "scene.yaml:3: clock.per_call:" in text
    assert "scene.yaml:6: world.slack.users.slack_ann.shoe_size:" in text
    assert "scene.yaml:10: checks[0].state.slack.message.channel: unknown ref $slak_general" in text
    assert "scene.yaml:12: checks[1].state.slack.message.channel:" in text
    assert any("at most 20 checks" in p for p in problems), problems
    assert len(problems) == len(set(problems)), "each problem once"
    assert not Scene.objects.exists()


def test_a_bad_scene_and_a_missing_agent_are_reported_together(api):
    answer = api.post("member", "/api/v1/scenes/", {"source": "scene: x\n"})
    assert answer.status_code == 400
    assert set(answer.json()) == {"agent", "source"}


@pytest.mark.parametrize("source", [42, [], ""])
def test_a_source_that_is_no_scene_is_a_400_naming_source(api, agent, source):
    answer = api.post("member", "/api/v1/scenes/", {"agent": agent.pk, "source": source})
    assert answer.status_code == 400
    assert "source" in answer.json()


def test_viewers_cannot_add_admins_archive_and_outsiders_see_404(api, agent):
    assert api.post("viewer", "/api/v1/scenes/", {"agent": agent.pk, "source": SCENE}).status_code == 403
    scene_id = api.post("member", "/api/v1/scenes/", {"agent": agent.pk, "source": SCENE}).json()["id"]
    assert api.get("outsider", f"/api/v1/scenes/{scene_id}/").status_code == 404
    assert api.patch("outsider", f"/api/v1/scenes/{scene_id}/", {"source": SCENE}).status_code == 404
    assert api.delete("member", f"/api/v1/scenes/{scene_id}/").status_code == 403
    assert api.delete("admin", f"/api/v1/scenes/{scene_id}/").status_code == 204
    assert api.get("member", "/api/v1/scenes/").json()["count"] == 0
    assert api.get("member", "/api/v1/scenes/?archived=true").json()["count"] == 1


def test_the_scenes_list_runs_the_same_queries_for_1_and_6_scenes(api, agent, member):
    from worlds import services

    def fetch() -> None:
        assert api.get("viewer", "/api/v1/scenes/").status_code == 200

    def five_more() -> None:
        for i in range(5):
            scene = services.create_scene(agent=agent, by=member, source=SCENE.replace("crm-lookup", f"s{i}"))
            services.edit_scene(scene=scene, by=member, source=SCENE.replace("crm-lookup", f"s{i}-b"))

    services.create_scene(agent=agent, by=member, source=SCENE)
    assert_queries_do_not_grow(fetch, five_more)


# ----------------------------------------------------------------------------- tests that play scenes


def test_a_test_plays_scenes_given_as_files_and_as_library_ids(api, agent, test_set, member):
    from worlds import services

    kept = services.create_scene(agent=agent, by=member, source=SCENE.replace("crm-lookup", "kept"))
    made = api.post(
        "member",
        "/api/v1/tests/",
        {"test_set": test_set.pk, "name": "Scenes", "scenes": [SCENE, kept.pk], "samples_per_scenario": 2},
    )
    assert made.status_code == 201, made.json()
    body = made.json()
    assert [s["name"] for s in body["scenes"]] == ["crm-lookup", "kept"]
    assert [s["input"] for s in body["scenarios"]] == ["Look the customer up.", "Look the customer up."]
    assert Scene.objects.filter(agent=agent).count() == 2, "the pasted file joined the library"
    shown = api.get("viewer", f"/api/v1/tests/{body['id']}/").json()
    assert shown["scenes"] == body["scenes"]
    listed = api.get("viewer", "/api/v1/tests/").json()["results"]  # the list reads them as plain rows
    assert [row for row in listed if row["id"] == body["id"]] == [shown]

    edited = api.patch("member", f"/api/v1/tests/{body['id']}/", {"scenes": [kept.pk]})
    assert edited.status_code == 200, edited.json()
    assert [s["name"] for s in edited.json()["scenes"]] == ["kept"]
    assert edited.json()["version"] == 2


def test_a_test_with_a_bad_scene_names_it_with_every_problem_and_saves_nothing(api, agent, test_set):
    from checks.models import Test

    answer = api.post(
        "member",
        "/api/v1/tests/",
        {"test_set": test_set.pk, "name": "", "scenes": [SCENE, HOSTILE, 999999]},
    )
    assert answer.status_code == 400
    errors = answer.json()
    assert "name" in errors
    assert any("unknown ref $slak_general" in p for p in errors["scenes.1"]), errors
    assert "not in" in errors["scenes.2"][0]
    assert not Test.objects.exists() and not Scene.objects.exists()


def test_a_test_holds_scenes_or_scenarios_not_both(api, test_set):
    answer = api.post(
        "member",
        "/api/v1/tests/",
        {"test_set": test_set.pk, "name": "Both", "scenes": [SCENE], "scenarios": [{"input": "hi"}]},
    )
    assert answer.status_code == 400
    assert "either scenes or plain scenarios" in str(answer.json())


def test_another_teams_scene_id_is_not_in_the_library(api, test_set, other_team):
    from tests import factories
    from worlds import services

    theirs = factories.agent(other_team, name="Theirs")
    foreign = services.create_scene(agent=theirs, by=None, source=SCENE)
    answer = api.post(
        "member", "/api/v1/tests/", {"test_set": test_set.pk, "name": "X", "scenes": [foreign.pk]}
    )
    assert answer.status_code == 400
    assert "not in" in answer.json()["scenes.0"][0]


def test_a_library_state_check_must_fit_every_scene_of_the_test(api, agent, test_set, member):
    from tests import factories

    slack = """\
scene: slack-one
task: t
world:
  slack:
    users: { slack_bot: { name: bot, bot: true } }
    channels: { slack_support: { name: support, members: [$slack_bot] } }
checks:
  - { id: c, trace: { called: "*" } }
"""
    fits = factories.check(
        agent, member, kind="state", config={"slack.message": {"channel": "$slack_support"}}
    )
    misfit = factories.check(agent, member, kind="state", config={"slack.message": {"channel": "$slack_eng"}})
    body = {"test_set": test_set.pk, "name": "Fits", "scenes": [slack]}
    ok = api.post("member", "/api/v1/tests/", {**body, "checks": [{"check": fits.pk, "required": True}]})
    assert ok.status_code == 201, ok.json()
    refused = api.post(
        "member",
        "/api/v1/tests/",
        {**body, "name": "Misfit", "checks": [{"check": misfit.pk, "required": True}]},
    )
    assert refused.status_code == 400
    assert "does not fit scene 'slack-one'" in refused.json()["checks.0"][0]
    assert "unknown ref $slack_eng" in refused.json()["checks.0"][0]
