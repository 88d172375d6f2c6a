import pytest

from worlds.engine.refs import Namespace, RefError


@pytest.fixture
def ns():
    ns = Namespace()
    ns.declare("slack_support", "channel", "slack", "world.slack.channels.slack_support")
    ns.declare("slack_bot", "user", "slack", "world.slack.users.slack_bot")
    ns.declare("slack_question", "message", "slack", "world.slack.messages.slack_question")
    ns.declare("gh_ben", "user", "github", "world.github.users.gh_ben")
    ns.declare("github_issue_13", "issue", "github", "world.github.issues.github_issue_13")
    ns.declare("laura", "person", "", "people.laura")
    ns.facts["laura"] = {"workspace"}
    ns.decisions["laura"] = {"severity": ["p1", "p2"]}
    return ns


@pytest.mark.parametrize(
    "value, accepts, bare, ref",
    [
        ("$slack_support", ("slack.channel",), False, "slack_support"),
        ("$channel.slack_support", ("slack.channel",), False, "slack_support"),
        ("$slack_bot", ("user",), False, "slack_bot"),
        ("$gh_ben", ("slack.user", "github.user"), False, "gh_ben"),
        ("laura", ("person",), True, "laura"),
        ("$laura", ("person",), True, "laura"),
        ("$person.laura", ("person",), True, "laura"),
        ("$laura", ("slack.user", "person"), False, "laura"),
    ],
)
def test_resolves(ns, value, accepts, bare, ref):
    assert ns.resolve(value, accepts, bare_person=bare).ref == ref


@pytest.mark.parametrize(
    "value, accepts, bare, message",
    [
        ("$slak_support", ("slack.channel",), False, "unknown ref $slak_support"),
        (
            "$message.slack_support",
            ("slack.channel",),
            False,
            "$message.slack_support names a channel, not a message",
        ),
        (
            "$chanel.slack_support",
            ("slack.channel",),
            False,
            "unknown kind 'chanel' in $chanel.slack_support",
        ),
        (
            "$github_issue_13",
            ("github.pull",),
            False,
            "$github_issue_13 is a GitHub issue; expected a GitHub pull",
        ),
        ("$gh_ben", ("slack.user",), False, "$gh_ben is a GitHub user; expected a Slack user"),
        (
            "$slack_question",
            ("slack.channel", "github.issue"),
            False,
            "$slack_question is a Slack message; expected a Slack channel or a GitHub issue",
        ),
        ("slack_support", ("slack.channel",), False, "must be a ref: write $slack_support"),
        ("slack_support", ("slack.channel",), True, "must be a ref: write $slack_support"),
        ("nobody", ("person",), True, "unknown ref nobody"),
        (12, ("slack.channel",), False, "must be a ref ($name), not 12"),
        ("$", ("slack.channel",), False, "unknown ref $"),
    ],
)
def test_rejects(ns, value, accepts, bare, message):
    with pytest.raises(RefError) as info:
        ns.resolve(value, accepts, bare_person=bare)
    assert str(info.value).startswith(message)


def test_one_namespace_duplicates_return_the_first(ns):
    first = ns.declare("slack_support", "person", "", "people.slack_support")
    assert first.path == "world.slack.channels.slack_support"


@pytest.mark.parametrize(
    "value, expected",
    [("laura.workspace", ("laura", "workspace")), ("$laura.workspace", ("laura", "workspace"))],
)
def test_facts(ns, value, expected):
    assert ns.fact(value) == expected


@pytest.mark.parametrize(
    "value, message",
    [
        ("laura.nope", "unknown fact laura.nope: laura has no fact 'nope'"),
        ("ben.workspace", "unknown person 'ben' in ben.workspace"),
        ("workspace", "must be a fact written <person>.<id>"),
        ("$slack_bot.workspace", "unknown person 'slack_bot'"),
    ],
)
def test_bad_facts(ns, value, message):
    with pytest.raises(RefError) as info:
        ns.fact(value)
    assert str(info.value).startswith(message)
