"""The simulated GitHub, driven by the unmodified PyGithub client against a world on loopback: every
endpoint, pagination, GitHub's error envelopes, coverage gaps, GraphQL, the reference's github.*
checks passing and failing, the trace, determinism and a snapshot carried on mid-trial."""

import base64
import json
from pathlib import Path

import github
import httpx
import pytest

from tests.support.scenes import REFERENCE_GITHUB_CHECKS
from tests.support.served_world import served_world
from worlds.engine import load_scene
from worlds.engine.http import Request
from worlds.engine.world import World

SCENE = (
    """
scene: github-runbook
task: Merge the runbook fix and file a bug about CSV exports.
world:
  github:
    users: { gh_bot: { login: orders-bot, bot: true }, gh_ben: { login: ben }, gh_carol: { login: carol } }
    repos:
      github_orders:
        name: acme/orders
        default_branch: main
        collaborators: { $gh_ben: admin, $gh_bot: admin }
        commits:
          c_base: { message: init, files: { docs/runbook.md: "# Runbook\\n", README.md: "orders\\n" } }
          c_bad: { parent: $c_base, message: "exports v2", files: { exports.py: "v2" } }
          c_runbook: { parent: $c_base, message: runbook,
                       files: { docs/runbook.md: "# Runbook\\nverified health check\\n" } }
          c_other: { parent: $c_base, message: "other runbook",
                     files: { docs/runbook.md: "# Runbook\\nreboot\\n" } }
        branches: { main: $c_bad, fix-runbook: $c_runbook, other-runbook: $c_other }
        production: $c_bad
      github_secret:
        name: acme/secret
        private: true
        commits: { s_base: { message: init, files: { a.txt: a } } }
        branches: { main: $s_base }
    pulls:
      github_runbook_pr: { repo: $github_orders, number: 12, head: fix-runbook, base: main, title: Runbook,
                           author: $gh_ben, body: "Adds the health check step." }
      github_other_pr: { repo: $github_orders, head: other-runbook, base: main, title: "Other runbook",
                         author: $gh_ben }
    issues:
      github_issue_13: { repo: $github_orders, number: 13, title: "Exports slow", labels: [perf], state: open,
                         author: $gh_ben, assignees: [$gh_ben], body: "Since Monday.",
                         comments: [{ from: $gh_ben, body: "Looking.", at: -1h }] }
checks:
"""
    + REFERENCE_GITHUB_CHECKS
    + """\
  - id: back_to_base
    state: { github.production: { repo: $github_orders, commit: $c_base } }
  - id: carol_writes
    state: { github.permission: { repo: $github_orders, user: $gh_carol, is: write } }
  - id: carol_secret
    state: { github.permission: { repo: $github_secret, user: $gh_carol, is: none } }
  - id: read_before_write
    trace: { called: ["GET /repos/acme/orders/issues/13", "POST /repos/acme/orders/issues/13/comments"] }
  - id: filed
    trace: { called: "POST /repos/acme/orders/issues" }
"""
)


@pytest.fixture(scope="module")
def scene():
    return load_scene(SCENE, "github.yaml")


def client(server, world, token=None):
    tools = world.for_agent(server.root)["tools"]["github"]
    auth = github.Auth.Token(token or tools["token"])
    # no pauses between calls (PyGithub's politeness towards the real API)
    return github.Github(
        base_url=tools["base_url"].rstrip("/"),
        auth=auth,
        retry=None,
        seconds_between_requests=None,
        seconds_between_writes=None,
    )


def check(world, scene, check_id):
    spec = next(c.spec for c in scene.checks if c.id == check_id)
    return world.state_check(spec["check"], spec)


def trace(world):
    return [(e["method"], e["path"], e["status"]) for e in world.trace.to_list()]


# -- repos, contents, branches, refs, commits -----------------------------------------------------


def test_repo_and_contents_read_and_write_through_commits(served):
    server, world = served
    repo = client(server, world).get_repo("acme/orders")
    assert (repo.full_name, repo.default_branch, repo.private, repo.id) == (
        "acme/orders",
        "main",
        False,
        world.ids["github_orders"],
    )
    assert repo.owner.login == "acme"
    runbook = repo.get_contents("docs/runbook.md")
    assert runbook.decoded_content == b"# Runbook\n" and runbook.encoding == "base64"
    assert repo.get_contents("docs/runbook.md", ref="fix-runbook").decoded_content.endswith(b"check\n")
    assert [c.path for c in repo.get_contents("")] == ["README.md", "docs", "exports.py"]

    updated = repo.update_file(
        "docs/runbook.md", "runbook: check", "# Runbook\nverified health check\n", runbook.sha
    )
    assert updated["commit"].sha == repo.get_branch("main").commit.sha
    assert updated["commit"].parents[0].sha == world.ids["c_bad"]
    assert repo.get_contents("docs/runbook.md").decoded_content.endswith(b"verified health check\n")
    created = repo.create_file("docs/new.md", "add a page", "new\n", branch="fix-runbook")
    assert created["content"].path == "docs/new.md"
    assert repo.get_contents("docs/new.md", ref="fix-runbook").decoded_content == b"new\n"

    with pytest.raises(github.GithubException) as wrong_sha:
        repo.update_file("docs/runbook.md", "again", "x", runbook.sha)  # the old blob: stale
    assert wrong_sha.value.status == 409
    with pytest.raises(github.GithubException) as no_sha:
        repo.create_file("docs/runbook.md", "again", "x")
    assert no_sha.value.status == 422
    with pytest.raises(github.UnknownObjectException):
        repo.get_contents("nope.md")
    assert check(world, world.scene, "runbook_updated").passed
    assert check(world, world.scene, "runbook_updated").evidence == (5,)


def test_branches_refs_and_commits(served):
    server, world = served
    repo = client(server, world).get_repo("acme/orders")
    assert [b.name for b in repo.get_branches()] == ["fix-runbook", "main", "other-runbook"]
    main = repo.get_branch("main")
    assert main.commit.sha == world.ids["c_bad"] and len(main.commit.sha) == 40
    ref = repo.create_git_ref("refs/heads/hotfix", world.ids["c_base"])
    assert (ref.ref, ref.object.sha) == ("refs/heads/hotfix", world.ids["c_base"])
    assert repo.get_git_ref("heads/hotfix").object.sha == world.ids["c_base"]
    with pytest.raises(github.GithubException) as exists:
        repo.create_git_ref("refs/heads/hotfix", world.ids["c_base"])
    assert exists.value.status == 422
    history = [c.sha for c in repo.get_commits(sha="main")]
    assert history == [world.ids["c_bad"], world.ids["c_base"]]
    commit = repo.get_commit(world.ids["c_bad"])
    assert commit.commit.message == "exports v2"
    assert [(f.filename, f.status) for f in commit.files] == [("exports.py", "added")]
    with pytest.raises(github.UnknownObjectException):
        repo.get_branch("nope")


# -- pulls ----------------------------------------------------------------------------------------


def test_merging_the_runbook_pull_passes_the_references_checks_and_a_conflict_is_405(served):
    server, world = served
    scene = world.scene
    repo = client(server, world).get_repo("acme/orders")
    before_file, before_pull = check(world, scene, "runbook_updated"), check(world, scene, "pr_merged")
    assert not before_file.passed and not before_pull.passed
    assert "verified health check" in before_file.explanation and "# Runbook" in before_file.actual

    assert [p.number for p in repo.get_pulls(state="open")] == [14, 12]
    pull = repo.get_pull(12)
    assert (pull.head.ref, pull.base.ref, pull.merged, pull.user.login) == (
        "fix-runbook",
        "main",
        False,
        "ben",
    )
    status = pull.merge()
    assert status.merged and len(status.sha) == 40
    assert repo.get_branch("main").commit.sha == status.sha
    assert [p.sha for p in repo.get_commit(status.sha).parents] == [
        world.ids["c_bad"],
        world.ids["c_runbook"],
    ]
    assert repo.get_pull(12).merged and repo.get_pull(12).state == "closed"
    assert repo.get_pulls(state="closed")[0].number == 12

    after_file, after_pull = check(world, scene, "runbook_updated"), check(world, scene, "pr_merged")
    assert after_file.passed and after_pull.passed
    merge_seq = next(e.seq for e in world.trace if e.method == "PUT")
    assert trace(world)[merge_seq - 1] == ("PUT", "/repos/acme/orders/pulls/12/merge", 200)
    assert after_file.evidence == (merge_seq,) and merge_seq in after_pull.evidence
    files = world.final_state()["tools"]["github"]["repos"]["acme/orders"]["files"]["main"]
    assert files["exports.py"] == "v2" and files["docs/runbook.md"].endswith("verified health check\n")

    with pytest.raises(github.GithubException) as conflict:
        repo.get_pull(14).merge()
    assert (conflict.value.status, conflict.value.data["message"]) == (405, "merge conflict")
    with pytest.raises(github.GithubException) as again:
        repo.get_pull(12).merge()
    assert again.value.status == 405

    repo.create_git_ref("refs/heads/more", repo.get_branch("main").commit.sha)
    repo.create_file("docs/more.md", "more", "more\n", branch="more")
    created = repo.create_pull(base="main", head="more", title="More docs", body="Adds more.")
    assert (created.number, created.state, created.user.login) == (15, "open", "orders-bot")
    created.edit(title="More docs, please", body="Adds more docs.")
    assert (repo.get_pull(15).title, repo.get_pull(15).body) == ("More docs, please", "Adds more docs.")
    created.edit(state="closed")
    assert repo.get_pull(15).state == "closed" and not repo.get_pull(15).merged
    with pytest.raises(github.GithubException) as invalid:
        repo.create_pull(base="main", head="no-such-branch", title="x")
    assert invalid.value.status == 422 and invalid.value.data["message"] == "Validation Failed"


# -- issues, comments, labels ---------------------------------------------------------------------


def test_issues_comments_labels_and_the_issue_filed_check(served):
    server, world = served
    scene = world.scene
    repo = client(server, world).get_repo("acme/orders")
    listed = list(repo.get_issues(state="open"))
    assert sorted(i.number for i in listed) == [12, 13, 14]
    assert {i.number for i in listed if i.pull_request} == {12, 14}, "pulls appear in the issues list"
    assert [i.number for i in repo.get_issues(labels=["perf"])] == [13]
    assert not check(world, scene, "issue_filed").passed

    issue = repo.get_issue(13)
    assert (issue.title, issue.user.login, [a.login for a in issue.assignees]) == (
        "Exports slow",
        "ben",
        ["ben"],
    )
    assert [c.body for c in issue.get_comments()] == ["Looking."]
    comment = issue.create_comment("Is the CSV export affected?")
    assert comment.user.login == "orders-bot" and comment.body.startswith("Is the CSV")
    assert [c.body for c in repo.get_issue(13).get_comments()][-1] == "Is the CSV export affected?"
    assert comment.url.endswith(f"/worlds/{world.id}/github/repos/acme/orders/issues/comments/{comment.id}")
    comment.edit("Is the CSV export affected? Since when?")
    assert repo.get_issue(13).get_comment(comment.id).body.endswith("Since when?")
    issue.add_to_labels("exports", "perf")
    assert [lb.name for lb in repo.get_issue(13).labels] == ["perf", "exports"]

    filed = repo.create_issue(
        title="CSV export missing", body="The CSV export never arrives.", labels=["bug"]
    )
    assert filed.number == 15 and [lb.name for lb in filed.labels] == ["bug"]
    result = check(world, scene, "issue_filed")
    assert result.passed and result.evidence == (filed_seq := len(world.trace),)
    assert "1 matching issue(s) (#15)" in result.actual and "exactly 1" in result.expected

    filed.edit(state="closed", title="CSV export missing (fixed)", labels=["bug", "fixed"], assignees=["ben"])
    closed = repo.get_issue(15)
    assert (closed.state, closed.title, [a.login for a in closed.assignees]) == (
        "closed",
        "CSV export missing (fixed)",
        ["ben"],
    )
    result = check(world, scene, "issue_filed")
    assert not result.passed and "0 matching issue(s)" in result.actual
    filed.edit(state="open")
    repo.create_issue(title="Another", body="csv EXPORT again", labels=["Bug"])
    assert not check(world, scene, "issue_filed").passed, "count: 1 and two issues match"
    assert filed_seq in check(world, scene, "issue_filed").evidence

    messages = [(e.data["kind"], e.data["number"], e.data["text"]) for e in world.events.of_type("message")]
    assert messages == [
        ("comment", 13, "Is the CSV export affected?"),
        ("issue", 15, "The CSV export never arrives."),
        ("issue", 16, "csv EXPORT again"),
    ]
    edits = [(e.data["kind"], e.data["text"]) for e in world.events.of_type("message_edited")]
    assert edits == [("comment", "Is the CSV export affected? Since when?")]
    assert {lb.name for lb in repo.get_labels()} >= {"perf", "exports", "bug", "fixed"}
    labeled = [
        (e.data["repo"], e.data["number"], e.data["labels"]) for e in world.events.of_type("issue_labeled")
    ]
    assert labeled == [
        ("github_orders", 13, ["exports"]),
        ("github_orders", 15, ["bug"]),
        ("github_orders", 15, ["fixed"]),
        ("github_orders", 16, ["Bug"]),
    ]


def test_the_issue_check_reads_issues_only_and_its_counts(scene):
    world = World.build(scene)

    def issue(**spec):
        return world.state_check("github.issue", {"repo": "github_orders", **spec})

    assert issue(title_contains="Runbook").passed is False, "a pull request is not an issue"
    assert issue(title_contains="exports").passed and issue(title_contains=["EXPORTS", "slow"]).passed
    assert issue(labels=["perf"], state="open", count=1).passed
    assert not issue(labels=["perf", "bug"]).passed
    assert issue(state="closed", count=0).passed and not issue(state="closed").passed
    assert issue(count_gte=1, count_lte=1).passed and not issue(count_lte=0).passed
    assert issue(body_contains="monday").passed


# -- collaborators, deployments ---------------------------------------------------------------------


def test_collaborators_and_permissions(served):
    server, world = served
    scene = world.scene
    repo = client(server, world).get_repo("acme/orders")
    assert repo.get_collaborator_permission("carol") == "read"
    assert repo.get_collaborator_permission("ben") == "admin"
    assert not check(world, scene, "carol_writes").passed and check(world, scene, "carol_secret").passed
    repo.add_to_collaborators("carol", permission="push")
    assert repo.get_collaborator_permission("carol") == "write"
    result = check(world, scene, "carol_writes")
    assert result.passed and result.evidence == (4,)
    repo.add_to_collaborators("carol", permission="admin")
    assert not check(world, scene, "carol_writes").passed, "admin is not write"
    repo.add_to_collaborators("carol", permission="triage")
    assert repo.get_collaborator_permission("carol") == "read"
    with pytest.raises(github.GithubException) as bad:
        repo.add_to_collaborators("carol", permission="owner")
    assert bad.value.status == 422


def test_deployments_move_production(served):
    server, world = served
    scene = world.scene
    repo = client(server, world).get_repo("acme/orders")
    assert [d.sha for d in repo.get_deployments()] == [world.ids["c_bad"]]
    assert not check(world, scene, "back_to_base").passed
    deployment = repo.create_deployment(
        ref=world.ids["c_base"], environment="production", required_contexts=[]
    )
    assert deployment.sha == world.ids["c_base"]
    deployment.create_status("in_progress")
    assert not check(world, scene, "back_to_base").passed, "only a success status moves production"
    deployment.create_status("success")
    result = check(world, scene, "back_to_base")
    assert result.passed and result.evidence == (3, 5), "the deployment and its success status"
    assert [s.state for s in deployment.get_statuses()] == ["success", "in_progress"]
    staging = repo.create_deployment(ref="main", environment="staging", required_contexts=[])
    staging.create_status("success")
    assert check(world, scene, "back_to_base").passed, "another environment is not production"
    again = repo.create_deployment(ref="main", environment="production", required_contexts=[])
    again.create_status("success")
    assert not check(world, scene, "back_to_base").passed
    assert world.final_state()["tools"]["github"]["repos"]["acme/orders"]["production"] == world.ids["c_bad"]


# -- pagination, errors, gaps, graphql --------------------------------------------------------------


def test_more_than_thirty_issues_come_through_paginated_lists():
    issues = "\n".join(
        f"      i{n}: {{ repo: $gh_repo, title: 'Issue {n}', labels: [{'odd' if n % 2 else 'even'}] }}"
        for n in range(1, 36)
    )
    text = f"""
scene: many-issues
task: Read them.
world:
  github:
    users: {{ gh_bot: {{ login: bot, bot: true }} }}
    repos:
      gh_repo: {{ name: acme/big, commits: {{ c1: {{ message: init }} }}, branches: {{ main: $c1 }} }}
    issues:
{issues}
"""
    with served_world(load_scene(text, "many.yaml")) as (server, world):
        repo = client(server, world).get_repo("acme/big")
        everything = list(repo.get_issues())
        odd = list(repo.get_issues(labels=["odd"]))
        page = repo.get_issues(state="all").get_page(1)
    assert sorted(i.number for i in everything) == list(range(1, 36))
    assert len(odd) == 18
    assert len(page) == 5
    pages = [e for e in world.trace.to_list() if e["path"] == "/repos/acme/big/issues"]
    assert [e["query"].get("page") for e in pages[:2]] == [None, ["2"]]
    assert pages[1]["response"][0]["number"] == 5, "newest first, as GitHub lists them"


def test_githubs_error_envelopes(served):
    server, world = served
    gh = client(server, world)
    with pytest.raises(github.UnknownObjectException) as missing:
        gh.get_repo("acme/nope")
    assert missing.value.status == 404 and missing.value.data["message"] == "Not Found"
    with pytest.raises(github.UnknownObjectException):
        gh.get_repo("acme/secret")  # private, and the bot is no collaborator
    with pytest.raises(github.UnknownObjectException):
        gh.get_repo("acme/orders").get_issue(99)
    with pytest.raises(github.BadCredentialsException) as refused:
        client(server, world, token="ghp_" + "x" * 36).get_repo("acme/orders")
    assert refused.value.status == 401 and refused.value.data["message"] == "Bad credentials"
    base = world.for_agent(server.root)["tools"]["github"]["base_url"]
    token = world.credentials["github"]["token"]
    with httpx.Client(headers={"Authorization": f"Bearer {token}"}) as http:
        bad_json = http.post(base + "repos/acme/orders/issues", content=b"{nope")
        no_title = http.post(base + "repos/acme/orders/issues", json={"body": "x"})
    assert (bad_json.status_code, bad_json.json()["message"]) == (400, "Problems parsing JSON")
    assert no_title.status_code == 422
    assert no_title.json()["errors"] == [{"resource": "Issue", "field": "title", "code": "missing_field"}]
    statuses = [e["status"] for e in world.trace.to_list()]
    assert statuses == [404, 404, 200, 404, 401, 400, 422]
    assert "Authorization" not in json.dumps(world.trace.to_list()) and token not in json.dumps(
        world.trace.to_list()
    )


def test_an_unimplemented_endpoint_is_a_coverage_gap_and_graphql_answers_only_errors(served):
    server, world = served
    base = world.for_agent(server.root)["tools"]["github"]["base_url"]
    token = world.credentials["github"]["token"]
    with httpx.Client(headers={"Authorization": f"token {token}"}) as http:
        gap = http.get(base + "repos/acme/orders/actions/runs")
        events = http.get(base + "repos/acme/orders/issues/events")
        gql = http.post(base + "graphql", json={"query": "{ viewer { login } }"})
    assert gap.status_code == 404 and gap.json()["message"] == "Not Found"
    assert gql.status_code == 200 and list(gql.json()) == ["errors"]
    assert events.status_code == 404
    gap_entry, events_entry, gql_entry = world.trace.to_list()
    assert events_entry["coverage_gap"], "issues/events is no issue number"
    assert (gap_entry["path"], gap_entry["coverage_gap"], gap_entry["worked"]) == (
        "/repos/acme/orders/actions/runs",
        True,
        False,
    )
    assert (gql_entry["path"], gql_entry["graphql_errors_only"], gql_entry["worked"]) == (
        "/graphql",
        True,
        False,
    )


# -- the trace, determinism, snapshots --------------------------------------------------------------


def test_the_trace_holds_what_the_references_trace_examples_read(served):
    server, world = served
    repo = client(server, world).get_repo("acme/orders")
    repo.get_issue(13).create_comment("On it.")
    repo.create_issue(title="CSV export", body="Exports are missing.")
    entries = world.trace.to_list()
    assert [(e["method"], e["path"], e["worked"]) for e in entries] == [
        ("GET", "/repos/acme/orders", True),
        ("GET", "/repos/acme/orders/issues/13", True),
        ("POST", "/repos/acme/orders/issues/13/comments", True),
        ("POST", "/repos/acme/orders/issues", True),
    ]
    assert entries[2]["request"] == {"body": "On it."} and entries[3]["status"] == 201


def _script(world: World) -> None:
    token = world.credentials["github"]["token"]

    def call(method, path, body=None):
        data = json.dumps(body).encode() if body is not None else b""
        headers = {"Authorization": f"token {token}", "Content-Type": "application/json", "Host": "h"}
        return world.call("github", Request.make(method, path, headers=headers, body=data))

    main = world.ids["c_bad"]
    call("POST", "/repos/acme/orders/git/refs", {"ref": "refs/heads/x", "sha": main})
    content = base64.b64encode(b"hello\n").decode()
    call("PUT", "/repos/acme/orders/contents/hello.txt", {"message": "hi", "content": content, "branch": "x"})
    call("PUT", "/repos/acme/orders/pulls/12/merge", {})
    call("POST", "/repos/acme/orders/pulls", {"head": "x", "base": "main", "title": "Hello"})
    call("PUT", "/repos/acme/orders/pulls/14/merge", {})
    call("PUT", "/repos/acme/orders/pulls/15/merge", {"merge_method": "squash"})
    call("POST", "/repos/acme/orders/issues", {"title": "t", "body": "b", "labels": ["bug"]})


def test_the_same_calls_give_the_same_state_and_shas(scene):
    first, second = World.build(scene), World.build(scene)
    _script(first)
    _script(second)
    assert first.id != second.id
    assert json.dumps(first.states, sort_keys=True) == json.dumps(second.states, sort_keys=True)
    assert first.ids == second.ids
    assert [e["status"] for e in first.trace.to_list()] == [201, 201, 200, 201, 405, 200, 201]
    one = json.dumps(first.trace.to_list()).replace(first.id, "ID")
    assert one == json.dumps(second.trace.to_list()).replace(second.id, "ID")


def test_a_snapshot_mid_trial_carries_on_through_pygithub(scene):
    with served_world(scene) as (server, world):
        repo = client(server, world).get_repo("acme/orders")
        repo.get_pull(12).merge()
        stored = json.loads(json.dumps(world.snapshot()))
        server.remove(world.id)
        restored = server.add(World.restore(scene, stored))
        again = client(server, restored).get_repo("acme/orders")
        issue = again.create_issue(title="CSV export", body="CSV export broken", labels=["bug"])
    assert issue.number == 15
    assert check(restored, scene, "pr_merged").passed and check(restored, scene, "runbook_updated").passed
    assert check(restored, scene, "issue_filed").passed
    assert [e["seq"] for e in restored.trace.to_list()] == [1, 2, 3, 4, 5]


def test_the_example_scene_with_a_write_collaborator_bot():
    example = Path(__file__).parent / "scenes" / "example.yaml"
    scene = load_scene(example.read_text(), "example.yaml")
    with served_world(scene) as (server, world):
        repo = client(server, world).get_repo("acme/orders")
        assert repo.permissions.push and not repo.permissions.admin
        with pytest.raises(github.GithubException) as denied:
            repo.add_to_collaborators("ben", permission="pull")
        assert denied.value.status == 403
        repo.get_pull(12).merge()
        deployment = repo.create_deployment(
            ref=world.ids["c_base"], environment="production", required_contexts=[]
        )
        deployment.create_status("success")
    spec = {"check": "github.production", "repo": "github_orders", "commit": "c_base"}
    assert world.state_check("github.production", spec).passed, "the example's fault resolves"
    assert world.state_check(
        "github.permission", {"repo": "github_orders", "user": "gh_ben", "is": "admin"}
    ).passed
    file_at = {"repo": "github_orders", "revision": "production", "path": "exports.py", "equals": "v2"}
    assert not world.state_check("github.file_at", file_at).passed, "c_base has no exports.py"
    assert world.state_check("github.file_at", {**file_at, "revision": "c_bad"}).passed
    assert world.state_check("github.file_at", {**file_at, "revision": "default"}).passed
    assert not world.state_check("github.file_at", {**file_at, "equals": "V2"}).passed, "case-sensitive"
    shown = json.loads(json.dumps(world.final_state()))["tools"]["github"]["repos"]["acme/orders"]
    assert (
        shown["production"] == world.ids["c_base"]
        and shown["commits"][world.ids["c_base"]]["ref"] == "c_base"
    )
    merges = [c for c in shown["commits"].values() if not c["seed"]]
    assert [len(c["parents"]) for c in merges] == [2] and shown["pulls"][0]["merged"]


def test_the_file_level_three_way_merge():
    from worlds.engine.tools._git import Conflict, merge_trees

    base = {"a": "1", "b": "1", "c": "1"}
    assert merge_trees(base, {**base, "a": "2"}, {**base, "b": "2", "d": "new"}) == {
        "a": "2",
        "b": "2",
        "c": "1",
        "d": "new",
    }
    assert merge_trees(base, {"a": "1", "b": "1"}, base) == {"a": "1", "b": "1"}, "a delete on one side"
    assert merge_trees(base, {**base, "a": "2"}, {**base, "a": "2"})["a"] == "2", "the same change on both"
    with pytest.raises(Conflict) as both:
        merge_trees(base, {**base, "a": "2"}, {**base, "a": "3"})
    assert both.value.paths == ["a"]
    with pytest.raises(Conflict):
        merge_trees(base, {"b": "1", "c": "1"}, {**base, "a": "3"})  # deleted here, changed there
    with pytest.raises(Conflict):
        merge_trees({}, {"n": "x"}, {"n": "y"})  # added differently on both sides


def test_a_first_file_in_an_empty_repo_makes_the_root_commit():
    text = """
scene: empty-repo
task: Start it.
world:
  github:
    users: { gh_bot: { login: bot, bot: true } }
    repos: { gh_repo: { name: bot/new } }
"""
    with served_world(load_scene(text, "empty.yaml")) as (server, world):
        repo = client(server, world).get_repo("bot/new")
        made = repo.create_file("README.md", "first", "hello\n")
        assert made["commit"].parents == []
        assert repo.get_branch("main").commit.sha == made["commit"].sha
    spec = {"repo": "gh_repo", "revision": "default", "path": "README.md", "equals": "hello\n"}
    assert world.state_check("github.file_at", spec).passed


TABLE = [
    # (method, path, body, status, message) — answered by the handlers, no HTTP
    ("GET", "/repos/acme/orders", None, 200, None),
    ("GET", "/repos/ACME/Orders", None, 200, None),
    ("GET", "/repos/acme/secret", None, 404, "Not Found"),
    ("GET", "/repos/acme/orders/contents/docs", None, 200, None),
    (
        "GET",
        "/repos/acme/orders/contents/docs/runbook.md?ref=nope",
        None,
        404,
        "No commit found for the ref nope",
    ),
    ("PUT", "/repos/acme/orders/contents/x.md", {"content": "eA=="}, 422, "Validation Failed"),
    (
        "PUT",
        "/repos/acme/orders/contents/x.md",
        {"message": "m", "content": "eA==", "branch": "no"},
        404,
        None,
    ),
    (
        "POST",
        "/repos/acme/orders/git/refs",
        {"ref": "heads/x", "sha": "0" * 40},
        422,
        "Reference name is invalid",
    ),
    (
        "POST",
        "/repos/acme/orders/git/refs",
        {"ref": "refs/heads/x", "sha": "0" * 40},
        422,
        "Object does not exist",
    ),
    ("GET", "/repos/acme/orders/git/refs/heads", None, 200, None),
    ("GET", "/repos/acme/orders/commits/0000000", None, 422, None),
    ("GET", "/repos/acme/orders/pulls/13", None, 404, "Not Found"),
    (
        "POST",
        "/repos/acme/orders/pulls",
        {"head": "main", "base": "main", "title": "t"},
        422,
        "Validation Failed",
    ),
    ("PUT", "/repos/acme/orders/pulls/12/merge", {"sha": "0" * 40}, 409, None),
    ("PUT", "/repos/acme/orders/pulls/12/merge", {"merge_method": "fast"}, 422, "Validation Failed"),
    ("GET", "/repos/acme/orders/issues?state=weird", None, 422, "Validation Failed"),
    ("PATCH", "/repos/acme/orders/issues/13", {"state": "done"}, 422, "Validation Failed"),
    ("PATCH", "/repos/acme/orders/issues/13", {"assignees": ["nobody"]}, 422, "Validation Failed"),
    ("POST", "/repos/acme/orders/issues/13/comments", {"body": ""}, 422, "Validation Failed"),
    ("POST", "/repos/acme/orders/issues/13/labels", {"labels": [1]}, 422, "Validation Failed"),
    ("DELETE", "/repos/acme/orders/issues/13/labels/perf", None, 200, None),
    ("DELETE", "/repos/acme/orders/issues/13/labels/nope", None, 404, "Label does not exist"),
    ("PUT", "/repos/acme/orders/collaborators/nobody", {"permission": "push"}, 404, "Not Found"),
    ("GET", "/repos/acme/orders/collaborators/ben", None, 204, None),
    ("GET", "/repos/acme/orders/collaborators/carol", None, 404, None),
    ("POST", "/repos/acme/orders/deployments", {"ref": "nope"}, 422, "No ref found for: nope"),
    ("POST", "/repos/acme/orders/deployments", {}, 422, "Validation Failed"),
    ("GET", "/repos/acme/orders/deployments/1/statuses", None, 404, "Not Found"),
    ("GET", "/user", None, 200, None),
    ("DELETE", "/repos/acme/orders", None, 404, "Not Found"),
]


@pytest.mark.parametrize(("method", "target", "body", "status", "message"), TABLE)
def test_handlers_answer_in_githubs_shapes(scene, method, target, body, status, message):
    world = World.build(scene)
    path, _, query = target.partition("?")
    headers = {"Authorization": f"token {world.credentials['github']['token']}"}
    data = json.dumps(body).encode() if body is not None else b""
    answer = world.call("github", Request.make(method, path, query, headers, data))
    assert answer.status == status
    if message is not None:
        assert answer.body["message"] == message and answer.body["documentation_url"].startswith("https://")
    if status == 422 and answer.body["message"] == "Validation Failed":
        assert answer.body["errors"]
