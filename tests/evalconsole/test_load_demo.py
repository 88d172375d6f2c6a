"""`manage.py load_demo` (run by every `make up`) never fails on, nor undoes, a team's own changes (issue 14,
defect 22)."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from agents import services as agents
from agents.models import Agent
from checks import services as checks
from checks.models import Check, CheckVersion, Test, TestSet, TestVersion
from teams.models import Membership, Team
from teams.services import add_member
from worlds import services as worlds
from worlds.models import Scene

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _var_dir(settings, tmp_path):
    settings.VAR_DIR = tmp_path  # the admin password file goes here, not into the checkout's var/


DEMO_SCENES = [
    "orders-5xx",
    "orders-5xx-sloppy",
    "support-export",
    "support-export-sloppy",
    "support-triage",
    "support-triage-sloppy",
]


def _load() -> str:
    out = io.StringIO()
    call_command("load_demo", "--agent-url", "http://127.0.0.1:8001/", stdout=out)
    return out.getvalue()


def _state() -> dict:
    return {
        "teams": sorted(Team.objects.values_list("slug", "name")),
        "members": sorted(Membership.objects.values_list("team__slug", "user__username", "role")),
        "agents": sorted(Agent.objects.values_list("name", "endpoint_url", "archived_at")),
        "checks": sorted(Check.objects.values_list("name", "version", "archived_at")),
        "check versions": CheckVersion.objects.count(),
        "test sets": sorted(TestSet.objects.values_list("name", "archived_at")),
        "tests": sorted(Test.objects.values_list("name", "version", "archived_at")),
        "test versions": TestVersion.objects.count(),
        "scenes": sorted(Scene.objects.values_list("name", "version", "archived_at")),
    }


def _admin():
    return get_user_model().objects.get(username="admin")


def _first_test_set() -> TestSet:
    """The demo's first test set ("Support basics", whatever it is called now)."""
    return TestSet.objects.order_by("pk").first()


def _check(name: str) -> Check:
    return Check.objects.get(name=name)


EDITS = {
    "rename the demo test set": lambda: checks.update_test_set(
        test_set=_first_test_set(), by=_admin(), name="Our support tests"),
    # The demo's tests use it, so archiving asks first (issue 14: 4); the team's admin confirms.
    "archive a demo check": lambda: checks.archive_check(
        check=_check("Looks up the order"), by=_admin(), confirm=True),
    "rename a demo check": lambda: checks.edit_check(
        check=_check("Mentions the order id"), by=_admin(), name="Quotes the order number"),
    "rename a demo test": lambda: checks.edit_test(
        test=Test.objects.get(name="Order status"), by=_admin(), name="Where is my order"),
    "archive a demo test": lambda: checks.archive_test(
        test=Test.objects.get(name="Refund requests"), by=_admin()),
    "archive the demo test set": lambda: checks.archive_test_set(test_set=_first_test_set(), by=_admin()),
    "archive the demo scene": lambda: worlds.archive_scene(
        scene=Scene.objects.get(name="support-export"), by=_admin()
    ),
    "rename the demo agent": lambda: agents.update_agent(
        agent=Agent.objects.get(), by=_admin(), name="Support agent (staging)"),
    "point the demo agent elsewhere": lambda: agents.update_agent(
        agent=Agent.objects.get(), by=_admin(), endpoint_url="http://127.0.0.1:9001/"),
    "archive the demo agent": lambda: agents.archive_agent(agent=Agent.objects.get(), by=_admin()),
    "make admin a viewer of the demo team": lambda: add_member(
        team=Team.objects.get(slug="demo"), user=_admin(), role="viewer"),
}


def test_loading_the_demo_twice_changes_nothing():
    _load()
    first = _state()
    assert first["tests"] and first["checks"]
    assert [name for name, _, _ in first["scenes"]] == DEMO_SCENES
    assert "Log in as admin" in _load()
    assert _state() == first


@pytest.mark.parametrize("edit", list(EDITS))
def test_load_demo_succeeds_and_keeps_a_teams_edit(edit):
    _load()
    EDITS[edit]()
    edited = _state()
    _load()  # raises CommandError (make up: exit 1) if it fails
    assert _state() == edited


def test_load_demo_keeps_every_edit_at_once():
    _load()
    # Archiving after the edits (an archived check or test takes none), and admin's demotion last.
    for _, edit in sorted(EDITS.items(), key=lambda item: ("viewer" in item[0], "archive" in item[0])):
        edit()
    edited = _state()
    _load()
    assert _state() == edited


def test_a_demo_loaded_before_scenes_gets_the_demo_scenes_once(monkeypatch):
    from evalconsole.management.commands.load_demo import Command

    with monkeypatch.context() as before_scenes:  # what load_demo did before scenes existed
        before_scenes.setattr(Command, "_create_world_demo", lambda self, admin, agent: None)
        _load()
    assert not Scene.objects.exists()
    assert "Added the demo scenes: support-export, support-triage, orders-5xx." in _load()
    assert sorted(Scene.objects.values_list("name", flat=True)) == DEMO_SCENES
    assert "Added the demo scenes" not in _load(), "once: while the team has scenes, nothing is added"


def _load_before_the_incident_scene(monkeypatch) -> None:
    """load_demo as an evalconsole without the incident scene ran it."""
    from evalconsole.management.commands import load_demo

    with monkeypatch.context() as before:
        before.setattr(
            load_demo,
            "DEMO_SCENES",
            {k: v for k, v in load_demo.DEMO_SCENES.items() if k != "orders-5xx"},
        )
        _load()
    assert not Scene.objects.filter(name="orders-5xx").exists()


def test_a_demo_loaded_before_the_incident_scene_gets_it_once_and_its_archive_stays(monkeypatch):
    _load_before_the_incident_scene(monkeypatch)
    assert "Added the demo scenes: orders-5xx." in _load()
    assert TestSet.objects.filter(name="Incident response").count() == 1
    worlds.archive_scene(scene=Scene.objects.get(name="orders-5xx"), by=_admin())
    edited = _state()
    assert "Added the demo scenes" not in _load(), "an archived demo scene is the team's choice"
    assert _state() == edited


def test_a_team_with_scenes_of_its_own_gets_no_new_demo_scene(monkeypatch):
    _load_before_the_incident_scene(monkeypatch)
    agent = Agent.objects.get()
    text = Scene.objects.get(name="support-export").current_version.source
    worlds.create_scene(
        agent=agent, by=_admin(), source=text.replace("scene: support-export\n", "scene: ours\n", 1)
    )
    edited = _state()
    assert "Added the demo scenes" not in _load()
    assert _state() == edited
