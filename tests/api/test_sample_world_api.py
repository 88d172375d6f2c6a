"""GET /api/v1/runs/{id}/samples/{sample}/world/: a scene sample's trace, events and final state (the
trial's trace.json, events.json and world.json). Team-scoped, viewers read it, no credentials; a
sample of plain scenarios or of another run is a 404; the OpenAPI schema documents it."""

from __future__ import annotations

import io
import json

import pytest
import yaml
from django.core.management import call_command

from runs import services as runs
from runs.execution import drain
from runs.models import Sample
from tests import factories
from tests.support.scenes import broken_export
from tests.support.world_agent import WorldAgent
from worlds import services as worlds

pytestmark = pytest.mark.django_db(transaction=True)

SCENE = broken_export(scene="world-files", read_first=False)


@pytest.fixture
def scene_run(team, admin_user, member, live_server, settings):
    settings.EVALCONSOLE_WORLDS_URL = live_server.url
    with WorldAgent("slack_answer") as agent_server:
        agent = factories.agent(team, admin_user, endpoint_url=agent_server.url)
        test = worlds.create_scene_test(
            test_set=factories.test_set(agent, member), by=member, name="World files", scenes=[SCENE]
        )
        run = runs.launch_run(test=test, by=member)
        drain(idle_ms=0)
    run.refresh_from_db()
    assert run.status == "completed", run.summary
    return run, Sample.objects.get(run=run)


def test_a_viewer_reads_a_scene_samples_trace_events_and_final_state(api, scene_run):
    run, sample = scene_run
    answer = api.get("viewer", f"/api/v1/runs/{run.pk}/samples/{sample.pk}/world/")
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert (body["world"], body["scene"], body["ended"], body["truncated"]) == (
        sample.world_id, "world-files", "reply", False
    )
    assert [e["path"] for e in body["trace"]][-1] == "/api/chat.postMessage"
    assert [e["n"] for e in body["events"]] == list(range(1, len(body["events"]) + 1))
    assert "Exports are back." in json.dumps(body["final_state"]["tools"]["slack"])
    assert "xoxb-" not in answer.content.decode(), "no credential"


def test_another_team_a_wrong_run_and_a_sample_without_world_are_404(api, scene_run, member, agent, test_set):
    run, sample = scene_run
    assert api.get("outsider", f"/api/v1/runs/{run.pk}/samples/{sample.pk}/world/").status_code == 404
    assert api.get("anonymous", f"/api/v1/runs/{run.pk}/samples/{sample.pk}/world/").status_code == 401
    plain = factories.test(agent, member, test_set=test_set, scenarios=["hi"])
    queued = runs.launch_run(test=plain, by=member)
    other = Sample.objects.filter(run=queued).first()
    for path in (
        f"/api/v1/runs/{queued.pk}/samples/{other.pk}/world/",  # a sample of plain scenarios
        f"/api/v1/runs/{queued.pk}/samples/{sample.pk}/world/",  # another run's sample
        f"/api/v1/runs/{run.pk}/samples/999999999999999999/world/",
    ):
        answer = api.get("member", path)
        assert answer.status_code == 404, path
        assert answer.json()["detail"]


def test_the_schema_documents_the_sample_world(django_db_blocker):
    out = io.StringIO()
    call_command("spectacular", "--validate", "--fail-on-warn", stdout=out)
    schema = yaml.safe_load(out.getvalue())
    operation = schema["paths"]["/api/v1/runs/{id}/samples/{sample_id}/world/"]["get"]
    assert "world.json" in operation["description"]
    body = operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    assert {"trace", "events", "final_state", "truncated"} <= set(
        schema["components"]["schemas"][body]["properties"]
    )
