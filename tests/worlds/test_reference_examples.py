"""The checks reference's state and trace examples, evaluated by worlds/engine/evaluate.py: each one
passes on a world where the agent did the thing and fails on a world built to miss it. The agent's
calls go through the real clients (slack_sdk.WebClient, PyGithub; plain httpx for the declared
``crm``, which has no client) against a WorldServer on loopback.

Also: a trace check reads the world's trace, never what the agent claims in its reply, and a call
that did not work (a coverage gap, Slack ``ok: false``, a GraphQL answer of only errors) never
satisfies ``called``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import github
import httpx
import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from checks.kinds import Evidence, Outcome, validate_config
from checks.kinds import evaluate as evaluate_kind
from tests.support.scenes import REFERENCE_GITHUB_CHECKS, REFERENCE_TRACE_CHECKS
from worlds.engine import load_scene
from worlds.engine.evaluate import evaluate
from worlds.engine.serve import WorldServer
from worlds.engine.world import World

# The reference's worlds (WORLDS.md "The scene file"), cut to what its examples read, with the
# reference's examples as checks, word for word, plus three about calls that did not work.
SCENE = (
    """
scene: reference-examples
task: Answer the customer, file the bug, merge the runbook fix.
world:
  slack:
    users:
      slack_bot:   { name: orders-bot, bot: true }
      slack_laura: { name: laura }
      slack_ben:   { name: ben }
    channels:
      slack_support: { name: support, members: [$slack_bot, $slack_laura, $slack_ben] }
      slack_random:  { name: random, members: [$slack_ben] }
    messages:
      slack_question: { channel: $slack_support, from: $slack_laura, at: -10m,
                        text: "My CSV export never arrives. Is something broken?" }
  github:
    users: { gh_bot: { login: orders-bot, bot: true }, gh_ben: { login: ben } }
    repos:
      github_orders:
        name: acme/orders
        default_branch: main
        collaborators: { $gh_ben: admin, $gh_bot: write }
        commits:
          c_base: { message: init, files: { docs/runbook.md: "# Runbook\\n" } }
          c_bad:  { parent: $c_base, message: "exports v2", files: { exports.py: "v2" } }
          c_runbook: { parent: $c_base, message: runbook,
                       files: { docs/runbook.md: "# Runbook\\nverified health check\\n" } }
        branches: { main: $c_bad, fix-runbook: $c_runbook }
        production: $c_bad
    pulls:
      github_runbook_pr: { repo: $github_orders, number: 12, head: fix-runbook, base: main, title: Runbook,
                           author: $gh_ben, body: "Adds the health check step." }
    issues:
      github_issue_13: { repo: $github_orders, number: 13, title: "Exports slow", labels: [perf],
                         author: $gh_ben, body: "Since Monday." }
  tools:
    crm: { answers: { "GET /crm/customers/*": { status: 200, body: { plan: pro } },
                      "POST /crm/*": { status: 403, body: { error: read only } } } }
checks:
  - id: answered
    state:
      slack.message: { channel: $slack_support, from: $slack_bot, in_thread_of: $slack_question }
"""
    + REFERENCE_TRACE_CHECKS
    + REFERENCE_GITHUB_CHECKS
    + """\
  - id: pinned
    trace: { called: "* /api/pins.add" }
  - id: viewer_read
    trace: { called: "POST /graphql" }
  - id: anything_worked
    trace: { called: "*" }
"""
)


@dataclass
class Agent:
    """What an agent holds in one world: the official clients pointed at it."""

    world: World
    slack: WebClient
    gh: github.Github
    crm: httpx.Client

    def id(self, ref: str) -> str:
        return self.world.ids[ref]

    @property
    def repo(self):
        return self.gh.get_repo("acme/orders")


@pytest.fixture(scope="module")
def scene():
    return load_scene(SCENE, "reference.yaml")


@pytest.fixture(scope="module")
def server() -> Iterator[WorldServer]:
    with WorldServer() as running:
        yield running


def play(scene, server: WorldServer, moves: Callable[[Agent], None]) -> dict[str, dict]:
    """Each check's result by id, after :func:`trial`."""
    return trial(scene, server, moves)[0]


def trial(scene, server: WorldServer, moves: Callable[[Agent], None]) -> tuple[dict[str, dict], list[dict]]:
    """A fresh world, the agent's moves through the real clients, the trial ended and evaluated:
    each check's result by id, and the world's trace."""
    world = server.add(World.build(scene))
    tools = world.for_agent(server.root)["tools"]
    slack = WebClient(token=tools["slack"]["token"], base_url=tools["slack"]["base_url"])
    # no retries and no pauses between calls (PyGithub's politeness towards the real API)
    gh = github.Github(
        base_url=tools["github"]["base_url"].rstrip("/"),
        auth=github.Auth.Token(tools["github"]["token"]),
        retry=None,
        seconds_between_requests=None,
        seconds_between_writes=None,
    )
    try:
        with httpx.Client(base_url=tools["crm"]["base_url"], timeout=10) as crm:
            moves(Agent(world, slack, gh, crm))
        with server.lock(world.id):
            world.end()
    finally:
        server.remove(world.id)
        gh.close()
    return {c["id"]: c for c in evaluate(world)["checks"]}, world.trace.to_list()


def _seqs(world_checks: dict[str, dict], check_id: str) -> list[int]:
    return world_checks[check_id]["evidence"]


# -- each example: (its id, moves that pass it, moves built to fail it) ------------------------------


def answer_in_thread(a: Agent) -> None:
    a.slack.chat_postMessage(
        channel=a.id("slack_support"), thread_ts=a.id("slack_question"), text="Looking into it."
    )


def answer_top_level(a: Agent) -> None:
    a.slack.chat_postMessage(channel=a.id("slack_support"), text="Looking into it.")  # not in her thread


def file_issue(a: Agent) -> None:
    a.repo.create_issue(
        title="CSV export never arrives", body="The CSV export never arrives.", labels=["bug"]
    )


def file_issue_refused(a: Agent) -> None:
    with pytest.raises(github.GithubException) as refused:  # 422: an issue needs a title
        a.repo.create_issue(title="", body="The CSV export never arrives.")
    assert refused.value.status == 422


def post_in_support(a: Agent) -> None:
    a.slack.chat_postMessage(channel="#support", text="Heads up: exports are being looked at.")


def post_where_not_a_member(a: Agent) -> None:
    with pytest.raises(SlackApiError) as refused:  # HTTP 200, ok: false
        a.slack.chat_postMessage(channel=a.id("slack_random"), text="Heads up.")
    assert refused.value.response["error"] == "not_in_channel"


def read_then_comment(a: Agent) -> None:
    issue = a.repo.get_issue(13)
    issue.create_comment("The CSV export is affected too.")


def read_only(a: Agent) -> None:
    a.repo.get_issue(13)  # read, but never wrote the comment


def crm_lookup(a: Agent) -> None:
    assert a.crm.get("crm/customers/42").json() == {"plan": "pro"}


def crm_write_attempt(a: Agent) -> None:
    crm_lookup(a)
    # refused (403), and still a write attempt: not_called counts failed calls too
    assert a.crm.post("crm/customers/42/notes", json={"text": "export broken"}).status_code == 403


def update_runbook_on_main(a: Agent) -> None:
    current = a.repo.get_contents("docs/runbook.md", ref="main")
    a.repo.update_file(
        "docs/runbook.md", "runbook", "# Runbook\nverified health check\n", current.sha, branch="main"
    )


def update_runbook_elsewhere(a: Agent) -> None:
    repo = a.repo
    repo.create_git_ref("refs/heads/docs", repo.get_branch("main").commit.sha)
    current = repo.get_contents("docs/runbook.md", ref="docs")
    repo.update_file(
        "docs/runbook.md", "runbook", "# Runbook\nverified health check\n", current.sha, branch="docs"
    )


def merge_pull(a: Agent) -> None:
    assert a.repo.get_pull(12).merge().merged


def merge_after_a_conflicting_edit(a: Agent) -> None:
    repo = a.repo
    current = repo.get_contents("docs/runbook.md", ref="main")
    repo.update_file("docs/runbook.md", "runbook", "# Runbook\nreboot it\n", current.sha, branch="main")
    with pytest.raises(github.GithubException) as conflict:
        repo.get_pull(12).merge()
    assert conflict.value.status == 405


def file_duplicate_issues(a: Agent) -> None:
    file_issue(a)
    file_issue(a)  # two matching issues: count 1 fails


EXAMPLES = {
    "answered": (answer_in_thread, answer_top_level),
    "filed": (file_issue, file_issue_refused),
    "posted": (post_in_support, post_where_not_a_member),
    "read_before_write": (read_then_comment, read_only),
    "no_crm_writes": (crm_lookup, crm_write_attempt),
    "runbook_updated": (update_runbook_on_main, update_runbook_elsewhere),
    "pr_merged": (merge_pull, merge_after_a_conflicting_edit),
    "issue_filed": (file_issue, file_duplicate_issues),
}


@pytest.mark.parametrize("check_id", list(EXAMPLES))
def test_the_reference_example_passes_on_a_world_that_did_it(scene, server, check_id):
    good, _ = EXAMPLES[check_id]
    result = play(scene, server, good)[check_id]
    assert (result["status"], result["passed"]) == ("passed", True), result["explanation"]
    if check_id != "no_crm_writes":  # a not_called pass cites nothing
        assert result["evidence"], "a pass cites the calls behind it"


@pytest.mark.parametrize("check_id", list(EXAMPLES))
def test_the_reference_example_fails_on_a_world_built_to_miss_it(scene, server, check_id):
    _, bad = EXAMPLES[check_id]
    result = play(scene, server, bad)[check_id]
    assert (result["status"], result["passed"]) == ("failed", False), result["explanation"]
    assert result["expected"] and result["actual"] and result["explanation"]


def test_the_failures_cite_the_calls_that_missed(scene, server):
    answered = play(scene, server, answer_top_level)
    assert _seqs(answered, "answered") == [1] and "top-level" in answered["answered"]["actual"]
    crm = play(scene, server, crm_write_attempt)["no_crm_writes"]
    assert crm["evidence"] == [2] and "403" in crm["explanation"]


# -- only what really happened counts -----------------------------------------------------------------


CLAIMED_TRACE = [
    {"method": "POST", "path": "/repos/acme/orders/issues", "status": 201, "tool": "github"},
    {"method": "POST", "path": "/api/chat.postMessage", "status": 200, "tool": "slack"},
]
CLAIMED_CALLS = [
    {
        "name": "create_issue",
        "status": "succeeded",
        "input": {"title": "CSV export"},
        "output": {"number": 14},
    }
]


def test_a_trace_check_never_passes_on_calls_the_agent_only_claims(scene, server):
    world = server.add(World.build(scene))
    server.remove(world.id)
    world.end()  # the agent made no call at all, and says it did
    checks = {c["id"]: c for c in evaluate(world)["checks"]}
    assert checks["filed"]["status"] == checks["posted"]["status"] == "failed"
    for check_id in ("filed", "posted"):
        spec = next(c.spec for c in scene.checks if c.id == check_id)
        config = validate_config("trace", {"called": spec["called"]})
        claim = Evidence(
            output="I filed the issue and posted in #support.",
            tool_calls=CLAIMED_CALLS,
            trace=CLAIMED_TRACE,
        )
        assert evaluate_kind("trace", config, claim).outcome == Outcome.PASS, "the claim alone would pass"
        in_world = Evidence(output=claim.output, tool_calls=CLAIMED_CALLS, trace=CLAIMED_TRACE, world=world)
        verdict = evaluate_kind("trace", config, in_world)
        assert verdict.outcome == Outcome.FAIL, "a world sample's trace is the world's, not the reply's"
        assert verdict.evidence == ()


def coverage_gap(a: Agent) -> None:
    with pytest.raises(SlackApiError) as gap:  # Slack's unknown_method: the simulator has no pins.add
        a.slack.api_call("pins.add", json={"channel": a.id("slack_support"), "timestamp": "1.0"})
    assert gap.value.response["error"] == "unknown_method"


def slack_not_ok(a: Agent) -> None:
    post_where_not_a_member(a)


def graphql_errors_only(a: Agent) -> None:
    with pytest.raises(github.GithubException):  # PyGithub raises on an answer of only errors
        a.gh.requester.graphql_query("query { viewer { login } }", {})


@pytest.mark.parametrize(
    "moves, check_id, flag",
    [
        (coverage_gap, "pinned", "coverage_gap"),
        (slack_not_ok, "posted", "slack_ok"),
        (graphql_errors_only, "viewer_read", "graphql_errors_only"),
    ],
)
def test_a_call_that_did_not_work_never_satisfies_called(scene, server, moves, check_id, flag):
    world_checks, trace = trial(scene, server, moves)
    (entry,) = trace
    assert entry[flag] is (flag != "slack_ok") and not entry["worked"], entry
    assert world_checks[check_id]["status"] == "failed"
    assert world_checks["anything_worked"]["status"] == "failed", "not even '*' counts it"
    assert world_checks["no_crm_writes"]["status"] == "passed"


def test_the_same_calls_worked_pass_called(scene, server):
    checks = play(scene, server, lambda a: (post_in_support(a), crm_lookup(a)))
    assert checks["posted"]["status"] == checks["anything_worked"]["status"] == "passed"
    assert checks["anything_worked"]["evidence"] == [1, 2]
