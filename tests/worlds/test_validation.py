# ruff: noqa: E501 - expected problems are written whole, as the console prints them
"""Scene validation: every problem at once, each `file:line: field.path: message`."""

import pytest

from worlds.engine import SceneInvalid, load_scene

TRACE_CHECKS = "".join(f'  - id: c{i}\n    trace: {{ called: "GET /x" }}\n' for i in range(2, 21))

PLANTED = (
    """\
scene: bad-scene
task: Answer the customer.
colour: blue
world:
  slack:
    users:
      slack_bot: { name: bot, bot: true }
      slack_laura: { name: laura, nickname: lk }
    channels:
      slack_support: { name: support, members: [$slack_bot, $slack_laura] }
    messages:
      slack_question: { channel: $slack_support, from: $slack_laura, at: 10 minutes, text: "Help?" }
checks:
  - id: c0
    state: { slack.message: { channel: $slak_support, from: $slack_bot } }
  - id: c1
    state: { slack.message: { channel: $channel.slack_question } }
"""
    + TRACE_CHECKS
)


def problems(text, file="scene.yaml"):
    with pytest.raises(SceneInvalid) as info:
        load_scene(text, file)
    return info.value.lines()


def test_every_problem_is_listed_on_its_line():
    """Issue 15, must hold: an unknown ref, a $kind.name of the wrong kind, a bad duration, 21 checks and
    an unknown field, all in one scene, are each reported on their own line."""
    assert PLANTED.count("- id: ") == 21
    assert problems(PLANTED, "bad.yaml") == [
        "bad.yaml:3: colour: unknown field; allowed: scene, description, task, clock, trials, pass_rate, "
        "min_valid, world, people, world_rules, checks, pass, judge",
        "bad.yaml:8: world.slack.users.slack_laura.nickname: unknown field for a slack user; "
        "allowed: name, real_name, email, title, bot",
        "bad.yaml:12: world.slack.messages.slack_question.at: '10 minutes' is not a duration; "
        "write e.g. -10m, 30s or 1m30s",
        "bad.yaml:13: checks: at most 20 checks per scene, not 21",
        "bad.yaml:15: checks[0].state.slack.message.channel: unknown ref $slak_support",
        "bad.yaml:17: checks[1].state.slack.message.channel: $channel.slack_question names a message, not a channel",
    ]


def test_the_same_problems_in_json_on_their_lines():
    text = """{
  "scene": "bad-scene", "task": "t",
  "world": {"slack": {"users": {"u": {"name": "bot", "bot": true}},
                      "channels": {"c": {"name": "x"}}}},
  "checks": [
    {"id": "a",
     "state": {"slack.message": {"channel": "$cc"}}},
    {"id": "b", "trace": {"called": "GET /x"}, "extra": 1}
  ]
}"""
    assert problems(text, "s.json") == [
        "s.json:7: checks[0].state.slack.message.channel: unknown ref $cc",
        "s.json:8: checks[1].extra: unknown check kind or field; kinds: state, trace, judge, revealed, knows, told, "
        "decided, message, never, before, within",
    ]


BASE = """\
scene: s
task: t
world:
  slack:
    users: { slack_bot: { name: bot, bot: true }, slack_laura: { name: laura } }
    channels: { slack_support: { name: support } }
    messages: { slack_q: { channel: $slack_support, from: $slack_laura, text: hi } }
  github:
    users: { gh_bot: { login: bot, bot: true } }
    repos:
      github_orders:
        name: acme/orders
        commits: { c_base: { message: init } }
    pulls: { pr: { repo: $github_orders, head: fix, title: Fix } }
    issues: { issue_13: { repo: $github_orders, title: Slow } }
  datadog:
    monitors: { mon: { name: m, state: OK } }
people:
  laura:
    slack: $slack_laura
    facts: { workspace: { says: "acme-eu-2" } }
    decisions: { severity: { options: [p1, p2], choose: p1 } }
world_rules:
  faults:
    - id: down
      effects: { datadog.monitor: { monitor: $mon, is: Alert } }
checks:
"""
LINE = BASE.count("\n") + 1  # the first check line


def test_the_base_scene_is_valid():
    load_scene(BASE + "  - { id: ok, trace: { called: '*' } }\n")


@pytest.mark.parametrize(
    "checks, expected",
    [
        (
            "- { id: a, state: { github.pull: { pull: $issue_13, merged: true } } }",
            "checks[0].state.github.pull.pull: $issue_13 is a GitHub issue; expected a GitHub pull",
        ),
        (
            "- { id: a, state: { github.pull: { pull: $issue.pr, merged: true } } }",
            "checks[0].state.github.pull.pull: $issue.pr names a pull, not an issue",
        ),
        (
            "- { id: a, state: { datadog.monitor: { monitor: $mon, is: OK }, is: Alert } }",
            "checks[0].state.is: given inside datadog.monitor as 'OK' and beside it as 'Alert'",
        ),
        (
            "- { id: a, state: { github.file_at: [$github_orders, main, README.md] } }",
            "checks[0].state.github.file_at: give exactly one of contains or equals",
        ),
        (
            "- { id: a, state: { github.issue: { repo: $github_orders, count: 1, count_gte: 1 } } }",
            "checks[0].state.github.issue: count cannot be given with count_gte or count_lte",
        ),
        (
            "- { id: a, state: { github.permission: { repo: $github_orders, user: $gh_bot, is: owner } } }",
            "checks[0].state.github.permission.is: must be one of read, write, admin, none, not 'owner'",
        ),
        (
            "- { id: a, state: { slack.messages: { channel: $slack_support } } }",
            "checks[0].state.slack.messages: unknown state check slack.messages; known: slack.message, github.file_at, "
            "github.pull, github.production, github.issue, github.permission, datadog.monitor, datadog.downtime, "
            "pagerduty.incident, okta.user, fault_resolved",
        ),
        (
            "- { id: a, state: { slack.message: { channel: $slack_support, colour: red } } }",
            "checks[0].state.slack.message.colour: unknown field for slack.message; allowed: channel, from, "
            "text_contains, in_thread_of, count_gte",
        ),
        (
            "- { id: a, state: { slack.message: { from: $slack_bot } } }",
            "checks[0].state.slack.message: channel is required",
        ),
        (
            "- { id: a, state: { datadog.downtime: $mon, remaining_gte: 1 minute } }",
            "checks[0].state.remaining_gte: '1 minute' is not a duration; write e.g. 500ms, 30s, 5m, 1h or 1m30s",
        ),
        (
            "- { id: a, state: { fault_resolved: $downn } }",
            "checks[0].state.fault_resolved: unknown ref $downn",
        ),
        (
            "- { id: a, grade: x }",
            "checks[0].grade: unknown check kind or field; kinds: state, trace, judge, revealed, knows, told, decided, "
            "message, never, before, within",
        ),
        (
            "- { id: a }",
            "checks[0]: a check needs exactly one kind: state, trace, judge, revealed, knows, told, "
            "decided, message, never, before, within",
        ),
        (
            "- { id: a, judge: x, trace: { called: '*' } }",
            "checks[0]: a check has exactly one kind, not 2 (judge, trace)",
        ),
        ("- { trace: { called: '*' } }", "checks[0]: id is required"),
        (
            "- { id: a, trace: { called: 'GET' } }",
            'checks[0].trace.called: must be a call pattern "<METHOD> <PATH>" or "*", not \'GET\'',
        ),
        ("- { id: a, trace: {} }", "checks[0].trace: give called, not_called or both"),
        (
            "- { id: a, trace: { not_called: '*', status: any } }",
            "checks[0].trace.status: status: any only goes with called",
        ),
        (
            "- { id: a, revealed: [laura.nope] }",
            "checks[0].revealed[0]: unknown fact laura.nope: laura has no fact 'nope'",
        ),
        ("- { id: a, knows: [bob, laura.workspace] }", "checks[0].knows[0]: unknown ref bob"),
        (
            "- { id: a, decided: [laura, severity, p9] }",
            "checks[0].decided[2]: 'p9' is not an option of laura.severity: p1, p2",
        ),
        (
            "- { id: a, message: { to: $person.laura, in: $slack_q } }",
            "checks[0].message.in: $slack_q is a Slack message; expected a Slack channel or a GitHub issue or a GitHub pull",
        ),
        (
            "- { id: a, never: {} }",
            "checks[0].never: give at least one of to, in, in_thread_of, from, text_contains, fact",
        ),
        (
            "- { id: a, before: [{ called: '*' }] }",
            "checks[0].before: must be a list of at least two milestones",
        ),
        (
            "- { id: a, before: [{ called: '*' }, { happened: x }] }",
            "checks[0].before[1].happened: unknown milestone; one of called, message, decided, knows, told, revealed, "
            "issue_labeled, fault_resolved",
        ),
        (
            "- { id: a, within: { event: { called: '*' }, limit: soon } }",
            "checks[0].within.limit: 'soon' is not a duration; write e.g. 500ms, 30s, 5m, 1h or 1m30s",
        ),
    ],
)
def test_check_problems(checks, expected):
    assert problems(BASE + "  " + checks + "\n") == [f"scene.yaml:{LINE}: {expected}"]


@pytest.mark.parametrize(
    "checks",
    [
        "- { id: a, state: { datadog.monitor: { monitor: $mon, is: OK }, is: OK } }",
        "- { id: a, state: { datadog.monitor: $mon, is: OK } }",
        "- { id: a, state: { github.file_at: { repo: $github_orders, revision: $c_base, path: x }, equals: y } }",
        "- { id: a, knows: [$person.laura, laura.workspace] }",
        "- { id: a, message: { in: $issue_13, from: $gh_bot, text_contains: [a, b] } }",
        "- { id: a, within: { event: { fault_resolved: $down }, of: { called: '*' }, limit: 1m30s } }",
    ],
)
def test_valid_check_shapes(checks):
    load_scene(BASE + "  " + checks + "\n")


def test_pass_ids_and_duplicate_check_ids():
    text = BASE + "  - { id: a, judge: x }\n  - { id: a, judge: y }\npass: [a, b]\n"
    assert problems(text) == [
        f"scene.yaml:{LINE + 1}: checks[1].id: duplicate check id 'a' (first at checks[0])",
        f"scene.yaml:{LINE + 2}: pass[1]: names no check: 'b'",
    ]


@pytest.mark.parametrize(
    "old, new, expected",
    [
        (
            "slack_bot: { name: bot, bot: true }",
            "slack_bot: { name: bot }",
            "5: world.slack.users: exactly one user must have bot: true (the agent's own account); found none",
        ),
        (
            "slack_laura: { name: laura }",
            "slack_laura: { name: laura, bot: true }",
            "5: world.slack.users: exactly one user must have bot: true (the agent's own account); "
            "found 2 (slack_bot, slack_laura)",
        ),
        (
            "slack_laura: { name: laura }",
            "slack_laura: { name: laura, bot: yes }",
            "5: world.slack.users.slack_laura.bot: must be true or false, not 'yes'",
        ),
        (
            "channels: { slack_support: { name: support } }",
            "channels: { slack_q: { name: support } }",
            "7: world.slack.messages.slack_q: duplicate ref slack_q (first declared on line 6, world.slack.channels.slack_q)",
        ),
        (
            "mon: { name: m, state: OK }",
            "laura: { name: m, state: OK }",
            "19: people.laura: duplicate ref laura (first declared on line 17, world.datadog.monitors.laura)",
        ),
        (
            "    pulls: {",
            "    pull: {}\n    pulls: {",
            "14: world.github.pull: unknown record kind for github; allowed: users, repos, pulls, issues",
        ),
        (
            "  datadog:",
            "  jira: {}\n  datadog:",
            "16: world.jira: unknown tool 'jira'; known tools: slack, github, datadog, pagerduty, okta; "
            "declare other tools under world.tools",
        ),
        (
            "name: acme/orders",
            "name: orders",
            "12: world.github.repos.github_orders.name: must be owner/name, not 'orders'",
        ),
        (
            "from: $slack_laura, text: hi",
            "from: $slack_laura, dm: $slack_bot, text: hi",
            "7: world.slack.messages.slack_q: give exactly one of channel or dm",
        ),
        ("task: t", "task: t\ntrials: 11", "3: trials: must be between 1 and 10, not 11"),
        (
            "task: t",
            "task: t\nclock: { start: tomorrow, per_call: 1 }",
            "3: clock.per_call: must be a duration such as 500ms, 30s, 5m, 1h or 1m30s, not the number 1 (add a unit: 1s)",
        ),
        (
            "choose: p1",
            "choose: p3",
            "22: people.laura.decisions.severity.choose: 'p3' is not one of options (p1, p2)",
        ),
        (
            "is: Alert",
            "is: Broken",
            "26: world_rules.faults[0].effects.datadog.monitor.is: must be one of OK, Alert, Warn, No Data, not 'Broken'",
        ),
    ],
)
def test_scene_rules(old, new, expected):
    assert old in BASE
    text = BASE.replace(old, new, 1) + "  - { id: ok, trace: { called: '*' } }\n"
    assert expected in [line.removeprefix("scene.yaml:") for line in problems(text)]


def test_too_many_records_for_one_tool():
    users = "".join(f"      u{i}: {{ name: u{i} }}\n" for i in range(200))
    text = BASE.replace(
        "  github:\n", "  okta:\n    users:\n" + users.replace("name:", "login:") + "  github:\n", 1
    )
    load_scene(text + "  - { id: ok, judge: x }\n")  # 200 is the limit
    text = text.replace("      u0: ", "      extra: { login: e }\n      u0: ", 1)
    assert problems(text + "  - { id: ok, judge: x }\n") == [
        "scene.yaml:8: world.okta: at most 200 records per tool, not 201"
    ]


def test_not_an_object():
    assert problems("- 1\n- 2\n") == [
        "scene.yaml:1: a scene must be an object (scene, task, world, checks, ...), not a list"
    ]
