"""A test that plays a scene, launched as a run: every sample gets a fresh world stored in the database,
the agent works in it over real HTTP through the console's /worlds/ entry, the world ends when the
reply arrives (its URL then answers 410), and the scene's checks and library checks judge it."""

from __future__ import annotations

import json

import httpx
import pytest

from runs import services as runs
from runs.execution import drain
from runs.models import RunScene, Sample
from tests import factories
from tests.support.scenes import support_question
from tests.support.world_agent import WorldAgent
from worlds import services as worlds
from worlds.models import World

pytestmark = pytest.mark.django_db(transaction=True)

SCENE = support_question()


@pytest.fixture
def scene_test(team, admin_user, member, live_server, settings):
    settings.EVALCONSOLE_WORLDS_URL = live_server.url

    def make(agent_url: str, samples: int = 2, checks=()):
        return factories.scene_test(
            team, admin_user, member, agent_url=agent_url, scene=SCENE, name="Export question",
            checks=checks, samples=samples,
        )

    return make


def _run(test, member):
    run = runs.launch_run(test=test, by=member)
    drain(idle_ms=0)
    run.refresh_from_db()
    return run


def test_each_sample_plays_in_a_fresh_world_and_the_scenes_checks_judge_it(scene_test, member, live_server):
    with WorldAgent("slack_answer") as agent:
        test = scene_test(agent.url)
        run = _run(test, member)
    assert run.status == "completed", run.summary
    assert run.summary["result"] == "pass"
    samples = list(Sample.objects.filter(run=run).order_by("sample_index"))
    assert [s.outcome for s in samples] == ["pass", "pass"]
    world_ids = [s.world_id for s in samples]
    assert len(set(world_ids)) == 2, "a fresh world per sample"

    request = agent.requests[0]["scenario"]
    assert request["input"] == "A customer asked in #support. Answer her in the thread."
    assert request["world"]["now"] == "2026-03-02T09:00:00Z"
    assert (
        request["world"]["tools"]["slack"]["base_url"]
        == f"{live_server.url}/worlds/{request['world']['id']}/slack/api/"
    )
    assert request["world"]["tools"]["slack"]["token"].startswith("xoxb-")

    first = samples[0]
    assert [(c["id"], c["status"]) for c in first.world_checks] == [
        ("answered", "passed"),
        ("read_first", "passed"),
    ]
    assert [e["path"] for e in first.trace] == [
        "/api/conversations.list",
        "/api/conversations.history",
        "/api/chat.postMessage",
    ], "the trace is the world's, not the agent's report"
    assert first.world_checks[0]["evidence"] == [3]
    assert (
        RunScene.objects.get(run=run).scene_version_id
        == test.current_version.attached_scenes.get().scene.current_version_id
    )

    stored = World.objects.get(pk=world_ids[0])
    assert stored.ended_at is not None and stored.end_reason == "reply"
    gone = httpx.post(request["world"]["tools"]["slack"]["base_url"] + "auth.test")
    assert gone.status_code == 410


def test_a_miss_in_the_world_fails_the_sample_with_the_closest_message_named(scene_test, member):
    with WorldAgent("slack_top_level") as agent:
        run = _run(scene_test(agent.url, samples=1), member)
    assert run.summary["result"] == "fail"
    sample = Sample.objects.get(run=run)
    answered = sample.world_checks[0]
    assert (answered["id"], answered["status"]) == ("answered", "failed")
    assert "Exports are back." in answered["actual"] or "closest" in answered["actual"], answered


def test_library_checks_read_the_same_world(scene_test, member):
    state = {"slack.message": {"channel": "$slack_support", "from": "$slack_bot", "text_contains": "exports"}}
    with WorldAgent("slack_answer") as agent:
        test = scene_test(agent.url, samples=1, checks=[("Said exports", "state", state)])
        run = _run(test, member)
    sample = Sample.objects.get(run=run)
    result = sample.results.get()
    assert result.outcome == "pass", (result.expected, result.actual, result.explanation)


def test_an_agent_that_fails_leaves_an_error_sample_and_an_ended_world(scene_test, member):
    with WorldAgent("error") as agent:
        run = _run(scene_test(agent.url, samples=1), member)
    sample = Sample.objects.get(run=run)
    assert sample.outcome == "error"
    assert World.objects.get(pk=sample.world_id).end_reason == "error"


def test_the_run_page_shows_each_samples_world_with_evidence_linked_to_its_trace(scene_test, member, client):
    with WorldAgent("slack_answer") as agent:
        run = _run(scene_test(agent.url, samples=1), member)
    sample = Sample.objects.get(run=run)
    client.force_login(member)
    html = client.get(f"/runs/{run.pk}/").content.decode()
    assert 'data-check="answered" data-outcome="passed"' in html
    assert (
        "judged by its scene's own checks" in html
        and "samples pass unless the agent call fails" not in html
    )
    assert "No library checks attached: the scene checks above judge this sample." in html
    assert "No check results." not in html, "a sample its scene judged does not say it has no results"
    assert f'href="#s{sample.pk}-seq-3" class="evidence">call 3</a>' in html
    assert f'<tr id="s{sample.pk}-seq-3"' in html and "/api/chat.postMessage</span>" in html
    assert 'class="diff-added">+' in html and "Exports are back." in html, "the world's changes"
    assert "xoxb-" not in html, "no world credential on the page"
    assert "xoxb-" not in str(sample.request), "nor in the stored request"


def test_cancelling_a_run_ends_the_worlds_its_samples_are_playing_in(scene_test, member, monkeypatch):
    from runs import queue

    monkeypatch.setattr(runs, "enqueue_drain", lambda: None)  # claimed here, by hand
    test = scene_test("http://127.0.0.1:9/agent", samples=1)
    run = runs.launch_run(test=test, by=member)
    claim = queue.claim_samples(worker="w1", capacity=5)
    (sample,) = claim.samples
    plan = claim.plans[run.pk]
    world_id, _, _ = worlds.begin_trial(version_id=plan.scenes[0], team_id=plan.team_id)
    assert queue.attach_world(sample_id=sample.id, claim=sample.claim, world_id=world_id)
    assert World.objects.get(pk=world_id).live

    runs.cancel_run(run=run, by=member)
    stored = World.objects.get(pk=world_id)
    assert (stored.live, stored.end_reason) == (False, "stopped")
    assert not queue.attach_world(sample_id=sample.id, claim=sample.claim, world_id=world_id), (
        "no longer claimed"
    )


def test_a_sample_that_gets_a_new_world_ends_its_old_one(scene_test, member, monkeypatch):
    from runs import queue

    monkeypatch.setattr(runs, "enqueue_drain", lambda: None)
    test = scene_test("http://127.0.0.1:9/agent", samples=1)
    run = runs.launch_run(test=test, by=member)
    (sample,) = queue.claim_samples(worker="w1", capacity=5).samples
    version = RunScene.objects.get(run=run).scene_version_id
    first, _, _ = worlds.begin_trial(version_id=version, team_id=run.agent.team_id)
    second, _, _ = worlds.begin_trial(version_id=version, team_id=run.agent.team_id)
    queue.attach_world(sample_id=sample.id, claim=sample.claim, world_id=first)
    queue.attach_world(sample_id=sample.id, claim=sample.claim, world_id=second)
    assert World.objects.get(pk=first).end_reason == "stopped"
    assert World.objects.get(pk=second).live


JUDGED = SCENE + '  - id: polite\n    judge: "The agent answered the customer politely."\n'


def test_a_scenes_judge_check_uses_the_consoles_judge(
    scene_test, member, fake_judge, team, admin_user, settings
):
    with WorldAgent("slack_answer") as agent:
        agent_row = factories.agent(team, admin_user, endpoint_url=agent.url)
        test = worlds.create_scene_test(
            test_set=factories.test_set(agent_row, member), by=member, name="Judged", scenes=[JUDGED]
        )
        run = _run(test, member)
    polite = Sample.objects.get(run=run).world_checks[2]
    assert (polite["id"], polite["status"]) == ("polite", "passed"), polite
    prompt = json.dumps(fake_judge.last_body)
    assert "/api/chat.postMessage" in prompt and "Exports are back." in prompt
    assert "xoxb-" not in prompt, "the judge never sees a credential"


def test_without_a_judge_key_a_scenes_judge_check_is_skipped_never_passed(
    scene_test, member, team, admin_user, settings
):
    settings.EVALCONSOLE_JUDGE_API_KEY = ""
    with WorldAgent("slack_answer") as agent:
        agent_row = factories.agent(team, admin_user, endpoint_url=agent.url)
        test = worlds.create_scene_test(
            test_set=factories.test_set(agent_row, member), by=member, name="Judged", scenes=[JUDGED]
        )
        run = _run(test, member)
    sample = Sample.objects.get(run=run)
    assert sample.world_checks[2]["status"] == "skipped"
    assert sample.outcome == "indeterminate"
