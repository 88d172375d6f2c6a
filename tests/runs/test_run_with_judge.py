"""Runs whose only required check is an AI judge: launched with runs.services.launch_run and executed by the
synchronous django-q2 task (tests/settings.py), against a fake agent and a fake judge on loopback.

Also the same rule through checks.evaluation + runs.outcomes directly (what the executor does per sample).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from checks.evaluation import evaluate_version, make_context
from checks.kinds import Evidence, Outcome
from runs.models import CheckResult, Run
from runs.outcomes import SampleRecord, ScenarioSpec, sample_outcome, summarise_run
from tests.support.fake_agent import FakeAgent

# The drain reads and writes from its own connections (a DB thread, judge threads): rows must be committed.
pytestmark = pytest.mark.django_db(transaction=True)

RUBRIC = "The agent tells the customer the status of their order."


@pytest.fixture(scope="module")
def agent_server() -> Iterator[FakeAgent]:
    with FakeAgent(latency_ms=0) as server:
        yield server


@pytest.fixture
def judged_test(team, admin_user, member, agent_server):
    from agents.services import create_agent
    from checks.services import create_check, create_test, create_test_set

    agent_server.reset()
    agent = create_agent(team=team, by=admin_user, name="Order bot", endpoint_url=agent_server.url,
                         timeout_s=5.0, retries=0)
    check = create_check(agent=agent, by=member, name="Gives the status", kind="ai_judge",
                         config={"prompt": RUBRIC})
    test_set = create_test_set(agent=agent, by=member, name="Orders")
    return create_test(
        test_set=test_set, by=member, name="Order status", scenarios=["Where is my order EC-1042?"],
        checks=[{"check": check.pk, "required": True}], samples_per_scenario=2, min_valid_per_scenario=1,
        required_pass_rate=100,
    )


def launch_and_finish(test, by) -> Run:
    """Launch; after commit the drain task runs synchronously (django-q2 sync mode) and finishes the run."""
    from runs.services import launch_run

    run = launch_run(test=test, by=by)
    run.refresh_from_db()
    assert run.status == Run.Status.COMPLETED, (run.status, run.summary)
    return run


def test_run_with_only_a_judge_and_no_key_is_indeterminate(judged_test, member, settings):
    settings.EVALCONSOLE_JUDGE_API_KEY = ""
    run = launch_and_finish(judged_test, member)
    assert run.result == Outcome.INDETERMINATE  # not pass
    results = list(CheckResult.objects.filter(sample__run=run))
    assert len(results) == 2
    for result in results:
        assert result.outcome == Outcome.INDETERMINATE
        assert result.actual == "skipped: no judge key"
        assert result.details["judge"]["calls"] == 0


@pytest.mark.parametrize(("mode", "expected"), [("pass", Outcome.PASS), ("fail", Outcome.FAIL)])
def test_run_judged_through_the_real_client(judged_test, member, fake_judge, mode, expected):
    fake_judge.mode = mode
    run = launch_and_finish(judged_test, member)
    assert run.result == expected
    results = list(CheckResult.objects.filter(sample__run=run))
    assert {r.outcome for r in results} == {expected}
    judge = results[0].details["judge"]
    assert judge["prompt"] in [body["messages"] for body in fake_judge.bodies]
    assert "Where is my order EC-1042?" in judge["prompt"][1]["content"]
    assert {"model", "prompt", "reply", "tokens_in", "tokens_out", "latency_ms", "truncated",
            "removed_messages", "votes", "cached"} <= set(judge)


def test_identical_judge_calls_within_a_run_are_made_once(judged_test, member, fake_judge):
    fake_judge.mode = "pass"
    run = launch_and_finish(judged_test, member)  # 2 samples, same scenario, same deterministic reply
    assert run.result == Outcome.PASS
    assert fake_judge.requests == 1
    cached = sorted(r.details["judge"]["cached"] for r in CheckResult.objects.filter(sample__run=run))
    assert cached == [False, True]


def test_budget_exhausted_run_is_indeterminate(judged_test, member, team, fake_judge):
    from teams.services import set_judge_budget

    set_judge_budget(team=team, by=None, tokens=0)
    run = launch_and_finish(judged_test, member)
    assert run.result == Outcome.INDETERMINATE
    assert fake_judge.requests == 0
    assert set(CheckResult.objects.filter(sample__run=run).values_list("actual", flat=True)) == {
        "skipped: judge budget exhausted"}


def test_no_key_through_evaluation_and_outcome_rules(judged_test, settings):
    """The executor's per-sample path, without the executor: evaluate, sample outcome, run summary."""
    settings.EVALCONSOLE_JUDGE_API_KEY = ""
    check = judged_test.test_set.agent.checks.get(kind="ai_judge")
    version = check.current_version
    ctx = make_context(team_id=judged_test.test_set.agent.team_id)
    samples = []
    for _ in range(2):
        evidence = Evidence(output="It shipped.", messages=({"role": "user", "content": "Where is it?"},))
        verdict = evaluate_version(version.kind, version.config, evidence, ctx)
        assert verdict.outcome == Outcome.INDETERMINATE
        samples.append(SampleRecord(scenario_index=0, outcome=sample_outcome([(verdict.outcome, True)])))
    summary = summarise_run(samples, [ScenarioSpec(min_valid=1, required_pass_rate=100)])
    assert summary.result == Outcome.INDETERMINATE
