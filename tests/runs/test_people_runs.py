"""A scene test with people, run in the console: the demo agent plays the triage scene through the
console's /worlds/ entry (each call restored from the database, the people's progress in the world's
row), the scene's process checks and LIBRARY process checks judge it, and the run page shows the
timeline of who learned what from whom."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.demo_agent import DemoAgent
from runs import services as runs
from runs.execution import drain
from runs.models import Sample
from tests import factories
from worlds.services import ValidationFailed

pytestmark = pytest.mark.django_db(transaction=True)

TRIAGE = (Path(__file__).resolve().parents[2] / "worlds" / "scenes" / "support-triage.yaml").read_text()


@pytest.fixture
def demo(team, admin_user, live_server, settings):
    settings.EVALCONSOLE_WORLDS_URL = live_server.url
    with DemoAgent(token="") as running:
        yield running


def _test(team, admin_user, member, url: str, checks, *, scene: str = TRIAGE):
    return factories.scene_test(
        team, admin_user, member, agent_url=url, scene=scene, name="Triage", checks=checks, samples=1
    )


LIBRARY = [
    ("Asked the customer", "process", {"revealed": ["laura.workspace"]}),
    ("Mike knows the cause", "process", {"knows": ["$mike", "ben.root_cause"]}),
    (
        "Answered within 10 minutes",
        "process",
        {"within": {"event": {"message": {"to": "laura"}}, "limit": "10m"}},
    ),
    (
        "Decided before labeling",
        "process",
        {"before": [{"decided": ["mike", "severity"]}, {"called": "POST /repos/*/issues/*/labels"}]},
    ),
]


def test_library_process_checks_judge_the_world_of_a_console_run(team, admin_user, member, demo, client):
    test = _test(team, admin_user, member, demo.url, LIBRARY)
    run = runs.launch_run(test=test, by=member)
    drain(idle_ms=0)
    run.refresh_from_db()
    assert run.summary["result"] == "pass", run.summary
    sample = Sample.objects.get(run=run)
    assert {c["id"]: c["status"] for c in sample.world_checks}["priority_before_label"] == "passed"
    results = {r.check_version.parent.name: r for r in sample.results.select_related("check_version__parent")}
    assert {name: r.outcome for name, r in results.items()} == dict.fromkeys(
        [name for name, _, _ in LIBRARY], "pass"
    )
    assert "mike learned ben.root_cause from event" in results["Mike knows the cause"].actual

    client.force_login(member)
    html = client.get(f"/runs/{run.pk}/").content.decode()
    assert "Timeline" in html
    assert "mike decided severity: p1" in html
    assert "→ reached laura" in html


def test_the_sloppy_agent_fails_a_library_never_check_citing_the_message(team, admin_user, member, demo):
    never = [
        ("No root cause to the customer", "process", {"never": {"to": "laura", "fact": "ben.root_cause"}})
    ]
    test = _test(team, admin_user, member, demo.url + "sloppy", never)
    run = runs.launch_run(test=test, by=member)
    drain(idle_ms=0)
    run.refresh_from_db()
    assert run.summary["result"] == "fail"
    result = Sample.objects.get(run=run).results.get()
    assert result.outcome == "fail"
    assert '"Thanks! The cause: Exports v2 drops jobs for beta workspa..." by orders-bot' in result.actual
    assert result.evidence, "it cites the call that wrote the message"


@pytest.mark.parametrize(
    "config, problem",
    [
        ({"revealed": ["laura.password"]}, "unknown fact laura.password: laura has no fact 'password'"),
        ({"knows": ["nobody", "laura.workspace"]}, "knows[0]: unknown ref nobody"),
        ({"decided": ["mike", "severity", "p9"]}, "'p9' is not an option of mike.severity"),
    ],
)
def test_a_library_process_check_must_fit_every_scene(team, admin_user, member, config, problem):
    with pytest.raises(ValidationFailed) as refused:
        _test(team, admin_user, member, "http://127.0.0.1:9/", [("Misfit", "process", config)])
    message = str(refused.value.errors["checks.0"])
    assert "does not fit scene 'support-triage'" in message and problem in message, message
