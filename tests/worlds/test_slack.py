"""The simulated Slack, driven by the official client (slack_sdk.WebClient, unmodified) against a world
served on loopback, plus the slack.message state check and the world's events and trace."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from worlds.engine import load_scene
from worlds.engine.http import Request
from worlds.engine.schema import get_tool
from worlds.engine.serve import WorldServer
from worlds.engine.world import World

EXAMPLE = Path(__file__).parent / "scenes" / "example.yaml"

SCENE = """
scene: slack-office
task: Help out.
world:
  slack:
    users:
      slack_bot:   { name: orders-bot, bot: true }
      slack_laura: { name: laura, real_name: Laura Kim, email: laura@customer.example }
      slack_ben:   { name: ben, email: ben@acme.example }
      slack_mike:  { name: mike }
      slack_ann:   { name: ann }
    channels:
      slack_support: { name: support, members: [$slack_bot, $slack_laura, $slack_ben], topic: Help }
      slack_eng:     { name: eng, members: [$slack_bot, $slack_ben], private: true }
      slack_random:  { name: random, members: [$slack_ben] }
      slack_secret:  { name: secret, members: [$slack_ben], private: true }
      slack_ops:     { name: ops, members: [$slack_bot] }
    messages:
      slack_question: { channel: $slack_support, from: $slack_laura, at: -10m,
                        text: "My CSV export never arrives. Is something broken?" }
      slack_followup: { channel: $slack_support, from: $slack_ben, at: -9m, in_thread_of: $slack_question,
                        text: "Looking into it." }
      slack_again:    { channel: $slack_support, from: $slack_laura, at: -8m, in_thread_of: $slack_followup,
                        text: "Thanks!" }
      slack_hello:    { channel: $slack_support, from: $slack_ben, at: -5m, text: "Morning all" }
      slack_dm_mike:  { dm: $slack_mike, from: $slack_mike, at: -1m, text: "ping me if needed" }
checks:
  - id: answered
    state: { slack.message: { channel: $slack_support, from: $slack_bot, in_thread_of: $slack_question } }
"""


def scene(text: str = SCENE, name: str = "office.yaml"):
    return load_scene(text, name)


@pytest.fixture
def office():
    world = World.build(scene())
    with WorldServer() as server:
        server.add(world)
        yield world, _client(world, server)


def _client(world: World, server: WorldServer, token: str | None = None) -> WebClient:
    base = world.for_agent(server.root)["tools"]["slack"]["base_url"]
    return WebClient(token=token or world.credentials["slack"]["token"], base_url=base)


def _error(call) -> str:
    with pytest.raises(SlackApiError) as caught:
        call()
    assert caught.value.response.status_code == 200
    return caught.value.response["error"]


def _check(world: World, **spec):
    return world.state_check("slack.message", spec)


# -- reading ------------------------------------------------------------------------------------------


def test_ids_are_slack_shaped_deterministic_and_mapped_from_refs(office):
    world, client = office
    ids = world.ids
    assert ids["slack_bot"].startswith("U") and len(ids["slack_bot"]) == 11
    assert ids["slack_support"].startswith("C") and ids["slack_eng"].startswith("G")
    assert World.build(scene()).ids == ids
    assert len(world.events) == 0, "the seed is starter history, not events people or process checks see"
    seed = world.states["slack"]["messages"]
    assert all(m["seed"] and m["seq"] is None for m in seed)
    assert ids["slack_question"] == f"{int(world.scene.start.timestamp()) - 600}.000001"
    auth = client.auth_test()
    assert auth["ok"] and auth["user_id"] == ids["slack_bot"] and auth["bot_id"].startswith("B")
    assert auth["user"] == "orders-bot"


def test_conversations_list_filters_types_and_pages_through_the_sdk_cursor(office):
    world, client = office
    public = client.conversations_list()
    assert [c["name"] for c in public["channels"]] == ["support", "random", "ops"]
    assert [c["is_member"] for c in public["channels"]] == [True, False, True]
    every = client.conversations_list(types="public_channel,private_channel,im", exclude_archived=True)
    names = [c.get("name", c.get("user")) for c in every["channels"]]
    assert names == ["support", "eng", "random", "ops", world.ids["slack_mike"]], (
        "no private channel it is not in"
    )
    pages = [page["channels"] for page in client.conversations_list(limit=2)]
    assert [len(p) for p in pages] == [2, 1]
    assert [c["name"] for p in pages for c in p] == ["support", "random", "ops"]
    assert _error(lambda: client.conversations_list(types="rooms")) == "invalid_types"
    assert _error(lambda: client.conversations_list(cursor="nonsense!")) == "invalid_cursor"


def test_conversations_info_members_and_not_found(office):
    world, client = office
    info = client.conversations_info(channel=world.ids["slack_support"])["channel"]
    assert (info["name"], info["is_channel"], info["is_private"], info["topic"]["value"]) == (
        "support",
        True,
        False,
        "Help",
    )
    assert client.conversations_info(channel="#eng")["channel"]["is_group"] is True
    members = client.conversations_members(channel=world.ids["slack_support"])["members"]
    assert members == [world.ids["slack_bot"], world.ids["slack_laura"], world.ids["slack_ben"]]
    paged = [
        m
        for page in client.conversations_members(channel=world.ids["slack_support"], limit=1)
        for m in page["members"]
    ]
    assert paged == members
    assert _error(lambda: client.conversations_info(channel="C0NOTHERE")) == "channel_not_found"
    assert _error(lambda: client.conversations_info(channel=world.ids["slack_ann"])) == "channel_not_found"
    assert _error(lambda: client.conversations_info(channel=world.ids["slack_secret"])) == "channel_not_found"
    assert _error(lambda: client.api_call("conversations.info")) == "invalid_arguments"


def test_history_is_newest_first_without_replies_and_pages_with_oldest_latest(office):
    world, client = office
    support = world.ids["slack_support"]
    history = client.conversations_history(channel=support)
    assert [m["text"] for m in history["messages"]] == [
        "Morning all",
        "My CSV export never arrives. Is something broken?",
    ]
    parent = history["messages"][1]
    assert parent["reply_count"] == 2
    assert parent["reply_users"] == [world.ids["slack_ben"], world.ids["slack_laura"]]
    assert parent["thread_ts"] == parent["ts"] == world.ids["slack_question"]
    pages = [
        dict(p.data) for p in client.conversations_history(channel=support, limit=1)
    ]  # one object, new data
    assert [p["has_more"] for p in pages] == [True, False]
    assert [m["ts"] for p in pages for m in p["messages"]] == [
        world.ids["slack_hello"],
        world.ids["slack_question"],
    ]
    after = client.conversations_history(channel=support, oldest=world.ids["slack_question"])
    assert [m["text"] for m in after["messages"]] == ["Morning all"]
    both = client.conversations_history(channel=support, oldest=world.ids["slack_question"], inclusive=True)
    assert len(both["messages"]) == 2
    before = client.conversations_history(channel=support, latest=world.ids["slack_hello"])
    assert [m["ts"] for m in before["messages"]] == [world.ids["slack_question"]]
    assert _error(lambda: client.conversations_history(channel=world.ids["slack_random"])) == "not_in_channel"


def test_replies_give_the_parent_then_the_thread(office):
    world, client = office
    replies = client.conversations_replies(channel=world.ids["slack_support"], ts=world.ids["slack_question"])
    assert [m["text"] for m in replies["messages"]] == [
        "My CSV export never arrives. Is something broken?",
        "Looking into it.",
        "Thanks!",
    ]
    assert replies["messages"][2]["thread_ts"] == world.ids["slack_question"], (
        "a reply's reply joins the root"
    )
    assert replies["messages"][1]["parent_user_id"] == world.ids["slack_laura"]
    assert _error(
        lambda: client.conversations_replies(channel=world.ids["slack_support"], ts="1.000001")
    ) == ("thread_not_found")


def test_users_list_info_and_lookup_by_email(office):
    world, client = office
    pages = [dict(p.data) for p in client.users_list(limit=2)]
    assert [len(p["members"]) for p in pages] == [2, 2, 1]
    assert [u["name"] for p in pages for u in p["members"]] == ["orders-bot", "laura", "ben", "mike", "ann"]
    laura = client.users_info(user=world.ids["slack_laura"])["user"]
    assert laura["real_name"] == "Laura Kim" and laura["profile"]["email"] == "laura@customer.example"
    assert client.users_lookupByEmail(email="BEN@acme.example")["user"]["id"] == world.ids["slack_ben"]
    assert _error(lambda: client.users_info(user="U0NOBODY00")) == "user_not_found"
    assert _error(lambda: client.users_lookupByEmail(email="no@where.example")) == "users_not_found"


# -- writing --------------------------------------------------------------------------------------------


def test_post_by_name_or_id_and_membership_rules(office):
    world, client = office
    posted = client.chat_postMessage(channel="#support", text=f"Hello <@{world.ids['slack_laura']}>")
    assert posted["channel"] == world.ids["slack_support"]
    assert posted["message"]["text"] == f"Hello <@{world.ids['slack_laura']}>"
    assert posted["message"]["bot_id"] == client.auth_test()["bot_id"]
    assert posted["ts"] == f"{int(world.clock.now.timestamp()) - 1}.000006"
    assert client.chat_postMessage(channel="eng", text="hi eng")["channel"] == world.ids["slack_eng"]
    assert _error(lambda: client.chat_postMessage(channel="random", text="x")) == "not_in_channel"
    assert _error(lambda: client.chat_postMessage(channel="secret", text="x")) == "channel_not_found"
    assert _error(lambda: client.chat_postMessage(channel="#nowhere", text="x")) == "channel_not_found"
    with pytest.warns(UserWarning, match="text"):  # the SDK's own warning about a missing text
        assert _error(lambda: client.chat_postMessage(channel="ops")) == "no_text"
    client.conversations_join(channel=world.ids["slack_random"])
    assert client.chat_postMessage(channel="random", text="joined")["ok"]
    again = client.conversations_join(channel=world.ids["slack_random"])
    assert again["warning"] == "already_in_channel"
    assert _error(lambda: client.conversations_join(channel=world.ids["slack_eng"])) == (
        "method_not_supported_for_channel_type"
    )


def test_link_names_turns_member_names_into_mentions(office):
    world, client = office
    posted = client.chat_postMessage(
        channel="support", text="@laura and @ben. and @mike, @here", link_names=True
    )
    ids = world.ids
    assert (
        posted["message"]["text"] == f"<@{ids['slack_laura']}> and <@{ids['slack_ben']}>. and @mike, <!here>"
    )
    [event] = world.events.of_type("message")
    assert event.data["mentions"] == [ids["slack_laura"], ids["slack_ben"]]
    plain = client.chat_postMessage(channel="support", text="@laura")
    assert plain["message"]["text"] == "@laura"


def test_a_form_encoded_post_with_the_token_field_works_and_the_token_is_not_traced(office):
    world, client = office
    token = world.credentials["slack"]["token"]
    url = client.base_url + "chat.postMessage"
    answer = httpx.post(
        url, data={"token": token, "channel": "support", "text": "form", "link_names": "1"}
    ).json()
    assert answer["ok"] and answer["message"]["text"] == "form"
    assert httpx.post(url, data={"token": "xoxb-wrong", "channel": "support"}).json() == {
        "ok": False,
        "error": "invalid_auth",
    }
    assert httpx.post(url, data={"channel": "support"}).json()["error"] == "not_authed"
    bad = httpx.post(
        url,
        content=b"{nope",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    assert (bad.status_code, bad.json()["error"]) == (200, "invalid_json")
    text = json.dumps(world.trace.to_list())
    assert token not in text and "xoxb-wrong" not in text
    assert world.trace.entries[0].request == {"channel": "support", "text": "form", "link_names": "1"}


def test_wrong_token_is_invalid_auth_with_http_200(office):
    world, client = office
    server_root = client.base_url.split("/worlds/")[0]
    wrong = WebClient(token="xoxb-1-2-nope", base_url=client.base_url)
    with pytest.raises(SlackApiError) as caught:
        wrong.auth_test()
    assert caught.value.response.status_code == 200
    assert caught.value.response["error"] == "invalid_auth"
    assert server_root.startswith("http://127.0.0.1")
    [entry] = world.trace.entries
    assert entry.slack_ok is False and not entry.worked


def test_an_unimplemented_method_is_a_coverage_gap(office):
    world, client = office
    anonymous = WebClient(base_url=client.base_url)
    with pytest.raises(SlackApiError) as caught:
        anonymous.api_call("files.remote.add")
    assert caught.value.response["error"] == "unknown_method", "an unknown method before the token"
    with pytest.raises(SlackApiError) as caught:
        client.api_call("pins.add", json={"channel": world.ids["slack_support"]})
    assert caught.value.response.status_code == 404
    assert caught.value.response["error"] == "unknown_method"
    first, entry = world.trace.entries
    assert (first.path, first.coverage_gap) == ("/api/files.remote.add", True)
    assert (entry.path, entry.status, entry.coverage_gap, entry.worked) == ("/api/pins.add", 404, True, False)


def test_a_thread_reply_counts_for_the_state_check_and_a_top_level_post_does_not(office):
    world, client = office
    question = world.ids["slack_question"]
    client.chat_postMessage(channel="support", text="Looking at your export now")
    failed = _check(world, channel="slack_support", **{"from": "slack_bot"}, in_thread_of="slack_question")
    assert not failed.passed
    assert failed.actual.startswith(
        "0 matching messages; closest: slack_bot's top-level message \"Looking at"
    )
    assert "is not a reply in the thread of slack_question" in failed.actual
    assert failed.expected in failed.explanation and failed.actual in failed.explanation
    reply = client.chat_postMessage(
        channel=world.ids["slack_support"], text="Fixed, sorry!", thread_ts=question
    )
    assert reply["message"]["thread_ts"] == question
    # a reply to a reply lands in the same thread
    nested = client.chat_postMessage(
        channel="support", text="More soon", thread_ts=world.ids["slack_followup"]
    )
    assert nested["message"]["thread_ts"] == question
    passed = _check(
        world, channel="slack_support", **{"from": "slack_bot"}, in_thread_of="slack_question", count_gte=2
    )
    assert passed.passed and passed.actual == "2 matching messages"
    assert passed.evidence == (2, 3)
    assert _check(world, channel="slack_support", text_contains="FIXED").passed
    in_reply_thread = _check(
        world, channel="slack_support", **{"from": "slack_bot"}, in_thread_of="slack_followup"
    )
    assert in_reply_thread.passed and in_reply_thread.evidence == (2, 3), "a reply's thread is its root's"
    assert not _check(world, channel="slack_support", text_contains="fixed", count_gte=2).passed
    assert _error(lambda: client.chat_postMessage(channel="support", text="x", thread_ts="1.000009")) == (
        "thread_not_found"
    )
    broadcast = client.chat_postMessage(
        channel="support", text="Also for everyone", thread_ts=question, reply_broadcast=True
    )
    top = client.conversations_history(channel="support", limit=1)["messages"][0]
    assert (top["ts"], top["subtype"], top["thread_ts"]) == (broadcast["ts"], "thread_broadcast", question)


def test_chat_update_makes_a_new_version_and_the_state_check_reads_the_final_text(office):
    world, client = office
    posted = client.chat_postMessage(
        channel="support", text="first draft", thread_ts=world.ids["slack_question"]
    )
    updated = client.chat_update(channel=posted["channel"], ts=posted["ts"], text="the final answer")
    assert (
        updated["text"] == "the final answer"
        and updated["message"]["edited"]["user"] == world.ids["slack_bot"]
    )
    assert _check(world, channel="slack_support", text_contains="final answer").passed
    assert not _check(world, channel="slack_support", text_contains="first draft").passed
    edited = world.events.of_type("message_edited")
    assert [(e.data["text"], e.data["version"], e.data["seq"]) for e in edited] == [
        ("the final answer", 2, 2)
    ]
    assert world.final_state()["tools"]["slack"]["channels"]["support"]["messages"][-1]["versions"] == [
        "first draft",
        "the final answer",
    ]
    assert _error(
        lambda: client.chat_update(channel=posted["channel"], ts=world.ids["slack_hello"], text="x")
    ) == ("cant_update_message")
    assert _error(lambda: client.chat_update(channel=posted["channel"], ts="1.000001", text="x")) == (
        "message_not_found"
    )


def test_chat_delete_hides_the_message_from_the_state_check_but_keeps_the_events(office):
    world, client = office
    posted = client.chat_postMessage(channel="support", text="oops", thread_ts=world.ids["slack_question"])
    assert _check(world, channel="slack_support", text_contains="oops").passed
    deleted = client.chat_delete(channel=posted["channel"], ts=posted["ts"])
    assert deleted["ts"] == posted["ts"]
    assert not _check(world, channel="slack_support", text_contains="oops").passed
    assert [e.type for e in world.events if e.type != "call"] == ["message", "message_deleted"]
    assert world.events.of_type("message")[0].data["text"] == "oops"
    history = client.conversations_replies(channel=posted["channel"], ts=world.ids["slack_question"])
    assert "oops" not in [m["text"] for m in history["messages"]]
    assert (
        _error(lambda: client.chat_delete(channel=posted["channel"], ts=posted["ts"])) == "message_not_found"
    )
    assert _error(lambda: client.chat_delete(channel=posted["channel"], ts=world.ids["slack_hello"])) == (
        "cant_delete_message"
    )


def test_reactions_add(office):
    world, client = office
    assert client.reactions_add(
        channel=world.ids["slack_support"], timestamp=world.ids["slack_hello"], name="eyes"
    )["ok"]
    [message] = [
        m for m in client.conversations_history(channel="support")["messages"] if m["text"] == "Morning all"
    ]
    assert message["reactions"] == [{"name": "eyes", "users": [world.ids["slack_bot"]], "count": 1}]

    def again():
        return client.reactions_add(
            channel=world.ids["slack_support"], timestamp=world.ids["slack_hello"], name="eyes"
        )

    assert _error(again) == "already_reacted"
    assert _error(
        lambda: client.reactions_add(channel=world.ids["slack_support"], timestamp="1.1", name="x")
    ) == ("message_not_found")


def test_conversations_open_makes_or_finds_the_dm_and_posting_to_it_emits_an_event(office):
    world, client = office
    mike = world.ids["slack_mike"]
    opened = client.conversations_open(users=mike)
    dm = opened["channel"]["id"]
    assert dm.startswith("D") and opened["already_open"] is True, "the seed DM already exists"
    history = client.conversations_history(channel=dm)
    assert [m["text"] for m in history["messages"]] == ["ping me if needed"]
    fresh = client.conversations_open(users=[world.ids["slack_ann"]], return_im=True)
    assert fresh["channel"]["is_im"] and fresh["channel"]["user"] == world.ids["slack_ann"]
    assert fresh["already_open"] is False
    client.chat_postMessage(channel=fresh["channel"]["id"], text="Hi ann")
    by_user = client.chat_postMessage(channel=mike, text="Hi mike")
    assert by_user["channel"] == dm
    events = world.events.of_type("message")
    assert [(e.data["channel"], e.data["from"], e.data["text"], e.data["seq"]) for e in events] == [
        (fresh["channel"]["id"], "slack_bot", "Hi ann", 4),
        (dm, "slack_bot", "Hi mike", 5),
    ]
    assert events[0].data["tool"] == "slack" and events[0].data["thread_ts"] is None
    assert _error(lambda: client.conversations_open(users="U0NOBODY00")) == "user_not_found"
    group = client.conversations_open(users=f"{mike},{world.ids['slack_ann']}", return_im=True)
    assert group["channel"]["is_mpim"] and group["channel"]["id"].startswith("G")


# -- the trace, determinism, snapshots ---------------------------------------------------------------------


def test_trace_entries_record_paths_and_slack_ok(office):
    world, client = office
    client.chat_postMessage(channel="support", text="hi")
    _error(lambda: client.chat_postMessage(channel="random", text="hi"))
    client.conversations_list(limit=1)  # the SDK posts its arguments as a form, even for "GET" methods
    token = world.credentials["slack"]["token"]
    listed = httpx.get(
        client.base_url + "conversations.list",
        params={"limit": 1, "types": "im"},
        headers={"Authorization": f"Bearer {token}"},
    ).json()
    assert listed["ok"] and [c["user"] for c in listed["channels"]] == [world.ids["slack_mike"]]
    first, second, third, fourth = world.trace.entries
    assert (first.method, first.path, first.status, first.slack_ok, first.worked) == (
        "POST",
        "/api/chat.postMessage",
        200,
        True,
        True,
    )
    assert first.request == {"channel": "support", "text": "hi"}
    assert (second.slack_ok, second.worked, second.response["error"]) == (False, False, "not_in_channel")
    assert (third.method, third.path, third.request) == ("POST", "/api/conversations.list", {"limit": "1"})
    assert (fourth.method, fourth.query) == ("GET", {"limit": ["1"], "types": ["im"]})
    assert world.credentials["slack"]["token"] not in json.dumps(world.trace.to_list())


def _play(world: World) -> None:
    token = world.credentials["slack"]["token"]
    calls = [
        (
            "chat.postMessage",
            {"channel": "support", "text": "hello", "thread_ts": world.ids["slack_question"]},
        ),
        ("conversations.open", {"users": world.ids["slack_ann"]}),
        ("chat.postMessage", {"channel": world.ids["slack_ann"], "text": "hi @ann", "link_names": True}),
        ("chat.update", {"channel": world.ids["slack_support"], "ts": None, "text": "hello again"}),
        ("pins.add", {}),
    ]
    first_ts = None
    for method, body in calls:
        if body.get("ts", "") is None:
            body["ts"] = first_ts
        answer = world.call(
            "slack",
            Request.make(
                "POST",
                f"/api/{method}",
                headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
                body=json.dumps(body).encode(),
            ),
        )
        first_ts = first_ts or answer.body.get("ts")


def test_the_same_calls_give_identical_state_trace_and_events():
    one, two = World.build(scene()), World.build(scene())
    _play(one)
    _play(two)
    for world in (one, two):
        assert world.state_check(
            "slack.message", {"channel": "slack_support", "text_contains": "again"}
        ).passed

    def dump(world):
        return json.dumps(
            [world.states, world.trace.to_list(), world.events.to_list(), world.final_state(), world.ids],
            sort_keys=True,
        )

    assert dump(one) == dump(two)


def test_a_snapshot_restored_midway_keeps_working():
    first = World.build(scene())
    token = first.credentials["slack"]["token"]

    def post(world: World, text: str, thread: str | None = None):
        form = f"channel=support&text={text}" + (f"&thread_ts={thread}" if thread else "")
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/x-www-form-urlencoded"}
        return world.call(
            "slack", Request.make("POST", "/api/chat.postMessage", headers=headers, body=form.encode())
        )

    assert post(first, "one").body["ok"]
    second = World.restore(scene(), json.loads(json.dumps(first.snapshot())))
    answer = post(second, "two", second.ids["slack_question"])
    assert answer.body["ok"] and answer.body["ts"].endswith(".000007")
    edited = second.call(
        "slack",
        Request.make(
            "POST",
            "/api/chat.update",
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
            body=json.dumps({"channel": "support", "ts": answer.body["ts"], "text": "two, edited"}).encode(),
        ),
    )
    assert edited.body["ok"]
    result = second.state_check(
        "slack.message", {"channel": "slack_support", "from": "slack_bot", "in_thread_of": "slack_question"}
    )
    assert result.passed and result.evidence == (2,)
    assert [e.type for e in second.events if e.type != "call"] == ["message", "message", "message_edited"]


# -- the effect and the reference example --------------------------------------------------------------------


def test_a_message_effect_posts_as_a_person_into_a_channel_or_dm():
    world = World.build(scene())
    sim = world.simulator("slack")
    sim.apply_effect("message", {"channel": "slack_eng", "from": "slack_ben", "text": "orders 5xx are up"})
    sim.apply_effect("message", {"dm": "slack_bot", "from": "slack_ann", "text": "hi bot"})
    sim.apply_effect(
        "message",
        {
            "channel": "slack_support",
            "from": "slack_laura",
            "text": "any news?",
            "in_thread_of": "slack_question",
        },
    )
    events = world.events.of_type("message")
    assert [(e.data["from"], e.data["seq"]) for e in events] == [("slack_ben", None)] * 1 + [
        ("slack_ann", None),
        ("slack_laura", None),
    ]
    assert events[2].data["thread_ts"] == world.ids["slack_question"]
    assert world.state_check("slack.message", {"channel": "slack_eng", "from": "slack_ben"}).passed
    channels = world.final_state()["tools"]["slack"]["channels"]
    assert channels["dm:ann"]["messages"][0]["text"] == "hi bot"
    assert channels["support"]["messages"][0]["seed"] is True


@pytest.mark.parametrize("in_thread", [True, False])
def test_the_reference_example_answered_and_posted(in_thread):
    example = load_scene(EXAMPLE.read_text(), "example.yaml")
    world = World.build(example)
    with WorldServer() as server:
        server.add(world)
        client = _client(world, server)
        thread = {"thread_ts": world.ids["slack_question"]} if in_thread else {}
        client.chat_postMessage(channel="#support", text="We are on it, sorry!", **thread)
    [answered] = [c for c in example.checks if c.id == "answered"]
    spec = {k: v for k, v in answered.spec.items() if k != "check"}
    result = world.state_check(answered.spec["check"], spec)
    assert result.passed is in_thread
    if not in_thread:
        assert "closest" in result.actual and "top-level" in result.actual
    # posted: { called: "* /api/chat.postMessage" } holds on the trace
    [entry] = world.trace.entries
    assert (entry.path, entry.worked) == ("/api/chat.postMessage", True)


# -- handlers without HTTP --------------------------------------------------------------------------

JSON = "application/json"
FORM = "application/x-www-form-urlencoded"


@pytest.mark.parametrize(
    ("method", "kind", "body", "query", "status", "answer"),
    [
        ("chat.postMessage", JSON, b"{nope", "", 200, {"ok": False, "error": "invalid_json"}),
        ("chat.postMessage", JSON, b"[1, 2]", "", 200, {"ok": False, "error": "invalid_json"}),
        ("chat.postMessage", JSON, b'{"text": "x"}', "", 200, {"ok": False, "error": "channel_not_found"}),
        (
            "chat.postMessage",
            FORM,
            b"channel=support&text=hi",
            "",
            200,
            {"ok": True, "channel": "slack_support"},
        ),
        ("chat.postMessage", JSON, b'{"channel": 7, "text": "x"}', "", 200, {"error": "channel_not_found"}),
        ("conversations.history", FORM, b"", "", 200, {"ok": False, "error": "invalid_arguments"}),
        ("conversations.info", "", b"", "channel=%23support", 200, {"ok": True}),
        ("users.info", JSON, b"{}", "", 200, {"error": "invalid_arguments"}),
        ("users.list", "", b"", "limit=x", 200, {"error": "invalid_limit"}),
        ("conversations.open", JSON, b"{}", "", 200, {"error": "users_list_not_supplied"}),
        ("reactions.add", FORM, b"channel=support&timestamp=1.1", "", 200, {"error": "invalid_arguments"}),
        ("files.upload", FORM, b"", "", 404, {"ok": False, "error": "unknown_method"}),
    ],
)
def test_handler_table(method, kind, body, query, status, answer):
    world = World.build(scene())
    headers = {"Authorization": f"Bearer {world.credentials['slack']['token']}"}
    if kind:
        headers["Content-Type"] = kind
    response = world.call("slack", Request.make("POST", f"/api/{method}", query, headers, body))
    assert response.status == status
    expected = {k: world.ids.get(v, v) if isinstance(v, str) else v for k, v in answer.items()}
    assert {k: response.body.get(k) for k in expected} == expected
    assert world.trace.entries[0].slack_ok is response.body["ok"]


def test_a_token_in_a_json_body_authenticates_and_is_not_traced():
    world = World.build(scene())
    token = world.credentials["slack"]["token"]
    body = json.dumps({"token": token, "channel": "support", "text": "hi"}).encode()
    answer = world.call(
        "slack", Request.make("POST", "/api/chat.postMessage", "", {"Content-Type": JSON}, body)
    )
    assert answer.body["ok"]
    assert world.trace.entries[0].request == {"channel": "support", "text": "hi"}
    wrong = world.call(
        "slack", Request.make("POST", "/api/auth.test", "", {"Authorization": "Bearer xoxb-no"})
    )
    assert (wrong.status, wrong.body) == (200, {"ok": False, "error": "invalid_auth"})


ODD_VALUES = [None, 7, 1.5, True, [], [1, "a"], {"a": 1}, "", "#", "nonsense"]
FIELDS = ["channel", "text", "ts", "thread_ts", "users", "user", "email", "cursor", "limit", "types"]
FIELDS += ["oldest", "latest", "link_names", "name", "timestamp", "blocks", "attachments", "return_im"]


@pytest.mark.parametrize(
    "method", [path.removeprefix("/api/") for _, path, _ in get_tool("slack").simulator.routes]
)
def test_odd_argument_values_are_answered_never_a_crash(method):
    world = World.build(scene())
    headers = {"Authorization": f"Bearer {world.credentials['slack']['token']}", "Content-Type": JSON}
    base = {
        "channel": "support",
        "text": "x",
        "ts": world.ids["slack_hello"],
        "users": world.ids["slack_ann"],
    }
    base |= {
        "user": world.ids["slack_ann"],
        "email": "a",
        "timestamp": world.ids["slack_hello"],
        "name": "eyes",
    }
    for field in FIELDS:
        for value in ODD_VALUES:
            body = json.dumps({**base, field: value}).encode()
            answer = world.call("slack", Request.make("POST", f"/api/{method}", "", headers, body))
            assert answer.status == 200 and isinstance(answer.body["ok"], bool), (field, value, answer.body)


def test_a_slack_without_users_refuses_the_token_as_slack_does_for_a_deactivated_account():
    world = World.build(
        scene("scene: empty\ntask: t\nworld:\n  slack:\n    channels: { c: { name: general } }\n")
    )
    headers = {"Authorization": f"Bearer {world.credentials['slack']['token']}"}
    answer = world.call("slack", Request.make("POST", "/api/auth.test", "", headers))
    assert answer.body == {"ok": False, "error": "account_inactive"}
    assert world.final_state()["tools"]["slack"]["channels"]["general"]["messages"] == []
