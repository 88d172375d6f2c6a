"""The ai_judge kind on its own: config, prompt building, truncation, votes, parsing, dedup. No database.

The judge here is a scripted object speaking the judge protocol (checks/kinds/judging.py); the real
client against a real HTTP server is covered in test_judge_http.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from checks.kinds import ConfigError, Context, Evidence, Outcome, evaluate, get_kind
from checks.kinds.ai_judge import (
    SKIPPED_BUDGET,
    SKIPPED_NO_KEY,
    build_prompt,
    conversation_entries,
    fit_prompt,
    majority,
    parse_verdict,
)
from checks.kinds.judging import (
    DEFAULT_CONTEXT_TOKENS,
    BudgetExhausted,
    JudgeCallError,
    JudgeReply,
    JudgeUnavailable,
    context_tokens_for,
    estimate_messages_tokens,
    estimate_tokens,
)

REPO = Path(__file__).resolve().parents[2]
KIND = get_kind("ai_judge")

DETAIL_KEYS = {
    "model", "prompt", "reply", "tokens_in", "tokens_out", "latency_ms", "truncated", "removed_messages",
    "votes", "cached", "calls", "estimated_tokens", "context_tokens", "limit_tokens", "split", "error",
}


class ScriptedJudge:
    """Answers from a list: a text (200 reply) or an exception instance to raise."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.calls: list[dict] = []

    def complete(self, *, model, messages, estimated_tokens=0):
        self.calls.append({"model": model, "messages": messages, "estimated_tokens": estimated_tokens})
        answer = self.answers.pop(0) if self.answers else verdict_json("pass")
        if isinstance(answer, BaseException):
            raise answer
        return JudgeReply(text=answer, tokens_in=100, tokens_out=10, latency_ms=5.0, model=model)


def verdict_json(verdict: str, reason: str = "Because.") -> str:
    return json.dumps({"verdict": verdict, "reason": reason})


def config(**overrides):
    return KIND.validate_config({"prompt": "The agent must be polite.", **overrides})


def ctx(judge, **settings):
    return Context(judge=judge, cache={}, settings={"judge_model": "judge-x", **settings})


EVIDENCE = Evidence(
    output="Your order EC-1042 has shipped.",
    messages=({"role": "user", "content": "Where is my order EC-1042?"},),
    tool_calls=[{"name": "lookup_order", "status": "succeeded", "input": {"orderId": "EC-1042"},
                 "output": {"status": "shipped"}}],
    metadata={"api_key": "sk-secret-in-metadata"},
)


# ---------------------------------------------------------------- config


def test_config_defaults_and_schema():
    assert config() == {"prompt": "The agent must be polite.", "model": None, "truncate": False, "votes": 1}
    assert config(model="  gpt-4o  ", truncate=True, votes=3)["model"] == "gpt-4o"
    assert config(model="")["model"] is None
    assert [f.name for f in KIND.fields] == ["prompt", "model", "truncate", "votes", "examples"]
    assert KIND.json_schema["properties"]["votes"]["enum"] == [1, 3, 5]
    assert KIND.needs == {"output", "messages", "tool_calls"}


EXAMPLE = {"conversation": "user: hi\nFinal output: go away", "verdict": "fail", "reason": "Rude."}


def test_examples_are_optional_and_an_empty_list_leaves_the_config_as_before():
    # A config saved before examples existed normalises to itself: an edit that adds none makes no version.
    assert "examples" not in config()
    assert "examples" not in config(examples=[]) and "examples" not in config(examples=None)
    assert config(examples=[{**EXAMPLE, "verdict": " FAIL "}])["examples"] == [EXAMPLE]
    assert config(examples=[{"conversation": "c", "verdict": "pass"}])["examples"] == [
        {"conversation": "c", "verdict": "pass", "reason": ""}
    ]


@pytest.mark.parametrize(("examples", "field", "message"), [
    ("nope", "examples", "must be a list"),
    ([EXAMPLE] * 11, "examples", "at most 10 examples"),
    (["x"], "examples.0", "must be an object"),
    ([{**EXAMPLE, "verdict": "maybe"}], "examples.0.verdict", '"pass" or "fail"'),
    ([{**EXAMPLE, "conversation": " "}], "examples.0.conversation", "non-empty"),
    ([{**EXAMPLE, "conversation": "x" * 4001}], "examples.0.conversation", "at most 4,000"),
    ([EXAMPLE, {**EXAMPLE, "extra": 1}], "examples.1.extra", "unknown key"),
])
def test_bad_examples_are_refused_naming_the_example(examples, field, message):
    with pytest.raises(ConfigError) as caught:
        config(examples=examples)
    assert message in caught.value.errors[field]


def test_examples_go_into_the_judges_instructions_after_the_rubric():
    judge = ScriptedJudge(verdict_json("fail", "Rude."))
    verdict = evaluate("ai_judge", config(examples=[EXAMPLE]), EVIDENCE, ctx(judge))
    system = judge.calls[0]["messages"][0]["content"]
    assert system.index("The agent must be polite.") < system.index("Example 1: verdict fail (Rude.)")
    assert "user: hi\nFinal output: go away" in system
    assert system.rstrip().endswith('"reason": "one sentence explaining the verdict"}')
    assert verdict.details["judge"]["prompt"][0]["content"] == system  # shown on the run page
    plain = ScriptedJudge()
    evaluate("ai_judge", config(), EVIDENCE, ctx(plain))
    assert "Example" not in plain.calls[0]["messages"][0]["content"]


@pytest.mark.parametrize(("raw", "field", "message"), [
    ({}, "prompt", "required"),
    ({"prompt": "   "}, "prompt", "must not be empty"),
    ({"prompt": "x" * 20_001}, "prompt", "at most 20,000 characters"),
    ({"prompt": "x", "votes": 2}, "votes", "odd number from 1 to 5"),
    ({"prompt": "x", "votes": 7}, "votes", "odd number"),
    ({"prompt": "x", "votes": "3"}, "votes", "whole number"),
    ({"prompt": "x", "truncate": "yes"}, "truncate", "true or false"),
    ({"prompt": "x", "model": "m" * 201}, "model", "at most 200"),
    ({"prompt": "x", "temperature": 0}, "temperature", "unknown field"),
])
def test_config_errors_name_the_field(raw, field, message):
    with pytest.raises(ConfigError) as caught:
        KIND.validate_config(raw)
    assert field in caught.value.errors
    assert message in caught.value.errors[field]


def test_config_accepts_the_limit():
    assert KIND.validate_config({"prompt": "x" * 20_000, "votes": 5})["votes"] == 5


# ---------------------------------------------------------------- prompt


def test_prompt_holds_rubric_conversation_tool_calls_and_output_but_no_metadata():
    judge = ScriptedJudge(verdict_json("pass", "It was polite."))
    verdict = evaluate("ai_judge", config(), EVIDENCE, ctx(judge))
    sent = judge.calls[0]["messages"]
    assert [m["role"] for m in sent] == ["system", "user"]
    assert "The agent must be polite." in sent[0]["content"]
    assert '"verdict": "pass" or "fail"' in sent[0]["content"]
    user = sent[1]["content"]
    assert "user: Where is my order EC-1042?" in user
    assert ('[tool call 0] lookup_order status=succeeded input={"orderId": "EC-1042"} '
            'output={"status": "shipped"}') in user
    assert "Final output of the agent:\n<<<\nYour order EC-1042 has shipped.\n>>>" in user
    assert "sk-secret" not in json.dumps(sent)
    assert "truncated" not in user
    assert judge.calls[0]["model"] == "judge-x"
    assert judge.calls[0]["estimated_tokens"] == estimate_messages_tokens(sent)
    assert verdict.outcome == Outcome.PASS
    assert verdict.explanation == "It was polite."
    assert verdict.evidence == (0,)
    details = verdict.details["judge"]
    assert set(details) == DETAIL_KEYS
    assert details["prompt"] == sent
    assert details["reply"] == verdict_json("pass", "It was polite.")
    assert (details["tokens_in"], details["tokens_out"], details["calls"]) == (100, 10, 1)
    assert details["truncated"] is False and details["cached"] is False and details["split"] == ""
    json.dumps(verdict.as_dict())


def test_final_assistant_message_is_not_repeated_and_tool_activity_notes():
    evidence = Evidence(output="Hi!", messages=[{"role": "user", "content": "Hello"},
                                                {"role": "assistant", "content": "Hi!"}])
    judge = ScriptedJudge()
    evaluate("ai_judge", config(), evidence, ctx(judge))
    user = judge.calls[0]["messages"][1]["content"]
    assert "assistant: Hi!" not in user and "user: Hello" in user
    assert "Tool calls: not reported by the agent." in user
    evaluate("ai_judge", config(), Evidence(output="", tool_calls=[]), ctx(judge))
    assert "Tool calls: none." in judge.calls[1]["messages"][1]["content"]
    assert "(no earlier messages)" in judge.calls[1]["messages"][1]["content"]


def test_model_from_config_overrides_the_default():
    judge = ScriptedJudge()
    evaluate("ai_judge", config(model="other-judge"), EVIDENCE, ctx(judge))
    assert judge.calls[0]["model"] == "other-judge"


# ---------------------------------------------------------------- sizes and truncation


def test_estimates_and_context_table():
    assert estimate_tokens("") == 0 and estimate_tokens("abcd") == 1 and estimate_tokens("abcde") == 2
    assert context_tokens_for("gpt-4o-2024-08-06") == 128_000
    assert context_tokens_for("gpt-4.1-mini") == 1_047_576
    assert context_tokens_for("gpt-4") == 8_192
    assert context_tokens_for("unknown-model") == DEFAULT_CONTEXT_TOKENS
    assert context_tokens_for("unknown-model", default=4096) == 4096
    assert context_tokens_for("tiny", {"tiny": 300}) == 300
    assert context_tokens_for("gpt-4o", {"gpt-4o": 1000}) == 1000


def long_conversation(n=20, size=200):
    messages = tuple({"role": "user" if i % 2 == 0 else "assistant",
                      "content": f"message {i:02d} " + "x" * size} for i in range(n))
    return Evidence(output="final answer", messages=messages, tool_calls=[])


def test_too_long_without_truncation_is_an_error_naming_size_and_limit():
    judge = ScriptedJudge()
    verdict = evaluate("ai_judge", config(), long_conversation(),
                       ctx(judge, judge_context_tokens={"judge-x": 1000}, judge_reply_tokens=100))
    assert verdict.outcome == Outcome.ERROR
    assert judge.calls == []  # nothing was sent
    details = verdict.details["judge"]
    assert details["context_tokens"] == 1000 and details["limit_tokens"] == 900
    assert f"about {details['estimated_tokens']:,} tokens" in verdict.explanation
    assert "context of 1,000 tokens (900 after keeping 100 for the answer)" in verdict.explanation
    assert "turn on truncation" in verdict.explanation


def test_truncation_drops_the_oldest_messages_and_tells_the_judge():
    judge = ScriptedJudge(verdict_json("pass", "Fine."))
    evidence = long_conversation()
    verdict = evaluate("ai_judge", config(truncate=True), evidence,
                       ctx(judge, judge_context_tokens={"judge-x": 1000}, judge_reply_tokens=100))
    assert verdict.outcome == Outcome.PASS
    details = verdict.details["judge"]
    removed = details["removed_messages"]
    assert details["truncated"] is True and 0 < removed < 20
    user = judge.calls[0]["messages"][1]["content"]
    assert user.startswith(f"Note: this conversation was truncated to fit your context window. The {removed} "
                           f"earliest entries of the conversation were removed")
    assert "message 00" not in user and f"message {removed - 1:02d}" not in user
    assert f"message {removed:02d}" in user and "message 19" in user  # the newest are kept, in order
    assert estimate_messages_tokens(judge.calls[0]["messages"]) <= 900
    # fewest removals: removing one entry fewer would not fit
    entries, note, output = conversation_entries(evidence)
    one_less = build_prompt("The agent must be polite.", entries[removed - 1:], removed - 1, note, output)
    assert estimate_messages_tokens(one_less) > 900
    fitted = fit_prompt("The agent must be polite.", evidence, 900, True)[1]
    assert fitted.messages == judge.calls[0]["messages"]
    assert f"the {removed} earliest entries were removed" in verdict.explanation


def test_truncation_that_cannot_fit_is_an_error():
    judge = ScriptedJudge()
    evidence = Evidence(output="y" * 8000, messages=({"role": "user", "content": "hi"},))
    verdict = evaluate("ai_judge", config(truncate=True), evidence,
                       ctx(judge, judge_context_tokens={"judge-x": 1000}, judge_reply_tokens=100))
    assert verdict.outcome == Outcome.ERROR and judge.calls == []
    assert "even with all 1 earlier conversation entries removed" in verdict.explanation


def test_unknown_model_uses_the_default_context_setting():
    judge = ScriptedJudge()
    verdict = evaluate("ai_judge", config(), long_conversation(),
                       ctx(judge, judge_default_context_tokens=800))
    assert verdict.outcome == Outcome.ERROR
    assert verdict.details["judge"]["context_tokens"] == 800


# ---------------------------------------------------------------- parsing, retries and votes


@pytest.mark.parametrize(("text", "verdict", "problem"), [
    ('{"verdict": "pass", "reason": "ok"}', "pass", ""),
    ('{"verdict": "FAIL", "reason": "  too   rude "}', "fail", ""),
    ('```json\n{"verdict": "pass", "reason": "ok"}\n```', "pass", ""),
    ("", "", "the answer was empty"),
    ("pass", "", "not valid JSON"),
    ("[1]", "", "a list, not a JSON object"),
    ('{"verdict": "maybe", "reason": "x"}', "", "'verdict' must be"),
    ('{"reason": "x"}', "", "not missing"),
    ('{"verdict": "pass"}', "", "'reason' must be a non-empty string"),
    ('{"verdict": "pass", "reason": ""}', "", "'reason' must be a non-empty string"),
])
def test_parse_verdict(text, verdict, problem):
    got_verdict, reason, got_problem = parse_verdict(text)
    assert got_verdict == verdict
    if problem:
        assert problem in got_problem
    else:
        assert got_problem == "" and reason and "  " not in reason


def test_unparseable_answer_is_retried_once_with_a_correction():
    judge = ScriptedJudge("not json", verdict_json("fail", "It was rude."))
    verdict = evaluate("ai_judge", config(), EVIDENCE, ctx(judge))
    assert verdict.outcome == Outcome.FAIL and verdict.explanation == "It was rude."
    assert len(judge.calls) == 2
    retry = judge.calls[1]["messages"]
    assert retry[:2] == judge.calls[0]["messages"]
    assert retry[2] == {"role": "assistant", "content": "not json"}
    assert "not valid JSON" in retry[3]["content"]
    vote = verdict.details["judge"]["votes"][0]
    assert vote["retried"] is True and vote["replies"] == ["not json", verdict_json("fail", "It was rude.")]
    assert vote["retry_prompt"] == retry[2:]
    assert verdict.details["judge"]["calls"] == 2 and verdict.details["judge"]["tokens_in"] == 200


def test_unparseable_twice_is_an_error():
    judge = ScriptedJudge("nope", '{"verdict": "maybe", "reason": "x"}')
    verdict = evaluate("ai_judge", config(), EVIDENCE, ctx(judge))
    assert verdict.outcome == Outcome.ERROR
    assert "not a usable verdict twice" in verdict.explanation and "'verdict' must be" in verdict.explanation
    assert len(judge.calls) == 2


def test_majority():
    assert majority(["pass"]) == ("pass", 1)
    assert majority(["pass", "fail", "pass"]) == ("pass", 2)
    assert majority(["fail", "fail", "pass", "pass", "fail"]) == ("fail", 3)


def test_votes_take_the_majority_and_report_the_split():
    judge = ScriptedJudge(verdict_json("pass", "Polite."), verdict_json("fail", "Curt."),
                          verdict_json("pass", "Courteous."))
    verdict = evaluate("ai_judge", config(votes=3), EVIDENCE, ctx(judge))
    assert verdict.outcome == Outcome.PASS
    assert verdict.explanation == "Pass by 2/3 judge votes: Polite."
    details = verdict.details["judge"]
    assert details["split"] == "2/3" and [v["verdict"] for v in details["votes"]] == ["pass", "fail", "pass"]
    assert details["calls"] == 3 and len(judge.calls) == 3
    assert all(call["messages"] == details["prompt"] for call in judge.calls)


def test_votes_fail_majority():
    judge = ScriptedJudge(*(verdict_json(v) for v in ["fail", "pass", "fail", "pass", "fail"]))
    verdict = evaluate("ai_judge", config(votes=5), EVIDENCE, ctx(judge))
    assert verdict.outcome == Outcome.FAIL and verdict.explanation.startswith("Fail by 3/5 judge votes:")


# ---------------------------------------------------------------- skipped and failed calls


def test_no_judge_is_indeterminate_no_key():
    no_judge = Context(judge=None, cache={}, settings={"judge_model": "m"})
    verdict = evaluate("ai_judge", config(), EVIDENCE, no_judge)
    assert verdict.outcome == Outcome.INDETERMINATE and verdict.actual == SKIPPED_NO_KEY
    assert evaluate("ai_judge", config(), EVIDENCE).outcome == Outcome.INDETERMINATE  # no context at all
    assert set(verdict.details["judge"]) == DETAIL_KEYS


def test_budget_exhausted_is_indeterminate():
    judge = ScriptedJudge(BudgetExhausted("10 of 10 tokens used"))
    verdict = evaluate("ai_judge", config(), EVIDENCE, ctx(judge))
    assert verdict.outcome == Outcome.INDETERMINATE and verdict.actual == SKIPPED_BUDGET
    assert "10 of 10 tokens used" in verdict.explanation


def test_other_unavailability_is_indeterminate_and_call_errors_are_errors():
    verdict = evaluate("ai_judge", config(), EVIDENCE, ctx(ScriptedJudge(JudgeUnavailable("judge paused"))))
    assert verdict.outcome == Outcome.INDETERMINATE and verdict.actual == "skipped: judge paused"
    failing = ScriptedJudge(JudgeCallError("HTTP 500, after 3 attempts"))
    verdict = evaluate("ai_judge", config(), EVIDENCE, ctx(failing))
    assert verdict.outcome == Outcome.ERROR
    assert verdict.actual == "the judge call failed: HTTP 500, after 3 attempts"


def test_a_failing_vote_errors_the_check():
    judge = ScriptedJudge(verdict_json("pass"), JudgeCallError("timeout"))
    verdict = evaluate("ai_judge", config(votes=3), EVIDENCE, ctx(judge))
    assert verdict.outcome == Outcome.ERROR and len(verdict.details["judge"]["votes"]) == 1


# ---------------------------------------------------------------- dedup


def test_identical_calls_in_one_cache_are_made_once():
    judge = ScriptedJudge(verdict_json("fail", "Rude."), verdict_json("pass", "Polite."))
    context = ctx(judge)
    first = evaluate("ai_judge", config(), EVIDENCE, context)
    second = evaluate("ai_judge", config(), EVIDENCE, context)
    assert len(judge.calls) == 1
    assert second.outcome == first.outcome == Outcome.FAIL and second.explanation == first.explanation
    assert second.details["judge"]["cached"] is True and first.details["judge"]["cached"] is False
    assert second.details["judge"]["prompt"] == first.details["judge"]["prompt"]
    # a different rubric, model, vote count or conversation is a new call
    evaluate("ai_judge", config(prompt="Be brief."), EVIDENCE, context)
    evaluate("ai_judge", config(model="other"), EVIDENCE, context)
    evaluate("ai_judge", config(), Evidence(output="other"), context)
    assert len(judge.calls) == 4
    # another cache (another run) calls again
    evaluate("ai_judge", config(), EVIDENCE, ctx(judge))
    assert len(judge.calls) == 5


def test_failures_are_not_cached():
    judge = ScriptedJudge(JudgeCallError("boom"), verdict_json("pass"))
    context = ctx(judge)
    assert evaluate("ai_judge", config(), EVIDENCE, context).outcome == Outcome.ERROR
    assert evaluate("ai_judge", config(), EVIDENCE, context).outcome == Outcome.PASS
    assert len(judge.calls) == 2


def test_the_kind_package_stays_pure():
    code = ("import sys, checks.kinds, checks.kinds.ai_judge, checks.kinds.judging; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('django', 'openai', 'httpx')]; "
            "print(bad); sys.exit(1 if bad else 0)")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
