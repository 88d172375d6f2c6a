"""People in worlds and the process checks (WORLDS.md "People", "Checks"; the reference's Process
checks, Message selectors and Milestones): every example of the reference's block passes on a world
where the agent did it and fails where it did not, from the engine's records, never from model text.
Engine only: the agent's calls go to the world as the HTTP layer hands them over."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.scenes import REFERENCE_PROCESS_CHECKS
from worlds.engine import load_scene
from worlds.engine.evaluate import evaluate
from worlds.engine.http import Request
from worlds.engine.process import milestone
from worlds.engine.world import World

SCENES = Path(__file__).parent / "scenes"
SCENE = (SCENES / "people.yaml").read_text() + REFERENCE_PROCESS_CHECKS
# The reference's process check examples, word for word: the checks of SCENE.
REFERENCE = [check.id for check in load_scene(SCENE, "people.yaml").checks]


class Agent:
    """The agent's side: real Slack and GitHub API calls to the world, one per simulated minute."""

    def __init__(self, world: World) -> None:
        self.world = world

    def slack(self, method: str, **args):
        headers = {
            "Authorization": f"Bearer {self.world.credentials['slack']['token']}",
            "Content-Type": "application/json",
        }
        response = self.world.call(
            "slack", Request.make("POST", f"/api/{method}", headers=headers, body=json.dumps(args).encode())
        )
        assert response.body["ok"], response.body
        return response.body

    def post(self, channel: str, text: str, *, thread_of: str | None = None):
        args = {"channel": self.world.ids.get(channel, channel), "text": text}
        if thread_of:
            args["thread_ts"] = self.world.ids[thread_of]
        return self.slack("chat.postMessage", **args)["message"]

    def dm(self, user: str, text: str):
        channel = self.slack("conversations.open", users=self.world.ids[user])["channel"]["id"]
        return self.post(channel, text)

    def github(self, method: str, path: str, body=None):
        headers = {
            "Authorization": f"token {self.world.credentials['github']['token']}",
            "Content-Type": "application/json",
        }
        data = json.dumps(body).encode() if body is not None else b""
        response = self.world.call("github", Request.make(method, path, headers=headers, body=data))
        assert response.status < 400, response.body
        return response.body

    def wait(self):
        """A read: lets a minute pass (people answer a call later)."""
        return self.slack("auth.test")


def world(text: str = SCENE) -> tuple[World, Agent]:
    built = World.build(load_scene(text, "people.yaml"))
    return built, Agent(built)


def good_run(agent: Agent) -> None:
    """What a good agent does, in order."""
    agent.post(
        "slack_support",
        "Sorry about that! Which workspace is it, and is the beta flag on?",
        thread_of="slack_question",
    )
    agent.wait()  # Laura answers both questions in her thread
    agent.post(
        "slack_eng",
        "Ben: a customer on acme-eu-2 has no CSV exports; the beta flag is on. "
        "What's the cause, and is there a workaround?",
    )
    agent.wait()  # Ben reveals both facts, and decides to fix it now (he knows the flag is on)
    agent.dm(
        "slack_mike",
        "Ben found that exports v2 drops jobs for beta workspaces. What severity should we give it?",
    )
    agent.wait()  # Mike: P1
    issue = agent.github(
        "POST", "/repos/acme/orders/issues", {"title": "Exports v2 drops beta jobs", "body": "See #eng."}
    )
    agent.github("POST", f"/repos/acme/orders/issues/{issue['number']}/labels", {"labels": ["p1"]})
    agent.post(
        "slack_support",
        "Until the fix ships, turning the beta flag off brings exports back.",
        thread_of="slack_question",
    )


def results(built: World) -> dict[str, dict]:
    built.end()
    return {c["id"]: c for c in evaluate(built)["checks"]}


def thread_texts(built: World, ref: str) -> list[tuple[str, str]]:
    users = built.states["slack"]["users"]
    root = built.ids[ref]
    return [
        (users[m["user"]]["name"], m["versions"][-1])
        for m in built.states["slack"]["messages"]
        if m.get("thread_ts") == root and m["ts"] != root
    ]


# -- a good agent passes every example ------------------------------------------------------------


def test_a_good_agent_passes_every_reference_example():
    built, agent = world()
    good_run(agent)
    checks = results(built)
    assert len(REFERENCE) == 8
    assert {i: checks[i]["status"] for i in REFERENCE} == dict.fromkeys(REFERENCE, "passed")
    assert evaluate(built)["outcome"] == "pass"


def test_people_answer_in_the_thread_where_they_were_asked_a_call_later():
    built, agent = world()
    good_run(agent)
    assert thread_texts(built, "slack_question")[:3] == [
        ("orders-bot", "Sorry about that! Which workspace is it, and is the beta flag on?"),
        ("laura", "It's the acme-eu-2 workspace."),
        ("laura", "Yes, the beta exports flag is on."),
    ], "one reply per asked fact, in the order the facts are declared"
    revealed = built.events.of_type("revealed")
    assert [(e.data["fact"], e.at.strftime("%H:%M")) for e in revealed][:2] == [
        ("laura.workspace", "09:02"),
        ("laura.beta_on", "09:02"),
    ], "revealed when she answers: the message at 09:01 plus reply_after (the clock's per_call)"
    decided = {e.data["person"]: e for e in built.events.of_type("decided")}
    assert decided["ben"].data["option"] == "now", "ben decided once he knew the flag is on, unasked"
    assert decided["mike"].data == {**decided["mike"].data, "decision": "severity", "option": "p1"}
    mike_dm = [m for m in built.states["slack"]["messages"] if m["versions"][-1] == "Make it P1."]
    assert len(mike_dm) == 1 and built.states["slack"]["channels"][mike_dm[0]["channel"]]["is_im"]


def test_peoples_messages_never_reach_the_trace_and_never_end_the_trial():
    built, agent = world()
    good_run(agent)
    assert len(built.trace) == built.clock.calls == 10
    assert {e.tool for e in built.trace} == {"slack", "github"}
    people_messages = [e for e in built.events.of_type("message") if e.data.get("seq") is None]
    assert len(people_messages) == 6, "laura x2, ben x3, mike x1: events, not trace entries"
    assert built.ended is None


def test_learning_is_recorded_when_the_message_reached_the_person_with_its_source():
    built, agent = world()
    good_run(agent)
    learned = {(e.data["person"], e.data["fact"]): e for e in built.events.of_type("learned")}
    assert learned[("ben", "laura.beta_on")].data["source"] == "agent"
    assert learned[("ben", "laura.beta_on")].at.strftime("%H:%M") == "09:03"
    assert learned[("mike", "ben.root_cause")].at.strftime("%H:%M") == "09:06"
    assert learned[("laura", "ben.workaround")].data["source"] == "agent"


# -- each example fails where the agent did not do it -----------------------------------------------


def test_asking_nobody_fails_revealed_and_knows_and_decided_and_the_milestones():
    built, agent = world()
    agent.post("slack_support", "We are looking into it.", thread_of="slack_question")
    checks = results(built)
    assert checks["asked_laura"]["status"] == "failed"
    assert (
        "laura.workspace was not revealed (laura was never asked for it)" in checks["asked_laura"]["actual"]
    )
    assert checks["ben_got_the_details"]["actual"] == "ben does not know laura.beta_on"
    assert checks["laura_got_the_workaround"]["status"] == "failed"
    assert checks["priority_decided"]["actual"] == "mike never decided"
    assert checks["priority_before_label"]["status"] == "failed"
    assert (
        "never happened: mike decided severity p1; a call to POST /repos/*/issues/*/labels"
        in (checks["priority_before_label"]["actual"])
    )
    # Each sentence reads as English a user can act on.
    assert checks["asked_laura"]["explanation"].startswith(
        "Expected laura.workspace and laura.beta_on revealed to the agent when asked; found "
    )
    assert checks["answered_in_her_thread"]["explanation"].startswith(
        "Expected at least 1 message to laura, in thread of slack_question, from slack_bot; found "
    )
    assert checks["answered_in_her_thread"]["status"] == "passed"
    assert checks["answered_fast"]["status"] == "passed"


def test_a_top_level_answer_fails_the_thread_selector_naming_the_closest_miss():
    built, agent = world()
    agent.post("slack_support", "Exports are being fixed.")
    check = results(built)["answered_in_her_thread"]
    assert check["status"] == "failed"
    assert '"Exports are being fixed." by orders-bot in #support' in check["actual"]
    assert "which is not a reply in the thread of slack_question" in check["actual"]
    assert check["evidence"] == [1], "the closest miss's call"


def test_telling_the_customer_the_root_cause_fails_never_with_the_message_it_cites():
    built, agent = world()
    good_run(agent)
    agent.post(
        "slack_support", "The cause: exports v2 drops jobs for beta workspaces.", thread_of="slack_question"
    )
    check = results(built)["no_root_cause_to_customer"]
    assert check["status"] == "failed"
    assert '"The cause: exports v2 drops jobs for beta workspaces." by orders-bot' in check["actual"]
    assert check["evidence"] == [11], "the call after the good run's ten"


def test_a_label_before_the_decision_fails_before_and_an_answer_after_the_limit_fails_within():
    built, agent = world()
    issue = agent.github("POST", "/repos/acme/orders/issues", {"title": "Exports", "body": "x"})
    agent.github("POST", f"/repos/acme/orders/issues/{issue['number']}/labels", {"labels": ["p1"]})
    agent.dm("slack_mike", "The cause: v2 drops jobs. What priority?")
    agent.wait()
    checks = results(built)
    assert checks["priority_decided"]["status"] == "passed"
    assert checks["priority_before_label"]["status"] == "failed"
    assert (
        "mike decided severity p1 at 2026-03-02T09:05:00Z is not before a call to POST"
        in (checks["priority_before_label"]["actual"])
    )
    late = SCENE.replace("limit: 30m", "limit: 30s")
    built, agent = world(late)
    agent.post("slack_support", "Looking.", thread_of="slack_question")
    check = results(built)["answered_fast"]
    assert check["status"] == "failed"
    assert check["actual"] == "it happened at 2026-03-02T09:01:00Z, 1m after the start"


# -- the rules of people ----------------------------------------------------------------------------


def test_a_fact_volunteered_unasked_is_known_but_not_revealed_and_relaying_counts_for_knows():
    text = SCENE.replace(
        "checks:\n",
        "world_rules:\n  faults:\n    - id: fyi\n      at: 30s\n"
        "      effects: { slack.message: { channel: $slack_support, "
        'from: $slack_ben, text: "FYI exports v2 drops jobs for beta workspaces." } }\n'
        "checks:\n  - { id: ben_revealed, revealed: [ben.root_cause] }\n"
        "  - { id: laura_knows, knows: [laura, ben.root_cause] }\n",
        1,
    )
    built, agent = world(text)
    agent.wait()
    checks = results(built)
    assert checks["laura_knows"]["status"] == "passed", "relayed by another person"
    assert checks["ben_revealed"]["status"] == "failed"
    assert (
        "ben.root_cause was never asked for (ben shared it unasked; laura learned it)"
        in checks["ben_revealed"]["actual"]
    )
    # never has no author unless it says one: Ben told her, so the customer heard the root cause
    assert checks["no_root_cause_to_customer"]["status"] == "failed"
    assert "by ben in #support" in checks["no_root_cause_to_customer"]["actual"]
    assert checks["no_root_cause_to_customer"]["explanation"].startswith(
        "Expected no message to laura, with fact ben.root_cause; found 1 matching message version(s)"
    )


def test_a_decision_whose_after_facts_are_unknown_is_never_taken():
    built, agent = world()
    agent.dm("slack_mike", "What severity should this bug get?")
    agent.wait()
    agent.wait()
    assert not built.events.of_type("decided")
    assert results(built)["priority_decided"]["actual"] == "mike never decided"


def test_a_mention_reaches_only_a_member_and_a_thread_reply_not_the_other_listeners():
    built, agent = world()
    mike = built.ids["slack_mike"]
    ben = built.ids["slack_ben"]
    agent.post("slack_support", f"<@{mike}> what is the cause?")  # mike is no member of #support
    agent.post("slack_eng", f"<@{ben}> what is the cause?", thread_of=None)
    agent.wait()
    first, second = built.events.of_type("message")[:2]
    assert first.data["to"] == ["laura"], "laura listens to #support; mike is not a member of it"
    assert second.data["to"] == ["ben"]
    ben_answer = built.events.of_type("message")[2]
    assert ben_answer.data["from"] == "slack_ben" and ben_answer.data["to"] == [], "he answers the agent"
    reply = agent.post("slack_support", "a reply in her thread", thread_of="slack_question")
    reply_event = next(e for e in built.events.of_type("message") if e.data.get("ts") == reply["ts"])
    assert reply_event.data["to"] == ["laura"], "a thread reply reaches the thread's people only"


def test_people_answer_on_github_where_they_were_asked():
    built, agent = world()
    agent.github(
        "POST", "/repos/acme/orders/issues/13/comments", {"body": "Why are exports slow since Monday?"}
    )
    agent.wait()
    comments = built.states["github"]["repos"]["acme/orders"]["issues"]["13"]["comments"]
    assert [(c["user"], c["body"]) for c in comments] == [
        ("orders-bot", "Why are exports slow since Monday?"),
        ("ben", "Exports v2 drops jobs for beta workspaces."),
    ], "ben opened #13: the comment reaches him and he answers there"
    assert [e.data["fact"] for e in built.events.of_type("revealed")] == ["ben.root_cause"]


def test_an_edit_reaches_people_again_and_never_sees_every_version():
    built, agent = world()
    posted = agent.post("slack_support", "Working on it.", thread_of="slack_question")
    agent.slack(
        "chat.update",
        channel=built.ids["slack_support"],
        ts=posted["ts"],
        text="Root cause: v2 drops jobs for beta.",
    )
    agent.slack("chat.update", channel=built.ids["slack_support"], ts=posted["ts"], text="Working on it.")
    checks = results(built)
    assert checks["no_root_cause_to_customer"]["status"] == "failed", "a version that told her counts"


def test_a_restored_world_carries_on_its_people():
    built, agent = world()
    agent.post("slack_support", "Which workspace is it?", thread_of="slack_question")
    again = World.restore(built.scene, json.loads(json.dumps(built.snapshot())))
    Agent(again).wait()
    assert [e.data["fact"] for e in again.events.of_type("revealed")] == ["laura.workspace"]


# -- properties -------------------------------------------------------------------------------------

PHRASES = ["workspace", "beta", "flag is on", "cause", "drops", "workaround", "flag off", "severity", "hello"]
PLACES = ["thread", "support", "eng", "mike", "wait"]


def played(plan) -> World:
    """A world where the agent wrote each (place, phrases) of ``plan`` in turn, then ended."""
    built, agent = world()
    for place, words in plan:
        text = " ".join(words) or "hi"
        if place == "thread":
            agent.post("slack_support", text, thread_of="slack_question")
        elif place in ("support", "eng"):
            agent.post(f"slack_{place}", text)
        elif place == "mike":
            agent.dm("slack_mike", text)
        else:
            agent.wait()
    built.end()
    return built


@settings(max_examples=40)
@given(
    st.lists(st.tuples(st.sampled_from(PLACES), st.lists(st.sampled_from(PHRASES), max_size=3)), max_size=8)
)
def test_the_event_log_is_a_function_of_the_scene_and_the_calls(plan):
    def play():
        built = played(plan)
        return json.dumps(built.events.to_list()), json.dumps(evaluate(built))

    assert play() == play()


MILESTONES = [
    {"revealed": [("laura", "workspace")]},
    {"revealed": [("laura", "beta_on")]},
    {"decided": {"person": "ben", "decision": "fix_now", "option": None}},
    {"knows": {"person": "ben", "facts": [("laura", "beta_on")]}},
    {"called": "POST /api/chat.postMessage"},
    {"message": {"to": "laura"}},
]


@settings(max_examples=40)
@given(
    st.lists(st.tuples(st.sampled_from(PLACES), st.lists(st.sampled_from(PHRASES), max_size=3)), max_size=6)
)
def test_before_is_false_whenever_two_milestones_share_a_time(plan):
    from worlds.engine.process import evaluate_process

    built = played(plan)
    for first in MILESTONES:
        for second in MILESTONES:
            a, b = milestone(built, first), milestone(built, second)
            verdict = evaluate_process(built, "before", [first, second]).passed
            assert verdict == (a is not None and b is not None and a.at < b.at)
            if a is not None and b is not None and a.at == b.at:
                assert not verdict


@pytest.mark.parametrize("who", ["laura", "$laura", "$person.laura"])
def test_a_person_is_written_bare_or_as_a_ref(who):
    text = SCENE.replace("knows: [ben, laura.beta_on]", f"knows: [{who}, laura.workspace]")
    built, _ = world(text)
    assert results(built)["ben_got_the_details"]["status"] == "passed", "the owner knows their own facts"


# -- the timeline -----------------------------------------------------------------------------------


def test_scene_explain_prints_the_timeline_with_whom_each_message_reached(tmp_path, capsys):
    from evalconsole import cli
    from evalconsole.scene_cli import write_trial

    built, agent = world()
    good_run(agent)
    agent.post(
        "slack_support", "The cause: exports v2 drops jobs for beta workspaces.", thread_of="slack_question"
    )
    built.end()
    write_trial(tmp_path, built, evaluate(built))
    assert cli.main(["scene", "explain", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    lines = [line.strip() for line in out.splitlines()]
    assert "FAILED no_root_cause_to_customer:" in out
    assert "timeline:" in lines
    assert (
        "09:01:00  the agent in #support, in a thread: “Sorry about that! Which workspace is it, and is the "
        "beta flag on?” → reached laura"
    ) in lines
    assert (
        "09:02:00  laura in #support, in a thread: “It's the acme-eu-2 workspace.” → reached no one" in lines
    )
    assert "09:02:00  laura revealed laura.workspace when asked (event 1)" in lines
    assert "09:03:00  ben learned laura.beta_on (from agent, event 8)" in lines
    assert "09:07:00  mike in their DM with the agent: “Make it P1.” → reached no one" in lines
    assert "09:07:00  mike decided severity: p1" in lines
    assert "09:09:00  acme/orders#14 labeled p1" in lines
    assert "09:10:00  call 10: slack POST /api/chat.postMessage → 200" in lines
    assert lines[-1] == "09:11:00  the trial ended (reply)"


# -- voice ------------------------------------------------------------------------------------------

VOICED = SCENE.replace(
    "  laura:\n    slack: $slack_laura\n",
    "  laura:\n    slack: $slack_laura\n    voice: llm\n"
    '    persona: "A busy data analyst; short, friendly."\n',
    1,
)


def test_a_voiced_person_is_worded_by_the_model_and_still_reveals_by_the_rules(monkeypatch):
    """With a judge key (here a local server speaking OpenAI's protocol) the model words Laura's reply
    from her persona; she reveals by the rules, and the event keeps the canonical text beside it."""
    from evalconsole.scene_cli import env_voice
    from tests.support.fake_openai import FakeOpenAI

    with FakeOpenAI(mode="reply", reason="Oh hi! We're on the EU two workspace, cheers.") as fake:
        monkeypatch.setenv("EVALCONSOLE_JUDGE_API_KEY", "sk-test")
        monkeypatch.setenv("EVALCONSOLE_JUDGE_BASE_URL", fake.base_url)
        built, agent = world(VOICED)
        built.voice = env_voice(built.scene)
        agent.post("slack_support", "Which workspace is it?", thread_of="slack_question")
        agent.wait()
        assert fake.requests == 1
        assert json.loads(fake.last_body["messages"][1]["content"]) == {
            "persona": "A busy data analyst; short, friendly.",
            "they_were_asked": "Which workspace is it?",
            "canonical": "It's the acme-eu-2 workspace.",
        }
    answer = next(e for e in built.events.of_type("message") if e.data.get("by") == "laura")
    assert answer.data["text"] == "Oh hi! We're on the EU two workspace, cheers."
    assert answer.data["canonical"] == "It's the acme-eu-2 workspace."
    assert thread_texts(built, "slack_question")[-1] == (
        "laura",
        "Oh hi! We're on the EU two workspace, cheers.",
    )
    assert [e.data["fact"] for e in built.events.of_type("revealed")] == ["laura.workspace"]


def test_people_learn_from_the_canonical_text_of_a_voiced_message():
    built, _ = world()
    slack = built.simulator("slack")
    slack.post(
        built.ids["slack_eng"],
        built.ids["slack_laura"],
        "we're on the EU two one",  # the model's words: no phrase of any fact
        canonical="It's the acme-eu-2 workspace.",
    )
    learned = built.events.of_type("learned")
    assert [(e.data["person"], e.data["fact"], e.data["source"]) for e in learned] == [
        ("ben", "laura.workspace", "laura")
    ]


def test_without_a_judge_or_when_the_model_fails_a_voiced_person_says_the_canonical_text(monkeypatch):
    from checks.judge import OpenAIJudge
    from tests.support.fake_openai import FakeOpenAI
    from worlds.engine.voice import voice_from_client

    built, agent = world(VOICED)
    agent.post("slack_support", "Which workspace is it?", thread_of="slack_question")
    agent.wait()
    assert thread_texts(built, "slack_question")[-1] == ("laura", "It's the acme-eu-2 workspace.")
    with FakeOpenAI(mode="garbage") as fake:
        built, agent = world(VOICED)
        built.voice = voice_from_client(OpenAIJudge(base_url=fake.base_url, api_key="k", retries=0), "m")
        agent.post("slack_support", "Which workspace is it?", thread_of="slack_question")
        agent.wait()
        assert fake.requests == 1
    assert thread_texts(built, "slack_question")[-1] == ("laura", "It's the acme-eu-2 workspace.")
    assert "canonical" not in built.events.of_type("message")[-1].data


# -- the world predicates as milestones --------------------------------------------------------------

LABELED = SCENE.replace(
    "github_issue_13: { repo: $github_orders, number: 13, title: \"Exports slow\", author: $gh_ben, "
    "body: \"Since Monday.\" }",
    "github_issue_13: { repo: $github_orders, number: 13, title: \"Exports slow\", author: $gh_ben, "
    "body: \"Since Monday.\",\n"
    "                         labels: [perf] }",
)


def test_issue_labeled_counts_labels_given_at_creation_later_or_in_the_seed():
    from worlds.engine.process import evaluate_process

    built, agent = world(LABELED)
    agent.github("POST", "/repos/acme/orders/issues", {"title": "A", "body": "x", "labels": ["bug"]})  # 09:01
    issue = agent.github("POST", "/repos/acme/orders/issues", {"title": "B", "body": "y"})  # 09:02
    agent.github("POST", f"/repos/acme/orders/issues/{issue['number']}/labels", {"labels": ["p1"]})  # 09:03
    built.end()

    def at(labels):
        moment = milestone(built, {"issue_labeled": {"repo": "github_orders", "labels": labels}})
        return moment.at.strftime("%H:%M") if moment else None

    assert at(["bug"]) == "09:01", "a label given when the issue is created"
    assert at(["p1"]) == "09:03", "a label added later"
    assert at(["perf"]) == "09:00", "a seed label holds from the start"
    assert at(["bug", "p1"]) is None, "every label on one issue"
    order = [
        {"issue_labeled": {"repo": "github_orders", "labels": ["bug"]}},
        {"called": "POST /repos/*/issues/*/labels"},
    ]
    assert evaluate_process(built, "before", order).passed
    assert not evaluate_process(built, "before", order[::-1]).passed


def test_a_fault_resolved_milestone_is_the_moment_the_fault_resolved():
    from worlds.engine.process import evaluate_process

    text = SCENE.replace(
        "checks:\n",
        "world_rules:\n  faults:\n    - id: quiet\n      at: 0s\n"
        '      resolved_when: { called: "POST /repos/acme/orders/issues" }\n'
        "checks:\n",
        1,
    )
    built, agent = world(text)
    agent.wait()  # 09:01
    agent.github("POST", "/repos/acme/orders/issues", {"title": "A", "body": "x"})  # 09:02: resolves it
    built.end()
    moment = milestone(built, {"fault_resolved": "quiet"})
    assert moment is not None and moment.at.strftime("%H:%M") == "09:02" and moment.evidence == (2,)
    within = {"event": {"fault_resolved": "quiet"}, "of": "start", "limit": timedelta(minutes=1)}
    assert not evaluate_process(built, "within", within).passed
    assert evaluate_process(built, "within", {**within, "limit": timedelta(minutes=2)}).passed


def test_the_timeline_names_a_dm_from_each_side():
    """The agent writes "in DM with mike"; mike's own message in that DM reads "in their DM with the
    agent", not "mike in DM with mike"."""
    from worlds.engine.timeline import timeline

    events = [
        {"n": 1, "type": "message", "at": "2026-01-05T09:00:00Z", "tool": "slack", "seq": 3,
         "conversation": "DM with mike", "from": "evalbot", "text": "Which severity?", "to": ["mike"]},
        {"n": 2, "type": "message", "at": "2026-01-05T09:01:00Z", "tool": "slack",
         "conversation": "DM with mike", "from": "mike", "text": "P1.", "to": []},
        {"n": 3, "type": "message", "at": "2026-01-05T09:02:00Z", "tool": "slack",
         "conversation": "DM with mike", "from": "laura", "text": "Odd.", "to": []},
    ]
    lines = [row["line"] for row in timeline(events)]
    assert lines == [
        "the agent in DM with mike: “Which severity?” → reached mike",
        "mike in their DM with the agent: “P1.” → reached no one",
        "laura in DM with mike: “Odd.” → reached no one",
    ]
