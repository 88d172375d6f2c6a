"""Review fixtures: an AI judge check and finished runs whose samples it judged (rows as the worker writes
them, without calling an agent)."""

from __future__ import annotations

import pytest

from tests import factories


@pytest.fixture
def judge_check(agent, member):
    return factories.check(
        agent, member, kind="ai_judge", name="Polite", config={"prompt": "The agent is polite."}
    )


def judged_run(test, check, outcomes, *, conversation: str = "answer"):
    """A completed run of `test` with one done sample per outcome, each judged by `check`'s current
    version with that outcome (and a judge prompt in its details, as the ai_judge kind records it)."""
    from runs.models import CheckResult, Run, RunCheck, Sample

    version = type(check).objects.get(pk=check.pk).current_version
    run = Run.objects.create(
        agent=test.test_set.agent,
        test=test,
        test_version=test.current_version,
        status=Run.Status.COMPLETED,
        result="pass",
        total_samples=len(outcomes),
        done_samples=len(outcomes),
    )
    RunCheck.objects.create(run=run, check_version=version)
    samples = Sample.objects.bulk_create(
        [
            Sample(
                run=run,
                scenario_index=0,
                sample_index=i,
                status=Sample.Status.DONE,
                outcome=outcome,
                output=f"{conversation} {i}",
                transcript=[
                    {"role": "user", "content": f"question {i}"},
                    {"role": "assistant", "content": f"{conversation} {i}"},
                ],
                tool_calls=[{"name": "lookup_order", "status": "succeeded", "input": {"orderId": f"EC-{i}"}}],
            )
            for i, outcome in enumerate(outcomes)
        ]
    )
    CheckResult.objects.bulk_create(
        [
            CheckResult(
                sample=sample,
                check_version=version,
                outcome=sample.outcome,
                explanation=f"The judge said {sample.outcome} of sample {sample.sample_index}.",
                details={
                    "judge": {
                        "prompt": [
                            {"role": "system", "content": "You are an impartial evaluator."},
                            {
                                "role": "user",
                                "content": "Conversation (oldest first):\n"
                                f"user: question {sample.sample_index}"
                                f"\n\nFinal output of the agent:\n<<<\n{sample.output}\n>>>",
                            },
                        ]
                    }
                },
            )
            for sample in samples
        ]
    )
    return run


@pytest.fixture
def judged_test(agent, member, judge_check):
    return factories.test(agent, member, checks=[judge_check], name="Politeness")


@pytest.fixture
def make_run(judged_test, judge_check):
    def make(outcomes, **kwargs):
        return judged_run(judged_test, judge_check, outcomes, **kwargs)

    return make


@pytest.fixture
def queue(team, member):
    from reviews.services import create_queue

    return create_queue(team=team, by=member, name="Politeness review")
