"""Bad and hostile calls to stored worlds over real HTTP: each gets the tool's own error shape or
401/404/410/413, is recorded where it belongs (in that world's trace, or nowhere), never answers 500,
and never changes another world."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests import factories
from worlds import services

pytestmark = pytest.mark.django_db(transaction=True)

SCENES = Path(__file__).parent / "scenes"
SCENE = (SCENES / "hostile.yaml").read_text()


@pytest.fixture
def worlds(team, admin_user, live_server, settings):
    settings.EVALCONSOLE_WORLDS_URL = live_server.url
    agent = factories.agent(team, admin_user)
    version = services.create_scene(agent=agent, by=admin_user, source=SCENE).current_version
    mine, _ = services.start_world(version=version)
    other, _ = services.start_world(version=version)
    return mine, other


def _tools(row):
    return services.load_world(row.id).for_agent(services.worlds_root())["tools"]


def _trace(row):
    return [(e.tool, e.method, e.path, e.status) for e in services.load_world(row.id).trace]


def test_wrong_credentials_get_each_tools_own_refusal_and_are_traced(worlds):
    mine, other = worlds
    slack, github = _tools(mine)["slack"], _tools(mine)["github"]
    theirs = _tools(other)
    with httpx.Client() as http:
        wrong = http.post(slack["base_url"] + "auth.test", headers={"Authorization": "Bearer xoxb-guess"})
        borrowed = http.post(
            slack["base_url"] + "chat.postMessage",
            data={"channel": "general", "text": "hi"},
            headers={"Authorization": f"Bearer {theirs['slack']['token']}"},
        )
        gh = http.get(github["base_url"] + "repos/acme/orders", headers={"Authorization": "token ghp_guess"})
    assert (wrong.status_code, wrong.json()) == (200, {"ok": False, "error": "invalid_auth"})
    assert borrowed.json()["error"] == "invalid_auth", "another world's token is no credential here"
    assert gh.status_code == 401 and gh.json()["message"] == "Bad credentials"
    assert [t[3] for t in _trace(mine)] == [200, 200, 401]
    assert _trace(other) == [], "the other world saw nothing"
    state = services.load_world(other.id)
    assert not [m for m in state.states["slack"]["messages"] if not m.get("seed")], "no message was posted"


def test_malformed_big_and_unknown_calls_never_answer_500(worlds):
    mine, _ = worlds
    slack, github = _tools(mine)["slack"], _tools(mine)["github"]
    auth_slack = {"Authorization": f"Bearer {slack['token']}"}
    auth_gh = {"Authorization": f"token {github['token']}"}
    with httpx.Client() as http:
        bad_json = http.post(
            slack["base_url"] + "chat.postMessage",
            content=b"{nope",
            headers={**auth_slack, "Content-Type": "application/json"},
        )
        bad_gh = http.post(
            github["base_url"] + "repos/acme/orders/issues",
            content=b"{nope",
            headers={**auth_gh, "Content-Type": "application/json"},
        )
        big = http.post(
            github["base_url"] + "repos/acme/orders/issues", content=b"x" * (2 * 1024 * 1024), headers=auth_gh
        )
        gap = http.get(github["base_url"] + "repos/acme/orders/actions/runs", headers=auth_gh)
        unknown_method = http.post(slack["base_url"] + "admin.users.remove", headers=auth_slack)
    assert bad_json.status_code == 200 and bad_json.json()["ok"] is False
    assert bad_gh.status_code == 400 and "Problems parsing JSON" in bad_gh.json()["message"]
    assert big.status_code == 413
    assert gap.status_code == 404 and gap.json()["message"] == "Not Found"
    assert unknown_method.status_code == 404 and unknown_method.json()["error"] == "unknown_method"
    world = services.load_world(mine.id)
    assert [e.status for e in world.trace] == [200, 400, 413, 404, 404]
    assert [e.coverage_gap for e in world.trace] == [False, False, False, True, True]
    assert all(not e.worked for e in world.trace)


def test_after_the_trial_and_for_a_guessed_or_other_teams_world(worlds, other_team, live_server):
    mine, _ = worlds
    slack = _tools(mine)["slack"]
    services.end_world(mine.id)
    theirs_agent = factories.agent(other_team)
    version = services.create_scene(agent=theirs_agent, by=None, source=SCENE).current_version
    foreign, _ = services.start_world(version=version)
    with httpx.Client() as http:
        ended = http.post(
            slack["base_url"] + "auth.test", headers={"Authorization": f"Bearer {slack['token']}"}
        )
        guessed = http.post(f"{live_server.url}/worlds/{mine.id}x/slack/api/auth.test")
        # My world's token on another team's world: that world's own refusal, recorded there only.
        crossed = http.post(
            f"{live_server.url}/worlds/{foreign.id}/slack/api/auth.test",
            headers={"Authorization": f"Bearer {slack['token']}"},
        )
    assert ended.status_code == 410
    assert guessed.status_code == 404
    assert crossed.json() == {"ok": False, "error": "invalid_auth"}
    assert _trace(mine) == [], "nothing is recorded after the end"
    assert [t[3] for t in _trace(foreign)] == [200]
