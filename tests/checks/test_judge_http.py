"""The ai_judge kind through checks.evaluation.make_context: the real openai client, a real loopback server.

Every failure mode of DESIGN.md "Evidence rules" (AI judge) and issue 7: pass, fail, garbage (retried
once, then error), 429 with Retry-After, 5xx, timeouts, refusals, no key, too long, truncation, votes,
dedup, and the per-team monthly budget.
"""

from __future__ import annotations

import json
from datetime import date

import pytest

from checks.evaluation import evaluate_version, make_context, result_fields
from checks.kinds import Evidence, Outcome, get_kind
from teams.budget import current_month, judge_usage_summary, record_judge_usage
from teams.models import JudgeUsage
from teams.services import set_judge_budget
from tests.support.fake_judge import JUDGE_KEY

pytestmark = pytest.mark.django_db

KIND = get_kind("ai_judge")
EVIDENCE = Evidence(
    output="Your order EC-1042 shipped yesterday. Thanks for your patience!",
    messages=({"role": "user", "content": "Where is my order EC-1042?"},),
    tool_calls=[{"name": "lookup_order", "status": "succeeded", "input": {"orderId": "EC-1042"}}],
    metadata={"authorization": "Bearer agent-secret"},
)


def config(**overrides):
    return KIND.validate_config({"prompt": "The agent answers politely and gives the order status.",
                                 **overrides})


def judge(team, evidence=EVIDENCE, cache=None, **overrides):
    ctx = make_context(team_id=team.pk, cache=cache)
    return evaluate_version("ai_judge", config(**overrides), evidence, ctx)


def usage(team) -> JudgeUsage | None:
    return JudgeUsage.objects.filter(team=team, month=current_month()).first()


# ---------------------------------------------------------------- verdicts


@pytest.mark.parametrize("mode", ["pass", "fail"])
def test_verdict_prompt_and_transparency(fake_judge, team, mode):
    fake_judge.mode = mode
    verdict = judge(team)
    assert verdict.outcome == Outcome(mode)
    assert fake_judge.requests == 1
    body = fake_judge.last_body
    assert body["model"] == "judge-mini"
    assert body["response_format"] == {"type": "json_object"}
    assert fake_judge.headers[-1]["authorization"] == f"Bearer {JUDGE_KEY}"
    assert "agent-secret" not in json.dumps(body)  # evidence metadata never reaches the judge
    details = verdict.details["judge"]
    assert details["prompt"] == body["messages"]  # exactly what was sent
    assert json.loads(details["reply"])["verdict"] == mode
    assert details["model"] == "judge-mini" and details["calls"] == 1 and details["cached"] is False
    assert details["tokens_in"] > 0 and details["tokens_out"] > 0 and details["latency_ms"] > 0
    assert verdict.explanation == json.loads(details["reply"])["reason"]
    fields = result_fields(verdict)  # what a CheckResult row stores
    assert json.loads(json.dumps(fields["details"]))["judge"]["prompt"] == body["messages"]
    row = usage(team)
    assert (row.tokens_in, row.tokens_out, row.calls) == (details["tokens_in"], details["tokens_out"], 1)


def test_garbage_then_valid_on_retry(fake_judge, team):
    fake_judge.script = ["garbage", "fail"]
    verdict = judge(team)
    assert verdict.outcome == Outcome.FAIL
    assert fake_judge.requests == 2
    retry_messages = fake_judge.bodies[1]["messages"]
    assert retry_messages[:2] == fake_judge.bodies[0]["messages"]
    assert retry_messages[2]["role"] == "assistant" and "mostly passes" in retry_messages[2]["content"]
    assert "not valid JSON" in retry_messages[3]["content"]
    vote = verdict.details["judge"]["votes"][0]
    assert vote["retried"] is True and len(vote["replies"]) == 2
    assert usage(team).calls == 2  # both calls cost tokens


def test_garbage_twice_is_an_error(fake_judge, team):
    fake_judge.mode = "garbage"
    verdict = judge(team)
    assert verdict.outcome == Outcome.ERROR
    assert "not a usable verdict twice (the answer was not valid JSON)" in verdict.explanation
    assert fake_judge.requests == 2
    assert verdict.details["judge"]["error"]


def test_rate_limited_then_success_honours_retry_after(fake_judge, team):
    fake_judge.retry_after = "1"
    fake_judge.script = ["429", "pass"]
    verdict = judge(team)
    assert verdict.outcome == Outcome.PASS
    assert fake_judge.requests == 2
    assert fake_judge.times[1] - fake_judge.times[0] >= 0.9  # waited for Retry-After, not the 0 ms backoff


@pytest.mark.parametrize(
    "mode,retries,requests,phrases",
    [
        pytest.param("429", 1, 2, ["HTTP 429", "after 2 attempts"], id="rate-limited-every-time"),
        pytest.param("hang", 1, 2, ["did not answer within 0.5 s", "after 2 attempts"], id="hanging"),
        pytest.param("401", 2, 1, ["HTTP 401: Incorrect API key provided"], id="refusal-is-not-retried"),
    ],
)
def test_a_judge_that_never_answers_usably_is_an_error(
    fake_judge, team, settings, mode, retries, requests, phrases
):
    settings.EVALCONSOLE_JUDGE_RETRIES = retries
    fake_judge.retry_after = "0"  # only a 429 sends it
    fake_judge.mode = mode
    verdict = judge(team)
    assert verdict.outcome == Outcome.ERROR
    assert all(phrase in verdict.explanation for phrase in phrases), verdict.explanation
    assert fake_judge.requests == requests


def test_server_errors_are_retried_then_error(fake_judge, team):
    fake_judge.mode = "500"
    verdict = judge(team)
    assert verdict.outcome == Outcome.ERROR
    assert fake_judge.requests == 3  # 1 + EVALCONSOLE_JUDGE_RETRIES
    assert verdict.actual.startswith("the judge call failed: the judge answered HTTP 500")
    assert "after 3 attempts" in verdict.actual
    assert usage(team) is None  # failed calls are not charged


def test_server_error_then_success(fake_judge, team):
    fake_judge.script = ["500", "500", "pass"]
    assert judge(team).outcome == Outcome.PASS
    assert fake_judge.requests == 3


def test_server_without_usage_is_charged_the_estimate(fake_judge, team):
    fake_judge.mode = "no_usage"
    verdict = judge(team)
    assert verdict.outcome == Outcome.PASS
    details = verdict.details["judge"]
    assert details["tokens_in"] == details["estimated_tokens"] > 0
    assert usage(team).tokens_in == details["tokens_in"]


def test_per_request_marker_in_the_conversation(fake_judge, team):
    evidence = Evidence(output="[[judge:fail]] no", messages=({"role": "user", "content": "hi"},))
    assert judge(team, evidence).outcome == Outcome.FAIL
    assert judge(team).outcome == Outcome.PASS


# ---------------------------------------------------------------- no key, sizes, truncation


def test_no_key_is_indeterminate_and_calls_nothing(fake_judge, team, settings):
    settings.EVALCONSOLE_JUDGE_API_KEY = ""
    verdict = judge(team)
    assert verdict.outcome == Outcome.INDETERMINATE
    assert verdict.actual == "skipped: no judge key"
    assert fake_judge.requests == 0


def long_evidence(n=30):
    messages = tuple({"role": "user" if i % 2 == 0 else "assistant",
                      "content": f"turn {i:02d} " + "words " * 40} for i in range(n))
    return Evidence(output="The order shipped.", messages=messages, tool_calls=[])


def test_too_long_without_truncation_is_an_error_and_calls_nothing(fake_judge, team, settings):
    settings.EVALCONSOLE_JUDGE_CONTEXT_TOKENS = {"tiny-judge": 1_000}
    settings.EVALCONSOLE_JUDGE_REPLY_TOKENS = 100
    verdict = judge(team, long_evidence(), model="tiny-judge")
    assert verdict.outcome == Outcome.ERROR
    details = verdict.details["judge"]
    assert details["estimated_tokens"] > 900
    assert f"the prompt is about {details['estimated_tokens']:,} tokens" in verdict.explanation
    assert ("the judge model tiny-judge has a context of 1,000 tokens (900 after keeping 100"
            in verdict.explanation)
    assert fake_judge.requests == 0


def test_truncation_with_a_tiny_context(fake_judge, team, settings):
    settings.EVALCONSOLE_JUDGE_MODEL = "tiny-judge"  # the default model, from settings
    settings.EVALCONSOLE_JUDGE_CONTEXT_TOKENS = {"tiny-judge": 1_000}
    settings.EVALCONSOLE_JUDGE_REPLY_TOKENS = 100
    verdict = judge(team, long_evidence(), truncate=True)
    assert verdict.outcome == Outcome.PASS
    assert fake_judge.requests == 1
    sent = fake_judge.last_body["messages"][1]["content"]
    details = verdict.details["judge"]
    removed = details["removed_messages"]
    assert details["truncated"] is True and removed > 0 and fake_judge.last_body["model"] == "tiny-judge"
    assert sent.startswith("Note: this conversation was truncated to fit your context window. "
                           f"The {removed} earliest entries of the conversation were removed")
    assert "turn 00" not in sent and f"turn {removed - 1:02d}" not in sent
    assert f"turn {removed:02d}" in sent and "turn 29" in sent and "The order shipped." in sent
    assert "truncated conversation" in verdict.explanation


def test_unknown_model_uses_the_default_context(fake_judge, team, settings):
    settings.EVALCONSOLE_JUDGE_DEFAULT_CONTEXT_TOKENS = 1_000
    verdict = judge(team, long_evidence(), model="some-unlisted-model")
    assert verdict.outcome == Outcome.ERROR and verdict.details["judge"]["context_tokens"] == 1_000


# ---------------------------------------------------------------- votes and dedup


def test_votes_majority_with_split(fake_judge, team):
    fake_judge.script = ["pass", "fail", "pass"]
    verdict = judge(team, votes=3)
    assert verdict.outcome == Outcome.PASS
    assert fake_judge.requests == 3
    assert verdict.explanation.startswith("Pass by 2/3 judge votes: ")
    assert verdict.details["judge"]["split"] == "2/3"
    assert [v["verdict"] for v in verdict.details["judge"]["votes"]] == ["pass", "fail", "pass"]
    assert usage(team).calls == 3


def test_identical_calls_share_one_request_within_a_cache(fake_judge, team):
    cache: dict = {}
    first = judge(team, cache=cache)
    second = judge(team, cache=cache)
    assert fake_judge.requests == 1
    assert second.outcome == first.outcome and second.details["judge"]["cached"] is True
    judge(team, Evidence(output="Something else."), cache=cache)
    assert fake_judge.requests == 2
    judge(team)  # a new context (another run) asks again
    assert fake_judge.requests == 3
    assert usage(team).calls == 3  # the cached answer cost nothing


# ---------------------------------------------------------------- budget


def test_budget_zero_is_indeterminate_without_a_call(fake_judge, team):
    set_judge_budget(team=team, by=None, tokens=0)
    verdict = judge(team)
    assert verdict.outcome == Outcome.INDETERMINATE
    assert verdict.actual == "skipped: judge budget exhausted"
    assert fake_judge.requests == 0


def test_budget_runs_out_after_spending(fake_judge, team, other_team):
    fake_judge.usage_in, fake_judge.usage_out = 400, 100
    first = judge(team)
    assert first.outcome == Outcome.PASS
    spent = usage(team)
    assert (spent.tokens_in, spent.tokens_out, spent.calls) == (400, 100, 1)
    set_judge_budget(team=team, by=None, tokens=500)
    verdict = judge(team, Evidence(output="Another answer."))
    assert verdict.outcome == Outcome.INDETERMINATE and verdict.actual == "skipped: judge budget exhausted"
    assert "500 of 500 tokens used" in verdict.explanation
    assert fake_judge.requests == 1
    assert judge(other_team).outcome == Outcome.PASS  # budgets are per team
    assert fake_judge.requests == 2


def test_a_call_that_would_overspend_is_refused(fake_judge, team):
    set_judge_budget(team=team, by=None, tokens=50)  # less than this prompt's estimate
    verdict = judge(team)
    assert verdict.outcome == Outcome.INDETERMINATE and fake_judge.requests == 0
    assert "this call needs about" in verdict.explanation


def test_site_default_budget_applies_when_the_team_has_none(fake_judge, team, settings):
    settings.EVALCONSOLE_JUDGE_MONTHLY_TOKEN_BUDGET = 10
    assert team.judge_monthly_token_budget is None
    assert judge(team).outcome == Outcome.INDETERMINATE
    set_judge_budget(team=team, by=None, tokens=100_000)
    assert judge(team).outcome == Outcome.PASS


def test_last_months_usage_does_not_count(fake_judge, team):
    set_judge_budget(team=team, by=None, tokens=1_000)
    record_judge_usage(team_id=team.pk, tokens_in=5_000, tokens_out=0, month=date(2000, 1, 1))
    assert judge(team).outcome == Outcome.PASS


def test_usage_accumulates_with_f_expressions(team):
    for _ in range(3):
        record_judge_usage(team_id=team.pk, tokens_in=10, tokens_out=2)
    summary = judge_usage_summary(team)
    assert (summary.tokens_in, summary.tokens_out, summary.calls, summary.used) == (30, 6, 3, 36)
    assert JudgeUsage.objects.filter(team=team).count() == 1
