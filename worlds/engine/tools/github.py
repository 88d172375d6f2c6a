"""GitHub: users, repos (commits, branches, production, collaborators, private), pulls and issues;
the ``github.*`` state checks of the reference; and :class:`GitHubSimulator`, GitHub's REST API over
that state in GitHub's wire format (PyGithub works against it unmodified).

The state is plain JSON: per repo its commits (whole trees, SHAs computed from tree, parents, message
and simulated time: see ``_git.py``), branches, issues and pulls (one number sequence, a pull is an
issue with a ``pull`` part), labels, collaborators and deployments with their statuses. Every record
the agent creates or changes keeps the trace ``seq`` of those calls (the checks' evidence); seed
records carry ``seed: true``. Messages (issues, pulls, comments) and labels added are world events."""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote, urlencode

from ..clock import iso
from ..credentials import matches
from ..http import BadBody, Request, Response
from ..ids import github_id
from ..results import StateResult
from ..schema import Field, RecordKind, StateCheck, Tool, Validator, register
from ..simulator import BuildContext, Route, Simulator
from ._git import (
    Conflict,
    ancestors,
    apply_files,
    blob_sha,
    commit_sha,
    is_ancestor,
    merge_base,
    merge_trees,
    tree_sha,
)

PERMISSIONS = ("read", "write", "admin")
USER = {
    "login": Field("str", required=True, nonempty=True),
    "name": Field("str"),
    "email": Field("str"),
    "bot": Field("bool"),
}
COMMIT = {
    "parent": Field("ref", kinds=("github.commit",)),
    "message": Field("str", required=True),
    "files": Field("map", item=Field("text_or_null")),
    "author": Field("ref", kinds=("github.user",)),
    "at": Field("signed_duration"),
}
REPO = {
    "name": Field("str", required=True, nonempty=True),
    "default_branch": Field("str"),
    "description": Field("str"),
    "private": Field("bool"),
    "collaborators": Field("ref_map", kinds=("github.user",), item=Field("choice", choices=PERMISSIONS)),
    "commits": Field("records", schema=COMMIT, record="commit"),
    "branches": Field("map", item=Field("ref", kinds=("github.commit",))),
    "production": Field("ref", kinds=("github.commit",)),
}
COMMENT = {
    "from": Field("ref", required=True, kinds=("github.user",)),
    "body": Field("str", required=True),
    "at": Field("signed_duration"),
}
_COMMON = {
    "repo": Field("ref", required=True, kinds=("github.repo",)),
    "number": Field("int", minimum=1, maximum=1_000_000),
    "title": Field("str", required=True),
    "body": Field("str"),
    "author": Field("ref", kinds=("github.user",)),
    "at": Field("signed_duration"),
    "state": Field("choice", choices=("open", "closed")),
    "labels": Field("strs"),
    "assignees": Field("refs", kinds=("github.user",)),
    "comments": Field("objects", schema=COMMENT),
}
PULL = {**_COMMON, "head": Field("str", required=True), "base": Field("str"), "merged": Field("bool")}
ISSUE = dict(_COMMON)


def _repo(record: dict[str, Any], path: str, v: Validator, raw: dict[str, Any]) -> None:
    name = record.get("name")
    if isinstance(name, str) and name.count("/") != 1:
        v.add(f"{path}.name", f"must be owner/name, not {name!r}")


def _file_at(c: dict[str, Any], path: str, v: Validator) -> None:
    if ("contains" in c) == ("equals" in c):
        v.add(path, "give exactly one of contains or equals")


def _issue(c: dict[str, Any], path: str, v: Validator) -> None:
    if "count" in c and ("count_gte" in c or "count_lte" in c):
        v.add(path, "count cannot be given with count_gte or count_lte")


CHECKS = {
    "file_at": StateCheck(
        {
            "repo": Field("ref", required=True, kinds=("github.repo",)),
            "revision": Field("str", required=True),
            "path": Field("str", required=True),
            "contains": Field("str"),
            "equals": Field("str"),
        },
        positional=("repo", "revision", "path"),
        cleaner=_file_at,
    ),
    "pull": StateCheck(
        {"pull": Field("ref", required=True, kinds=("github.pull",)), "merged": Field("bool", required=True)},
        scalar="pull",
    ),
    "production": StateCheck(
        {
            "repo": Field("ref", required=True, kinds=("github.repo",)),
            "commit": Field("ref", required=True, kinds=("github.commit",)),
        }
    ),
    "issue": StateCheck(
        {
            "repo": Field("ref", required=True, kinds=("github.repo",)),
            "title_contains": Field("str_or_strs"),
            "body_contains": Field("str_or_strs"),
            "labels": Field("strs"),
            "state": Field("choice", choices=("open", "closed")),
            "count": Field("int", minimum=0, maximum=10_000),
            "count_gte": Field("int", minimum=0, maximum=10_000),
            "count_lte": Field("int", minimum=0, maximum=10_000),
        },
        cleaner=_issue,
    ),
    "permission": StateCheck(
        {
            "repo": Field("ref", required=True, kinds=("github.repo",)),
            "user": Field("ref", required=True, kinds=("github.user",)),
            "is": Field("choice", required=True, choices=(*PERMISSIONS, "none")),
        }
    ),
}


# -- the simulator ----------------------------------------------------------------------------------

DOCS = "https://docs.github.com/rest"
PER_PAGE = 30
# PUT collaborators' permission → the access it grants (WORLDS.md "GitHub")
GRANTS = {"pull": "read", "triage": "read", "push": "write", "maintain": "write", "admin": "admin"}
RANK = {"none": 0, "read": 1, "write": 2, "admin": 3}
STATUS_STATES = ("error", "failure", "inactive", "in_progress", "queued", "pending", "success")


def _error(status: int, message: str, **extra: Any) -> Response:
    return Response(status, {"message": message, **extra, "documentation_url": DOCS})


def _invalid(resource: str, field: str, code: str = "missing_field", message: str = "") -> Response:
    error = {"resource": resource, "field": field, "code": code}
    if message:
        error["message"] = message
    return _error(422, "Validation Failed", errors=[error])


def _custom(resource: str, message: str) -> Response:
    error = {"resource": resource, "code": "custom", "message": message}
    return _error(422, "Validation Failed", errors=[error])


NOT_FOUND = ("Not Found",)
WRITE_DENIED = "Resource not accessible by personal access token"


class _Refused(Exception):
    """A handler's early answer (a 404 lookup, a 403 access check) raised by a helper;
    :meth:`GitHubSimulator.call` returns it."""

    def __init__(self, response: Response) -> None:
        super().__init__(response.status)
        self.response = response


class GitHubSimulator(Simulator):
    """GitHub's REST API over repos (commits as whole trees, branches, deployments, collaborators) and
    their issues and pull requests, which share one number sequence as on GitHub. The agent is the
    scene's ``bot: true`` user."""

    tool = "github"
    routes = (
        ("GET", "/user", "get_authenticated_user"),
        ("GET", "/users/{login}", "get_user"),
        ("POST", "/graphql", "graphql"),
        ("GET", "/repos/{owner}/{repo}", "get_repo"),
        ("GET", "/repos/{owner}/{repo}/contents", "get_contents"),
        ("GET", "/repos/{owner}/{repo}/contents/{path+}", "get_contents"),
        ("PUT", "/repos/{owner}/{repo}/contents/{path+}", "put_contents"),
        ("GET", "/repos/{owner}/{repo}/branches", "list_branches"),
        ("GET", "/repos/{owner}/{repo}/branches/{branch+}", "get_branch"),
        ("GET", "/repos/{owner}/{repo}/git/refs", "list_refs"),
        ("POST", "/repos/{owner}/{repo}/git/refs", "create_ref"),
        ("GET", "/repos/{owner}/{repo}/git/refs/{ref+}", "match_refs"),
        ("GET", "/repos/{owner}/{repo}/git/ref/{ref+}", "get_ref"),
        ("PATCH", "/repos/{owner}/{repo}/git/refs/{ref+}", "update_ref"),
        ("DELETE", "/repos/{owner}/{repo}/git/refs/{ref+}", "delete_ref"),
        ("GET", "/repos/{owner}/{repo}/commits", "list_commits"),
        ("GET", "/repos/{owner}/{repo}/commits/{sha+}", "get_commit"),
        ("GET", "/repos/{owner}/{repo}/pulls", "list_pulls"),
        ("POST", "/repos/{owner}/{repo}/pulls", "create_pull"),
        ("GET", "/repos/{owner}/{repo}/pulls/{number}", "get_pull"),
        ("PATCH", "/repos/{owner}/{repo}/pulls/{number}", "update_pull"),
        ("GET", "/repos/{owner}/{repo}/pulls/{number}/merge", "get_merged"),
        ("PUT", "/repos/{owner}/{repo}/pulls/{number}/merge", "merge_pull"),
        ("GET", "/repos/{owner}/{repo}/issues", "list_issues"),
        ("POST", "/repos/{owner}/{repo}/issues", "create_issue"),
        ("GET", "/repos/{owner}/{repo}/issues/{number}", "get_issue"),
        ("PATCH", "/repos/{owner}/{repo}/issues/{number}", "update_issue"),
        ("GET", "/repos/{owner}/{repo}/issues/{number}/comments", "list_comments"),
        ("POST", "/repos/{owner}/{repo}/issues/{number}/comments", "create_comment"),
        ("GET", "/repos/{owner}/{repo}/issues/{number}/labels", "list_issue_labels"),
        ("POST", "/repos/{owner}/{repo}/issues/{number}/labels", "add_labels"),
        ("DELETE", "/repos/{owner}/{repo}/issues/{number}/labels/{name+}", "remove_label"),
        ("GET", "/repos/{owner}/{repo}/issues/comments/{id}", "get_comment"),
        ("PATCH", "/repos/{owner}/{repo}/issues/comments/{id}", "edit_comment"),
        ("DELETE", "/repos/{owner}/{repo}/issues/comments/{id}", "delete_comment"),
        ("GET", "/repos/{owner}/{repo}/labels", "list_labels"),
        ("GET", "/repos/{owner}/{repo}/collaborators", "list_collaborators"),
        ("GET", "/repos/{owner}/{repo}/collaborators/{login}", "check_collaborator"),
        ("PUT", "/repos/{owner}/{repo}/collaborators/{login}", "add_collaborator"),
        ("GET", "/repos/{owner}/{repo}/collaborators/{login}/permission", "get_permission"),
        ("GET", "/repos/{owner}/{repo}/deployments", "list_deployments"),
        ("POST", "/repos/{owner}/{repo}/deployments", "create_deployment"),
        ("GET", "/repos/{owner}/{repo}/deployments/{id}", "get_deployment"),
        ("GET", "/repos/{owner}/{repo}/deployments/{id}/statuses", "list_statuses"),
        ("POST", "/repos/{owner}/{repo}/deployments/{id}/statuses", "create_status"),
    )

    # -- building ---------------------------------------------------------------------------------
    @classmethod
    def build(cls, ctx: BuildContext) -> dict[str, Any]:
        scene, world = ctx.scene.name, ctx.world
        start = world.clock.start
        users: dict[str, dict[str, Any]] = {}
        logins: dict[str, str] = {}  # user ref -> login
        bot = ""
        for ref, rec in ctx.records.get("users", {}).items():
            login = rec.fields["login"]
            logins[ref] = login
            users[login] = {
                "login": login,
                "id": github_id(scene, ref),
                "name": rec.fields.get("name"),
                "email": rec.fields.get("email"),
                "type": "Bot" if rec.fields.get("bot") else "User",
                "ref": ref,
            }
            world.ids[ref] = users[login]["id"]
            if rec.fields.get("bot"):
                bot = login
        state: dict[str, Any] = {"users": users, "bot": bot, "repos": {}, "serial": 0}
        repo_names: dict[str, str] = {}
        for ref, rec in ctx.records.get("repos", {}).items():
            f = rec.fields
            name = f["name"]
            repo_names[ref] = name
            repo: dict[str, Any] = {
                "ref": ref,
                "id": github_id(scene, ref),
                "full_name": name,
                "description": f.get("description"),
                "private": bool(f.get("private", False)),
                "default_branch": f.get("default_branch") or "main",
                "collaborators": {logins[u]: p for u, p in (f.get("collaborators") or {}).items()},
                "commits": {},
                "branches": {},
                "branch_seqs": {},
                "issues": {},
                "labels": {},
                "deployments": [],
                "created_at": iso(start),
                "seq": None,
                "seed": True,
            }
            world.ids[ref] = repo["id"]
            commit_refs: dict[str, str] = {}
            pending = dict(f.get("commits") or {})
            while pending:
                ready = [r for r, c in pending.items() if not c.get("parent") or c["parent"] in commit_refs]
                if not ready:  # a parent outside this repo: validation's business; start it fresh
                    ready = [next(iter(pending))]
                for cref in ready:
                    c = pending.pop(cref)
                    parent = commit_refs.get(c.get("parent") or "")
                    tree = repo["commits"][parent]["tree"] if parent else {}
                    at = start + c["at"] if c.get("at") is not None else start
                    author = logins.get(c.get("author") or "", "")
                    sha = cls._add_commit(
                        repo,
                        apply_files(tree, c.get("files") or {}),
                        [parent] if parent else [],
                        c["message"],
                        iso(at),
                        author,
                        seq=None,
                        ref=cref,
                    )
                    commit_refs[cref] = sha
                    world.ids[cref] = sha
            for branch, cref in (f.get("branches") or {}).items():
                repo["branches"][branch] = commit_refs[cref]
            if repo["default_branch"] not in repo["branches"] and commit_refs:
                repo["branches"][repo["default_branch"]] = list(commit_refs.values())[-1]
            if f.get("production") in commit_refs:
                state["serial"] += 1
                deployment = {
                    "id": github_id(scene, f"{ref}:production"),
                    "sha": commit_refs[f["production"]],
                    "ref": commit_refs[f["production"]],
                    "environment": "production",
                    "description": "seed production deployment",
                    "task": "deploy",
                    "creator": None,
                    "created_at": iso(start),
                    "seq": None,
                    "seed": True,
                    "statuses": [
                        {
                            "id": github_id(scene, f"{ref}:production:status"),
                            "state": "success",
                            "order": state["serial"],
                            "created_at": iso(start),
                            "creator": None,
                            "seq": None,
                        }
                    ],
                }
                repo["deployments"].append(deployment)
            state["repos"][name] = repo
        # issues and pulls share a repo's numbers: declared numbers first, then the next free ones
        items = [("pull", r, rec) for r, rec in ctx.records.get("pulls", {}).items()]
        items += [("issue", r, rec) for r, rec in ctx.records.get("issues", {}).items()]
        taken: dict[str, set[int]] = {}
        for _kind, _ref, rec in items:
            if rec.fields.get("number"):
                taken.setdefault(rec.fields["repo"], set()).add(rec.fields["number"])
        for kind, ref, rec in items:
            f = rec.fields
            repo = state["repos"][repo_names[f["repo"]]]
            number = f.get("number")
            if not number:
                used = taken.setdefault(f["repo"], set())
                number = max(used | {len(repo["issues"])}, default=0) + 1
                used.add(number)
            at = iso(start + f["at"]) if f.get("at") is not None else iso(start)
            author = logins.get(f.get("author") or "", "") or repo["full_name"].split("/")[0]
            issue = cls._new_issue(
                scene,
                ref,
                number,
                f["title"],
                f.get("body"),
                author,
                at,
                labels=list(f.get("labels") or []),
                assignees=[logins[a] for a in f.get("assignees") or []],
                state=f.get("state") or "open",
                seq=None,
            )
            for label in issue["labels"]:
                cls._ensure_label(scene, repo, label)
            for i, c in enumerate(f.get("comments") or []):
                when = iso(start + c["at"]) if c.get("at") is not None else at
                issue["comments"].append(
                    cls._new_comment(
                        github_id(scene, f"{ref}:comment:{i}"), logins[c["from"]], c["body"], when, None
                    )
                )
            if kind == "pull":
                head = f["head"].split(":")[-1]
                merged = bool(f.get("merged"))
                issue["pull"] = {
                    "id": github_id(scene, f"{ref}:pull"),
                    "head": head,
                    "base": f.get("base") or repo["default_branch"],
                    "head_sha": repo["branches"].get(head),
                    "merged": merged,
                    "merged_at": at if merged else None,
                    "merged_by": None,
                    "merge_commit_sha": None,
                    "merge_seq": None,
                }
                if merged:
                    issue["state"] = "closed"
            if issue["state"] == "closed":
                issue["closed_at"] = at
            repo["issues"][str(number)] = issue
            world.ids[ref] = number
        for repo in state["repos"].values():
            repo["next_number"] = max((int(n) for n in repo["issues"]), default=0) + 1
        return state

    @staticmethod
    def _add_commit(repo, tree, parents, message, at, author, *, seq, ref=None) -> str:
        sha = commit_sha(tree, parents, message, at, author)
        repo["commits"][sha] = {
            "sha": sha,
            "tree": tree,
            "parents": parents,
            "message": message,
            "at": at,
            "author": author,
            "seq": seq,
            "seed": seq is None,
            "ref": ref,
        }
        return sha

    @staticmethod
    def _new_issue(scene, key, number, title, body, author, at, *, labels, assignees, state, seq) -> dict:
        return {
            "id": github_id(scene, key),
            "number": number,
            "title": title,
            "body": body,
            "user": author,
            "labels": list(dict.fromkeys(labels)),
            "assignees": list(dict.fromkeys(assignees)),
            "state": state,
            "state_reason": None,
            "created_at": at,
            "updated_at": at,
            "closed_at": None,
            "comments": [],
            "pull": None,
            "seq": seq,
            "seed": seq is None,
            "seqs": [],
            "ref": key if seq is None else None,
        }

    @staticmethod
    def _new_comment(comment_id, login, body, at, seq) -> dict:
        return {
            "id": comment_id,
            "user": login,
            "body": body,
            "created_at": at,
            "updated_at": at,
            "seq": seq,
            "seed": seq is None,
        }

    @staticmethod
    def _ensure_label(scene, repo, name) -> None:
        if name.casefold() not in {n.casefold() for n in repo["labels"]}:
            repo["labels"][name] = {
                "id": github_id(scene, f"{repo['full_name']}:label:{name}"),
                "color": "ededed",
            }

    # -- plumbing ---------------------------------------------------------------------------------
    def call(self, request: Request) -> Response:
        try:
            return super().call(request)
        except _Refused as refused:
            return refused.response
        finally:
            self._root_of = None  # not kept past its request (nor its body)

    def authenticate(self, request: Request) -> Response | None:
        header = request.header("authorization") or ""
        scheme, _, given = header.partition(" ")
        if scheme.lower() in ("token", "bearer") and matches(given.strip(), self.credential.get("token", "")):
            return None
        return _error(401, "Bad credentials")

    def gap(self, request: Request) -> Response:
        return Response(404, {"message": "Not Found", "documentation_url": DOCS}, coverage_gap=True)

    def bad_body(self, request: Request, message: str) -> Response:
        return _error(400, "Problems parsing JSON")

    _root_of: tuple[Request, str] | None = None  # the last request's root: one answer uses it ~100 times

    def _root(self, request: Request) -> str:
        last = self._root_of
        if last is not None and last[0] is request:
            return last[1]
        host = request.header("x-forwarded-host") or request.header("host") or "127.0.0.1"
        proto = request.header("x-forwarded-proto") or "http"
        root = f"{proto}://{host}/worlds/{self.world.id}/github"
        self._root_of = (request, root)
        return root

    def _repo_url(self, request: Request, repo: dict) -> str:
        """The REST URL of ``repo`` (its ``full_name``, "owner/name"), which its objects' URLs extend."""
        return f"{self._root(request)}/repos/{repo['full_name']}"

    @property
    def _now(self) -> str:
        return iso(self.world.clock.now)

    def _serial(self) -> int:
        self.state["serial"] += 1
        return self.state["serial"]

    def _new_id(self, kind: str) -> int:
        return github_id(self.world.scene.name, f"{kind}:{self._serial()}")

    def _body(self, request: Request) -> dict[str, Any]:
        body = request.json()
        if body is None:
            return {}
        if not isinstance(body, dict):
            raise BadBody("not an object")
        return body

    def _repo(self, owner: str, repo: str) -> dict[str, Any] | None:
        """The repo, or None when it does not exist or the agent cannot see it (GitHub says 404)."""
        found = self.state["repos"].get(f"{owner}/{repo}")
        if found is None:
            lowered = f"{owner}/{repo}".casefold()
            found = next((r for n, r in self.state["repos"].items() if n.casefold() == lowered), None)
        if found is None or self._access(found, self.state["bot"]) == "none":
            return None
        return found

    def _access(self, repo: dict[str, Any], login: str) -> str:
        if login == repo["full_name"].split("/")[0]:
            return "admin"
        if login in repo["collaborators"]:
            return repo["collaborators"][login]
        return "none" if repo["private"] else "read"

    def _can(self, repo: dict[str, Any], level: str) -> bool:
        return RANK[self._access(repo, self.state["bot"])] >= RANK[level]

    def _found(self, owner: str, repo: str) -> dict[str, Any]:
        """The repo the agent can see; otherwise GitHub's 404 is raised."""
        found = self._repo(owner, repo)
        if found is None:
            raise _Refused(_error(404, "Not Found"))
        return found

    def _require(self, repo: dict[str, Any], level: str = "write", message: str = WRITE_DENIED) -> None:
        """GitHub's 403 is raised unless the agent has ``level`` access to ``repo``."""
        if not self._can(repo, level):
            raise _Refused(_error(403, message))

    def _write_body(
        self, request: Request, repo: dict[str, Any], level: str = "write", message: str = WRITE_DENIED
    ) -> dict[str, Any]:
        """The body of a call that changes ``repo``: parsed first (a bad body is a 400 before a 403)."""
        body = self._body(request)
        self._require(repo, level, message)
        return body

    def _set_branch(self, repo: dict[str, Any], name: str, sha: str | None) -> None:
        """Point branch ``name`` at ``sha`` (None deletes it), noting the call that moved it."""
        if sha is None:
            del repo["branches"][name]
        else:
            repo["branches"][name] = sha
        repo["branch_seqs"][name] = self.world.current_seq

    @staticmethod
    def _permissions(access: str) -> dict[str, bool]:
        return {
            "admin": access == "admin",
            "maintain": access == "admin",
            "push": RANK[access] >= 2,
            "triage": RANK[access] >= 1,
            "pull": RANK[access] >= 1,
        }

    def _user(self, request: Request, login: str | None) -> dict[str, Any] | None:
        if not login:
            return None
        known = self.state["users"].get(login, {})
        uid = known.get("id") or github_id(self.world.scene.name, f"login:{login}")
        kind = known.get("type") or ("Organization" if self._is_owner(login) else "User")
        url = f"{self._root(request)}/users/{login}"
        return {
            "login": login,
            "id": uid,
            "node_id": f"U_{uid}",
            "avatar_url": "",
            "gravatar_id": "",
            "url": url,
            "html_url": f"https://github.com/{login}",
            "type": kind,
            "site_admin": False,
            "name": known.get("name"),
            "email": known.get("email"),
        }

    def _is_owner(self, login: str) -> bool:
        return any(n.split("/")[0] == login for n in self.state["repos"])

    def _page(
        self, request: Request, items: list[Any], render: Callable[[Any], Any] | None = None
    ) -> Response:
        """One page of ``items`` with GitHub's ``Link`` header (per_page ≤ 100, page from 1); ``render``
        (pure) turns the page's items into their JSON, so only the page is rendered."""
        try:
            per_page = max(1, min(100, int(request.arg("per_page") or PER_PAGE)))
            page = max(1, int(request.arg("page") or 1))
        except ValueError:
            per_page, page = PER_PAGE, 1
        last = max(1, -(-len(items) // per_page))
        chunk = items[(page - 1) * per_page : page * per_page]
        if render is not None:
            chunk = [render(item) for item in chunk]
        links = []

        def link(n: int, rel: str) -> str:
            query = {k: v for k, v in request.query.items() if k != "page"}
            query = {**query, "per_page": [str(per_page)], "page": [str(n)]}
            return f'<{self._root(request)}{quote(request.path)}?{urlencode(query, doseq=True)}>; rel="{rel}"'

        if page > 1:
            links += [link(page - 1, "prev"), link(1, "first")]
        if page < last:
            links += [link(page + 1, "next"), link(last, "last")]
        return Response(200, chunk, headers={"Link": ", ".join(links)} if links else {})

    def _resolve(self, repo: dict[str, Any], ref: str | None) -> str | None:
        """A branch name, ``refs/heads/x``, a full or abbreviated (≥ 7) SHA → a commit SHA."""
        ref = ref or repo["default_branch"]
        ref = ref.removeprefix("refs/heads/").removeprefix("heads/")
        if ref in repo["branches"]:
            return repo["branches"][ref]
        if ref in repo["commits"]:
            return ref
        if len(ref) >= 7:
            found = [s for s in repo["commits"] if s.startswith(ref.lower())]
            if len(found) == 1:
                return found[0]
        return None

    @staticmethod
    def _parent_tree(repo: dict[str, Any], commit: dict[str, Any]) -> dict[str, str]:
        """The tree of a commit's first parent (empty for a root commit)."""
        return repo["commits"][commit["parents"][0]]["tree"] if commit["parents"] else {}

    def _changes(self, repo: dict[str, Any], sha: str, path: str) -> bool:
        """Whether commit ``sha`` changed the file at ``path`` against its first parent."""
        c = repo["commits"][sha]
        return self._parent_tree(repo, c).get(path) != c["tree"].get(path)

    def _touch(self, record: dict[str, Any]) -> None:
        seq = self.world.current_seq
        if seq is not None and seq not in record.setdefault("seqs", []):
            record["seqs"].append(seq)
        record["updated_at"] = self._now

    # -- shapes -----------------------------------------------------------------------------------
    def _repo_json(self, request: Request, repo: dict[str, Any]) -> dict[str, Any]:
        name = repo["full_name"]
        owner, short = name.split("/")
        url = self._repo_url(request, repo)
        access = self._access(repo, self.state["bot"])
        return {
            "id": repo["id"],
            "node_id": f"R_{repo['id']}",
            "name": short,
            "full_name": name,
            "owner": self._user(request, owner),
            "private": repo["private"],
            "visibility": "private" if repo["private"] else "public",
            "html_url": f"https://github.com/{name}",
            "description": repo["description"],
            "fork": False,
            "url": url,
            "git_url": f"git://github.com/{name}.git",
            "clone_url": f"https://github.com/{name}.git",
            "default_branch": repo["default_branch"],
            "created_at": repo["created_at"],
            "updated_at": repo["created_at"],
            "pushed_at": repo["created_at"],
            "open_issues_count": sum(1 for i in repo["issues"].values() if i["state"] == "open"),
            "has_issues": True,
            "archived": False,
            "disabled": False,
            "permissions": self._permissions(access),
        }

    def _commit_json(self, request: Request, repo: dict[str, Any], sha: str, *, files: bool = False) -> dict:
        c = repo["commits"][sha]
        base = self._repo_url(request, repo)
        person = {
            "name": c["author"] or "GitHub",
            "email": f"{c['author'] or 'noreply'}@users.noreply.github.com",
            "date": c["at"],
        }
        out = {
            "sha": sha,
            "node_id": f"C_{sha}",
            "url": f"{base}/commits/{sha}",
            "html_url": f"https://github.com/{repo['full_name']}/commit/{sha}",
            "comments_url": f"{base}/commits/{sha}/comments",
            "commit": {
                "url": f"{base}/git/commits/{sha}",
                "author": person,
                "committer": person,
                "message": c["message"],
                "tree": {"sha": tree_sha(c["tree"]), "url": f"{base}/git/trees/{sha}"},
                "comment_count": 0,
                "verification": {"verified": False, "reason": "unsigned", "signature": None, "payload": None},
            },
            "author": self._user(request, c["author"]),
            "committer": self._user(request, c["author"]),
            "parents": [
                {
                    "sha": p,
                    "url": f"{base}/commits/{p}",
                    "html_url": f"https://github.com/{repo['full_name']}/commit/{p}",
                }
                for p in c["parents"]
            ],
        }
        if files:
            before = self._parent_tree(repo, c)
            changed = []
            for path in sorted(set(before) | set(c["tree"])):
                old, new = before.get(path), c["tree"].get(path)
                if old == new:
                    continue
                status = "added" if old is None else "removed" if new is None else "modified"
                adds = len((new or "").splitlines()) if status != "removed" else 0
                dels = len((old or "").splitlines()) if status != "added" else 0
                changed.append(
                    {
                        "sha": blob_sha(new or ""),
                        "filename": path,
                        "status": status,
                        "additions": adds,
                        "deletions": dels,
                        "changes": adds + dels,
                    }
                )
            out["files"] = changed
            total_a, total_d = sum(f["additions"] for f in changed), sum(f["deletions"] for f in changed)
            out["stats"] = {"total": total_a + total_d, "additions": total_a, "deletions": total_d}
        return out

    def _content_json(self, request: Request, repo: dict[str, Any], path: str, text: str, ref: str) -> dict:
        base = self._repo_url(request, repo)
        html = f"https://github.com/{repo['full_name']}/blob/{ref}/{path}"
        url = f"{base}/contents/{quote(path)}?ref={quote(ref)}"
        return {
            "type": "file",
            "encoding": "base64",
            "size": len(text.encode()),
            "name": path.rsplit("/", 1)[-1],
            "path": path,
            "content": base64.b64encode(text.encode()).decode(),
            "sha": blob_sha(text),
            "url": url,
            "git_url": f"{base}/git/blobs/{blob_sha(text)}",
            "html_url": html,
            "download_url": None,
            "_links": {"self": url, "git": f"{base}/git/blobs/{blob_sha(text)}", "html": html},
        }

    def _ref_json(self, request: Request, repo: dict[str, Any], branch: str) -> dict:
        base = self._repo_url(request, repo)
        sha = repo["branches"][branch]
        return {
            "ref": f"refs/heads/{branch}",
            "node_id": f"REF_{branch}",
            "url": f"{base}/git/refs/heads/{branch}",
            "object": {"sha": sha, "type": "commit", "url": f"{base}/git/commits/{sha}"},
        }

    def _branch_json(self, request: Request, repo: dict[str, Any], branch: str, *, full: bool) -> dict:
        base = self._repo_url(request, repo)
        sha = repo["branches"][branch]
        commit = (
            self._commit_json(request, repo, sha) if full else {"sha": sha, "url": f"{base}/commits/{sha}"}
        )
        out = {"name": branch, "commit": commit, "protected": False}
        if full:
            out["_links"] = {
                "self": f"{base}/branches/{branch}",
                "html": f"https://github.com/{repo['full_name']}/tree/{branch}",
            }
            out["protection"] = {
                "enabled": False,
                "required_status_checks": {"enforcement_level": "off", "contexts": [], "checks": []},
            }
            out["protection_url"] = f"{base}/branches/{branch}/protection"
        return out

    def _label_json(self, request: Request, repo: dict[str, Any], name: str) -> dict:
        label = repo["labels"].get(name) or {"id": 0, "color": "ededed"}
        return {
            "id": label["id"],
            "node_id": f"LA_{label['id']}",
            "name": name,
            "color": label["color"],
            "default": False,
            "description": None,
            "url": f"{self._repo_url(request, repo)}/labels/{quote(name)}",
        }

    def _issue_json(self, request: Request, repo: dict[str, Any], issue: dict[str, Any]) -> dict:
        base = self._repo_url(request, repo)
        n = issue["number"]
        url = f"{base}/issues/{n}"
        assignees = [self._user(request, a) for a in issue["assignees"]]
        out = {
            "id": issue["id"],
            "node_id": f"I_{issue['id']}",
            "url": url,
            "repository_url": base,
            "labels_url": f"{url}/labels{{/name}}",
            "comments_url": f"{url}/comments",
            "events_url": f"{url}/events",
            "html_url": f"https://github.com/{repo['full_name']}/{'pull' if issue['pull'] else 'issues'}/{n}",
            "number": n,
            "state": issue["state"],
            "state_reason": issue["state_reason"],
            "title": issue["title"],
            "body": issue["body"],
            "user": self._user(request, issue["user"]),
            "labels": [self._label_json(request, repo, name) for name in issue["labels"]],
            "assignee": assignees[0] if assignees else None,
            "assignees": assignees,
            "milestone": None,
            "locked": False,
            "comments": len(issue["comments"]),
            "created_at": issue["created_at"],
            "updated_at": issue["updated_at"],
            "closed_at": issue["closed_at"],
            "author_association": "MEMBER",
        }
        if issue["pull"]:
            out["pull_request"] = {
                "url": f"{base}/pulls/{n}",
                "html_url": f"https://github.com/{repo['full_name']}/pull/{n}",
                "diff_url": f"https://github.com/{repo['full_name']}/pull/{n}.diff",
                "patch_url": f"https://github.com/{repo['full_name']}/pull/{n}.patch",
                "merged_at": issue["pull"]["merged_at"],
            }
        return out

    def _pull_json(self, request: Request, repo: dict[str, Any], issue: dict[str, Any]) -> dict:
        out = self._issue_json(request, repo, issue)
        pull = issue["pull"]
        base = self._repo_url(request, repo)
        n = issue["number"]
        out.pop("pull_request")
        repo_json = self._repo_json(request, repo)
        head_sha = repo["branches"].get(pull["head"], pull["head_sha"])
        mergeable = None
        if not pull["merged"] and issue["state"] == "open":
            mergeable = self._merge_tree(repo, pull) is not None
        out.update(
            {
                "id": pull["id"],
                "node_id": f"PR_{pull['id']}",
                "url": f"{base}/pulls/{n}",
                "html_url": f"https://github.com/{repo['full_name']}/pull/{n}",
                "issue_url": f"{base}/issues/{n}",
                "commits_url": f"{base}/pulls/{n}/commits",
                "review_comments_url": f"{base}/pulls/{n}/comments",
                "statuses_url": f"{base}/statuses/{head_sha}",
                "diff_url": f"https://github.com/{repo['full_name']}/pull/{n}.diff",
                "patch_url": f"https://github.com/{repo['full_name']}/pull/{n}.patch",
                "head": {
                    "label": f"{repo['full_name'].split('/')[0]}:{pull['head']}",
                    "ref": pull["head"],
                    "sha": head_sha,
                    "user": repo_json["owner"],
                    "repo": repo_json,
                },
                "base": {
                    "label": f"{repo['full_name'].split('/')[0]}:{pull['base']}",
                    "ref": pull["base"],
                    "sha": repo["branches"].get(pull["base"]),
                    "user": repo_json["owner"],
                    "repo": repo_json,
                },
                "merged": pull["merged"],
                "merged_at": pull["merged_at"],
                "merge_commit_sha": pull["merge_commit_sha"],
                "merged_by": self._user(request, pull["merged_by"]),
                "mergeable": mergeable,
                "mergeable_state": "clean" if mergeable else ("dirty" if mergeable is False else "unknown"),
                "draft": False,
                "requested_reviewers": [],
                "requested_teams": [],
                "comments": len(issue["comments"]),
                "review_comments": 0,
                "commits": 1,
            }
        )
        return out

    def _comment_json(self, request: Request, repo: dict[str, Any], issue: dict, comment: dict) -> dict:
        base = self._repo_url(request, repo)
        return {
            "id": comment["id"],
            "node_id": f"IC_{comment['id']}",
            "url": f"{base}/issues/comments/{comment['id']}",
            "html_url": f"https://github.com/{repo['full_name']}/issues/{issue['number']}#issuecomment-{comment['id']}",
            "issue_url": f"{base}/issues/{issue['number']}",
            "body": comment["body"],
            "user": self._user(request, comment["user"]),
            "created_at": comment["created_at"],
            "updated_at": comment["updated_at"],
            "author_association": "MEMBER",
        }

    def _deployment_json(self, request: Request, repo: dict[str, Any], d: dict[str, Any]) -> dict:
        base = self._repo_url(request, repo)
        return {
            "url": f"{base}/deployments/{d['id']}",
            "id": d["id"],
            "node_id": f"DE_{d['id']}",
            "sha": d["sha"],
            "ref": d["ref"],
            "task": d["task"],
            "payload": d.get("payload") or {},
            "original_environment": d["environment"],
            "environment": d["environment"],
            "description": d["description"],
            "creator": self._user(request, d["creator"]),
            "created_at": d["created_at"],
            "updated_at": d["created_at"],
            "statuses_url": f"{base}/deployments/{d['id']}/statuses",
            "repository_url": base,
            "transient_environment": False,
            "production_environment": d["environment"] == "production",
        }

    def _status_json(self, request: Request, repo: dict[str, Any], d: dict, s: dict) -> dict:
        base = self._repo_url(request, repo)
        return {
            "url": f"{base}/deployments/{d['id']}/statuses/{s['id']}",
            "id": s["id"],
            "node_id": f"DES_{s['id']}",
            "state": s["state"],
            "creator": self._user(request, s["creator"]),
            "description": s.get("description") or "",
            "environment": d["environment"],
            "target_url": s.get("target_url") or "",
            "log_url": s.get("target_url") or "",
            "created_at": s["created_at"],
            "updated_at": s["created_at"],
            "deployment_url": f"{base}/deployments/{d['id']}",
            "repository_url": base,
        }

    # -- users, graphql ---------------------------------------------------------------------------
    def get_authenticated_user(self, request: Request) -> Response:
        return Response(200, self._user(request, self.state["bot"]))

    def get_user(self, request: Request, login: str) -> Response:
        if login not in self.state["users"] and not self._is_owner(login):
            return _error(404, "Not Found")
        return Response(200, self._user(request, login))

    def graphql(self, request: Request) -> Response:
        request.json()
        return Response(
            200,
            {
                "errors": [
                    {"type": "NOT_SUPPORTED", "message": "This simulated GitHub answers the REST API only."}
                ]
            },
            graphql_errors_only=True,
        )

    # -- repos, contents, branches, refs, commits -------------------------------------------------
    def get_repo(self, request: Request, owner: str, repo: str) -> Response:
        found = self._found(owner, repo)
        return Response(200, self._repo_json(request, found))

    def get_contents(self, request: Request, owner: str, repo: str, path: str = "") -> Response:
        found = self._found(owner, repo)
        ref = request.arg("ref") or found["default_branch"]
        sha = self._resolve(found, ref)
        if sha is None:
            return _error(404, f"No commit found for the ref {ref}")
        tree = found["commits"][sha]["tree"]
        path = path.strip("/")
        if path in tree:
            return Response(200, self._content_json(request, found, path, tree[path], ref))
        prefix = f"{path}/" if path else ""
        entries: dict[str, str] = {}
        for p in tree:
            if p.startswith(prefix):
                rest = p[len(prefix) :]
                entries.setdefault(rest.split("/")[0], "dir" if "/" in rest else "file")
        if not entries:
            return _error(404, "Not Found")
        listing = []
        for name, kind in sorted(entries.items()):
            full = prefix + name
            item = self._content_json(request, found, full, tree.get(full, ""), ref)
            item.pop("content")
            item.pop("encoding")
            if kind == "dir":
                item.update({"type": "dir", "size": 0, "sha": blob_sha(full)})
            listing.append(item)
        return Response(200, listing)

    def put_contents(self, request: Request, owner: str, repo: str, path: str) -> Response:
        found = self._found(owner, repo)
        body = self._write_body(request, found)
        path = path.strip("/")
        if not isinstance(body.get("message"), str):
            return _invalid("Content", "message")
        if not isinstance(body.get("content"), str):
            return _invalid("Content", "content")
        try:
            text = base64.b64decode(body["content"], validate=False).decode()
        except (ValueError, UnicodeDecodeError):
            return _error(422, "content is not valid Base64")
        branch = body.get("branch") or found["default_branch"]
        empty = not found["branches"] and branch == found["default_branch"]  # the first commit
        if branch not in found["branches"] and not empty:
            return _error(404, f"Branch {branch} not found")
        head = found["branches"].get(branch)
        tree = found["commits"][head]["tree"] if head else {}
        if path in tree:
            given = body.get("sha")
            if not given:
                return _error(422, 'Invalid request.\n\n"sha" wasn\'t supplied.')
            if given != blob_sha(tree[path]):
                return _error(409, f"{path} does not match {given}")
        elif body.get("sha"):
            return _error(422, f"{path} does not match {body['sha']}")
        sha = self._add_commit(
            found,
            apply_files(tree, {path: text}),
            [head] if head else [],
            body["message"],
            self._now,
            self.state["bot"],
            seq=self.world.current_seq,
        )
        self._set_branch(found, branch, sha)
        status = 200 if path in tree else 201
        commit = self._commit_json(request, found, sha)
        return Response(
            status, {"content": self._content_json(request, found, path, text, branch), "commit": commit}
        )

    def list_branches(self, request: Request, owner: str, repo: str) -> Response:
        found = self._found(owner, repo)
        return self._page(
            request, [self._branch_json(request, found, b, full=False) for b in sorted(found["branches"])]
        )

    def get_branch(self, request: Request, owner: str, repo: str, branch: str) -> Response:
        found = self._repo(owner, repo)
        if found is None or branch not in found["branches"]:
            return _error(404, "Branch not found")
        return Response(200, self._branch_json(request, found, branch, full=True))

    def list_refs(self, request: Request, owner: str, repo: str) -> Response:
        found = self._found(owner, repo)
        return self._page(request, [self._ref_json(request, found, b) for b in sorted(found["branches"])])

    def match_refs(self, request: Request, owner: str, repo: str, ref: str) -> Response:
        found = self._found(owner, repo)
        name = ref.removeprefix("heads/")
        if ref.startswith("heads/") and name in found["branches"]:
            return Response(200, self._ref_json(request, found, name))
        hits = [b for b in sorted(found["branches"]) if f"heads/{b}".startswith(ref)]
        if not hits:
            return _error(404, "Not Found")
        return Response(200, [self._ref_json(request, found, b) for b in hits])

    def get_ref(self, request: Request, owner: str, repo: str, ref: str) -> Response:
        found = self._repo(owner, repo)
        name = ref.removeprefix("heads/")
        if found is None or not ref.startswith("heads/") or name not in found["branches"]:
            return _error(404, "Not Found")
        return Response(200, self._ref_json(request, found, name))

    def create_ref(self, request: Request, owner: str, repo: str) -> Response:
        found = self._found(owner, repo)
        body = self._write_body(request, found)
        ref, sha = body.get("ref"), body.get("sha")
        if not isinstance(ref, str) or not ref.startswith("refs/") or ref.count("/") < 2:
            return _error(
                422, "Reference name is invalid" if ref else 'Invalid request.\n\n"ref" wasn\'t supplied.'
            )
        if not ref.startswith("refs/heads/"):
            return _error(422, "Only branches (refs/heads/...) can be created in this GitHub")
        if not isinstance(sha, str) or sha not in found["commits"]:
            return _error(422, "Object does not exist")
        name = ref.removeprefix("refs/heads/")
        if name in found["branches"]:
            return _error(422, "Reference already exists")
        self._set_branch(found, name, sha)
        return Response(201, self._ref_json(request, found, name))

    def _branch_ref(self, owner: str, repo: str, ref: str) -> tuple[dict, str]:
        """The repo and the branch that ``heads/<name>`` names; otherwise GitHub's 404 or 422 is raised."""
        found = self._found(owner, repo)
        name = ref.removeprefix("heads/")
        if name not in found["branches"]:
            raise _Refused(_error(422, "Reference does not exist"))
        return found, name

    def update_ref(self, request: Request, owner: str, repo: str, ref: str) -> Response:
        found, name = self._branch_ref(owner, repo, ref)
        body = self._write_body(request, found)
        sha = body.get("sha")
        if not isinstance(sha, str) or sha not in found["commits"]:
            return _error(422, "Object does not exist")
        if not body.get("force") and not is_ancestor(found["commits"], found["branches"][name], sha):
            return _error(422, "Update is not a fast forward")
        self._set_branch(found, name, sha)
        return Response(200, self._ref_json(request, found, name))

    def delete_ref(self, request: Request, owner: str, repo: str, ref: str) -> Response:
        found, name = self._branch_ref(owner, repo, ref)
        self._require(found)
        self._set_branch(found, name, None)
        return Response(204, None)

    def list_commits(self, request: Request, owner: str, repo: str) -> Response:
        found = self._found(owner, repo)
        start = self._resolve(found, request.arg("sha"))
        if start is None:
            return _error(404, f"No commit found for SHA: {request.arg('sha')}")
        shas = ancestors(found["commits"], start)
        path = request.arg("path")
        if path:
            shas = [s for s in shas if self._changes(found, s, path)]
        shas.sort(key=lambda s: found["commits"][s]["at"], reverse=True)
        return self._page(request, shas, lambda s: self._commit_json(request, found, s))

    def get_commit(self, request: Request, owner: str, repo: str, sha: str) -> Response:
        found = self._found(owner, repo)
        resolved = self._resolve(found, sha)
        if resolved is None:
            return _error(422, f"No commit found for SHA: {sha}")
        return Response(200, self._commit_json(request, found, resolved, files=True))

    # -- issues and pulls -------------------------------------------------------------------------
    def _issue(self, owner: str, repo: str, number: str) -> tuple[dict | None, dict | None]:
        found = self._repo(owner, repo)
        if found is None:
            return None, None
        return found, found["issues"].get(number.lstrip("0") or number)

    def _found_issue(self, owner: str, repo: str, number: str, *, pull: bool = False) -> tuple[dict, dict]:
        """The repo and its issue (a pull request when ``pull``); otherwise GitHub's 404 is raised."""
        found, issue = self._issue(owner, repo, number)
        if issue is None or (pull and not issue["pull"]):
            raise _Refused(_error(404, "Not Found"))
        return found, issue

    def _message(
        self, repo: dict, issue: dict, kind: str, login: str, text: str | None, at=None, **extra: Any
    ) -> None:
        # who the message can reach on GitHub: the author, the assignees and everyone who commented
        people = {issue["user"], *issue["assignees"], *(c["user"] for c in issue["comments"])}
        self.world.events.add(
            "message",
            at or self.world.clock.now,
            tool="github",
            kind=kind,
            participants=sorted(p for p in people if p),
            repo=repo["ref"],
            repo_name=repo["full_name"],
            number=issue["number"],
            pull=bool(issue["pull"]),
            title=issue["title"],
            user=login,
            text=text or "",
            seq=self.world.current_seq,
            **extra,
        )

    def _issue_event(self, type_: str, repo: dict, issue: dict, kind: str = "", **fields: Any) -> None:
        """A world event about an issue or pull: its kind, repo and number, ``fields``, the call's seq."""
        self.world.events.add(
            type_,
            self.world.clock.now,
            tool="github",
            **({"kind": kind} if kind else {}),
            repo=repo["ref"],
            repo_name=repo["full_name"],
            number=issue["number"],
            **fields,
            seq=self.world.current_seq,
        )

    def _labeled(self, repo: dict, issue: dict, labels: list[str]) -> None:
        if labels:
            self._issue_event("issue_labeled", repo, issue, labels=list(labels))

    def _set_labels(
        self, repo: dict, issue: dict, names: list[str], *, replace: bool
    ) -> list[str] | Response:
        if not isinstance(names, list) or not all(isinstance(n, str) and n.strip() for n in names):
            return _invalid("Label", "name", "invalid")
        have = {n.casefold() for n in issue["labels"]}
        added = [n for n in dict.fromkeys(names) if n.casefold() not in have]
        if replace:
            issue["labels"] = list(dict.fromkeys(names))
        else:
            issue["labels"] += added
        for name in issue["labels"]:
            self._ensure_label(self.world.scene.name, repo, name)
        return added

    def list_issues(self, request: Request, owner: str, repo: str) -> Response:
        found = self._found(owner, repo)
        state = request.arg("state") or "open"
        if state not in ("open", "closed", "all"):
            return _invalid("Issue", "state", "invalid")
        wanted = [x.strip().casefold() for x in (request.arg("labels") or "").split(",") if x.strip()]
        assignee, creator = request.arg("assignee"), request.arg("creator")
        issues = []
        for issue in found["issues"].values():
            names = {n.casefold() for n in issue["labels"]}
            if state != "all" and issue["state"] != state:
                continue
            if any(w not in names for w in wanted):
                continue
            if assignee == "none" and issue["assignees"]:
                continue
            if assignee not in (None, "", "*", "none") and assignee not in issue["assignees"]:
                continue
            if assignee == "*" and not issue["assignees"]:
                continue
            if creator and issue["user"] != creator:
                continue
            issues.append(issue)
        reverse = (request.arg("direction") or "desc") != "asc"
        key = "updated_at" if request.arg("sort") == "updated" else "created_at"
        issues.sort(key=lambda i: (i[key], i["number"]), reverse=reverse)
        return self._page(request, issues, lambda i: self._issue_json(request, found, i))

    def get_issue(self, request: Request, owner: str, repo: str, number: str) -> Response:
        found, issue = self._found_issue(owner, repo, number)
        return Response(200, self._issue_json(request, found, issue))

    def _open_issue(self, repo: dict, title: str, text: str | None, assignees: list[str]) -> dict:
        """A new open issue by the agent, taking the repo's next number (the caller stores it)."""
        number = repo["next_number"]
        repo["next_number"] += 1
        return self._new_issue(
            self.world.scene.name,
            f"{repo['full_name']}#{number}",
            number,
            title,
            text,
            self.state["bot"],
            self._now,
            labels=[],
            assignees=assignees,
            state="open",
            seq=self.world.current_seq,
        )

    def _check_people(self, logins: Any) -> bool:
        return isinstance(logins, list) and all(
            isinstance(x, str) and x in self.state["users"] for x in logins
        )

    def create_issue(self, request: Request, owner: str, repo: str) -> Response:
        found = self._found(owner, repo)
        body = self._body(request)
        title = body.get("title")
        if not isinstance(title, (str, int)) or not str(title).strip():
            return _invalid("Issue", "title")
        text = body.get("body")
        if text is not None and not isinstance(text, str):
            return _invalid("Issue", "body", "invalid")
        assignees = list(body.get("assignees") or [])
        if body.get("assignee"):
            assignees.append(body["assignee"])
        if not self._check_people(assignees):
            return _invalid("Issue", "assignees", "invalid")
        issue = self._open_issue(found, str(title), text, assignees)
        added = self._set_labels(found, issue, list(body.get("labels") or []), replace=False)
        if isinstance(added, Response):
            return added
        found["issues"][str(issue["number"])] = issue
        self._message(found, issue, "issue", self.state["bot"], text)
        self._labeled(found, issue, added)
        return Response(201, self._issue_json(request, found, issue))

    def update_issue(self, request: Request, owner: str, repo: str, number: str) -> Response:
        found, issue = self._found_issue(owner, repo, number)
        body = self._body(request)
        if "title" in body and (not isinstance(body["title"], str) or not body["title"].strip()):
            return _invalid("Issue", "title", "invalid")
        if "state" in body and body["state"] not in ("open", "closed"):
            return _invalid("Issue", "state", "invalid")
        if "assignees" in body and not self._check_people(body["assignees"] or []):
            return _invalid("Issue", "assignees", "invalid")
        if "body" in body and body["body"] is not None and not isinstance(body["body"], str):
            return _invalid("Issue", "body", "invalid")
        added: list[str] = []
        if "labels" in body:
            names = [x if isinstance(x, str) else (x or {}).get("name") for x in body["labels"] or []]
            result = self._set_labels(found, issue, names, replace=True)
            if isinstance(result, Response):
                return result
            added = result
        if "title" in body:
            issue["title"] = body["title"]
        if "assignees" in body:
            issue["assignees"] = list(dict.fromkeys(body["assignees"] or []))
        if "state" in body and body["state"] != issue["state"]:
            issue["state"] = body["state"]
            issue["closed_at"] = self._now if body["state"] == "closed" else None
            issue["state_reason"] = body.get("state_reason") or (
                "completed" if body["state"] == "closed" else "reopened"
            )
        edited = "body" in body and body["body"] != issue["body"]
        if "body" in body:
            issue["body"] = body["body"]
        self._touch(issue)
        if edited:
            self._issue_event(
                "message_edited",
                found,
                issue,
                "issue",
                pull=bool(issue["pull"]),
                user=self.state["bot"],
                text=issue["body"] or "",
            )
        self._labeled(found, issue, added)
        return Response(200, self._issue_json(request, found, issue))

    def list_comments(self, request: Request, owner: str, repo: str, number: str) -> Response:
        found, issue = self._found_issue(owner, repo, number)
        return self._page(request, issue["comments"], lambda c: self._comment_json(request, found, issue, c))

    def _comment(self, owner: str, repo: str, comment_id: str) -> tuple[dict, dict, dict]:
        """The repo, issue and comment; otherwise GitHub's 404 is raised."""
        found = self._repo(owner, repo)
        for issue in (found or {}).get("issues", {}).values():
            for comment in issue["comments"]:
                if str(comment["id"]) == comment_id:
                    return found, issue, comment
        raise _Refused(_error(404, "Not Found"))

    def get_comment(self, request: Request, owner: str, repo: str, id: str) -> Response:
        found, issue, comment = self._comment(owner, repo, id)
        return Response(200, self._comment_json(request, found, issue, comment))

    def edit_comment(self, request: Request, owner: str, repo: str, id: str) -> Response:
        found, issue, comment = self._comment(owner, repo, id)
        body = self._body(request)
        if not isinstance(body.get("body"), str) or not body["body"].strip():
            return _invalid("IssueComment", "body")
        if comment["user"] != self.state["bot"]:
            self._require(found)
        comment["body"] = body["body"]
        self._touch(comment)
        self._issue_event(
            "message_edited",
            found,
            issue,
            "comment",
            pull=bool(issue["pull"]),
            user=comment["user"],
            text=body["body"],
            comment_id=comment["id"],
        )
        return Response(200, self._comment_json(request, found, issue, comment))

    def delete_comment(self, request: Request, owner: str, repo: str, id: str) -> Response:
        found, issue, comment = self._comment(owner, repo, id)
        if comment["user"] != self.state["bot"]:
            self._require(found)
        issue["comments"].remove(comment)
        self._touch(issue)
        self._issue_event("message_deleted", found, issue, "comment", comment_id=comment["id"])
        return Response(204, None)

    def list_labels(self, request: Request, owner: str, repo: str) -> Response:
        found = self._found(owner, repo)
        return self._page(request, [self._label_json(request, found, n) for n in sorted(found["labels"])])

    def create_comment(self, request: Request, owner: str, repo: str, number: str) -> Response:
        found, issue = self._found_issue(owner, repo, number)
        body = self._body(request)
        if not isinstance(body.get("body"), str) or not body["body"].strip():
            return _invalid("IssueComment", "body")
        comment = self._new_comment(
            self._new_id("comment"), self.state["bot"], body["body"], self._now, self.world.current_seq
        )
        issue["comments"].append(comment)
        self._touch(issue)
        self._message(found, issue, "comment", self.state["bot"], body["body"], comment_id=comment["id"])
        return Response(201, self._comment_json(request, found, issue, comment))

    def post_comment(
        self, repo_name: str, number: int, login: str, text: str, *, at, canonical: str | None = None
    ) -> dict | None:
        """A comment by a person of the world (never the agent: no trace seq) at ``at``, with its
        ``message`` event; None when the issue is gone."""
        owner, _, name = repo_name.partition("/")
        found, issue = self._issue(owner, name, str(number))
        if issue is None:
            return None
        comment = self._new_comment(self._new_id("comment"), login, text, iso(at), None)
        comment["seed"] = False
        issue["comments"].append(comment)
        issue["updated_at"] = iso(at)
        extra = {"canonical": canonical} if canonical else {}
        self._message(found, issue, "comment", login, text, at=at, comment_id=comment["id"], **extra)
        return comment

    def list_issue_labels(self, request: Request, owner: str, repo: str, number: str) -> Response:
        found, issue = self._found_issue(owner, repo, number)
        return self._page(request, [self._label_json(request, found, n) for n in issue["labels"]])

    def add_labels(self, request: Request, owner: str, repo: str, number: str) -> Response:
        found, issue = self._found_issue(owner, repo, number)
        body = request.json()
        if isinstance(body, dict):
            body = body.get("labels")
        if isinstance(body, list):
            body = [x.get("name") if isinstance(x, dict) else x for x in body]
        added = self._set_labels(found, issue, body if isinstance(body, list) else None, replace=False)
        if isinstance(added, Response):
            return added
        self._touch(issue)
        self._labeled(found, issue, added)
        return Response(200, [self._label_json(request, found, n) for n in issue["labels"]])

    def remove_label(self, request: Request, owner: str, repo: str, number: str, name: str) -> Response:
        found, issue = self._found_issue(owner, repo, number)
        match = next((n for n in issue["labels"] if n.casefold() == name.casefold()), None)
        if match is None:
            return _error(404, "Label does not exist")
        issue["labels"].remove(match)
        self._touch(issue)
        return Response(200, [self._label_json(request, found, n) for n in issue["labels"]])

    def list_pulls(self, request: Request, owner: str, repo: str) -> Response:
        found = self._found(owner, repo)
        state = request.arg("state") or "open"
        head, base = request.arg("head"), request.arg("base")
        pulls = [
            i
            for i in found["issues"].values()
            if i["pull"]
            and (state == "all" or i["state"] == state)
            and (not head or i["pull"]["head"] == head.split(":")[-1])
            and (not base or i["pull"]["base"] == base)
        ]
        pulls.sort(
            key=lambda i: (i["created_at"], i["number"]),
            reverse=(request.arg("direction") or "desc") != "asc",
        )
        return self._page(request, pulls, lambda i: self._pull_json(request, found, i))

    def get_pull(self, request: Request, owner: str, repo: str, number: str) -> Response:
        found, issue = self._found_issue(owner, repo, number, pull=True)
        return Response(200, self._pull_json(request, found, issue))

    def update_pull(self, request: Request, owner: str, repo: str, number: str) -> Response:
        """Title, body and state as on an issue; ``base`` moves the pull to another branch."""
        found, issue = self._found_issue(owner, repo, number, pull=True)
        body = self._body(request)
        if "base" in body and body["base"] not in found["branches"]:
            return _invalid("PullRequest", "base", "invalid")
        if body.get("state") == "open" and issue["pull"]["merged"]:
            return _custom("PullRequest", "A merged pull request cannot be reopened")
        answer = self.update_issue(request, owner, repo, number)
        if answer.status != 200:
            return answer
        if "base" in body:
            issue["pull"]["base"] = body["base"]
        return Response(200, self._pull_json(request, found, issue))

    def get_merged(self, request: Request, owner: str, repo: str, number: str) -> Response:
        found, issue = self._issue(owner, repo, number)
        if issue is None or not issue["pull"] or not issue["pull"]["merged"]:
            return Response(404, None)
        return Response(204, None)

    def create_pull(self, request: Request, owner: str, repo: str) -> Response:
        found = self._found(owner, repo)
        body = self._body(request)
        for name in ("head", "base"):
            if not isinstance(body.get(name), str) or not body[name]:
                return _invalid("PullRequest", name)
        if not isinstance(body.get("title"), str) or not body["title"].strip():
            return _invalid("PullRequest", "title")
        head, base = body["head"].split(":")[-1], body["base"]
        if head not in found["branches"]:
            return _invalid("PullRequest", "head", "invalid")
        if base not in found["branches"]:
            return _invalid("PullRequest", "base", "invalid")
        if found["branches"][head] == found["branches"][base] or is_ancestor(
            found["commits"], found["branches"][head], found["branches"][base]
        ):
            return _custom("PullRequest", f"No commits between {base} and {head}")
        for other in found["issues"].values():
            if (
                other["pull"]
                and other["state"] == "open"
                and (other["pull"]["head"], other["pull"]["base"]) == (head, base)
            ):
                return _custom("PullRequest", f"A pull request already exists for {owner}:{head}.")
        issue = self._open_issue(found, body["title"], body.get("body"), [])
        issue["pull"] = {
            "id": self._new_id("pull"),
            "head": head,
            "base": base,
            "head_sha": found["branches"][head],
            "merged": False,
            "merged_at": None,
            "merged_by": None,
            "merge_commit_sha": None,
            "merge_seq": None,
        }
        found["issues"][str(issue["number"])] = issue
        self._message(found, issue, "pull", self.state["bot"], body.get("body"))
        return Response(201, self._pull_json(request, found, issue))

    @staticmethod
    def _merge(commits: dict, head: str, base: str) -> dict[str, str]:
        """The three-way merge of commits ``head`` into ``base``; raises Conflict."""
        ancestor = merge_base(commits, head, base)
        return merge_trees(
            commits[ancestor]["tree"] if ancestor else {}, commits[base]["tree"], commits[head]["tree"]
        )

    def _merge_tree(self, repo: dict, pull: dict) -> dict[str, str] | None:
        """The merged tree, or None on a conflict."""
        head, base = repo["branches"].get(pull["head"]), repo["branches"].get(pull["base"])
        if head is None or base is None:
            return None
        try:
            return self._merge(repo["commits"], head, base)
        except Conflict:
            return None

    def merge_pull(self, request: Request, owner: str, repo: str, number: str) -> Response:
        found, issue = self._found_issue(owner, repo, number, pull=True)
        body = self._write_body(request, found)
        pull = issue["pull"]
        if pull["merged"] or issue["state"] != "open":
            return _error(405, "Pull Request is not mergeable")
        head, base = found["branches"].get(pull["head"]), found["branches"].get(pull["base"])
        if head is None or base is None:
            return _error(405, "Pull Request is not mergeable")
        if body.get("sha") and body["sha"] != head:
            return _error(409, "Head branch was modified. Review and try the merge again.")
        method = body.get("merge_method") or "merge"
        if method not in ("merge", "squash", "rebase"):
            return _invalid("PullRequest", "merge_method", "invalid")
        try:
            tree = self._merge(found["commits"], head, base)
        except Conflict as exc:
            return _error(405, "merge conflict", conflicts=exc.paths)
        title = body.get("commit_title") or (
            f"Merge pull request #{issue['number']} from {owner}/{pull['head']}"
            if method == "merge"
            else f"{issue['title']} (#{issue['number']})"
        )
        message = title + (
            f"\n\n{body['commit_message']}"
            if body.get("commit_message")
            else f"\n\n{issue['title']}"
            if method == "merge"
            else ""
        )
        parents = [base, head] if method == "merge" else [base]
        sha = self._add_commit(
            found, tree, parents, message, self._now, self.state["bot"], seq=self.world.current_seq
        )
        self._set_branch(found, pull["base"], sha)
        pull.update(
            {
                "merged": True,
                "merged_at": self._now,
                "merged_by": self.state["bot"],
                "merge_commit_sha": sha,
                "merge_seq": self.world.current_seq,
                "head_sha": head,
            }
        )
        issue["state"] = "closed"
        issue["closed_at"] = self._now
        self._touch(issue)
        return Response(200, {"sha": sha, "merged": True, "message": "Pull Request successfully merged"})

    # -- collaborators ----------------------------------------------------------------------------
    def list_collaborators(self, request: Request, owner: str, repo: str) -> Response:
        found = self._found(owner, repo)
        out = []
        for login, perm in sorted(found["collaborators"].items()):
            user = self._user(request, login)
            user["permissions"] = self._permissions(perm)  # a collaborator can at least read
            user["role_name"] = perm
            out.append(user)
        return self._page(request, out)

    def check_collaborator(self, request: Request, owner: str, repo: str, login: str) -> Response:
        found = self._found(owner, repo)
        return Response(204, None) if login in found["collaborators"] else Response(404, None)

    def add_collaborator(self, request: Request, owner: str, repo: str, login: str) -> Response:
        found = self._found(owner, repo)
        body = self._write_body(request, found, "admin", "Must have admin rights to Repository.")
        if login not in self.state["users"]:
            return _error(404, "Not Found")
        permission = body.get("permission") or "push"
        if permission not in GRANTS:
            return _invalid(
                "Repository",
                "permission",
                "invalid",
                f"{permission!r} is not one of pull, triage, push, maintain, admin",
            )
        existed = login in found["collaborators"]
        found["collaborators"][login] = GRANTS[permission]
        found.setdefault("collaborator_seqs", {})[login] = self.world.current_seq
        if existed:
            return Response(204, None)
        invitation_id = self._new_id("invitation")
        return Response(
            201,
            {
                "id": invitation_id,
                "node_id": f"RI_{invitation_id}",
                "repository": self._repo_json(request, found),
                "invitee": self._user(request, login),
                "inviter": self._user(request, self.state["bot"]),
                "permissions": permission,
                "created_at": self._now,
                "expired": False,
                "url": f"{self._root(request)}/user/repository_invitations/{invitation_id}",
                "html_url": f"https://github.com/{found['full_name']}/invitations",
            },
        )

    def get_permission(self, request: Request, owner: str, repo: str, login: str) -> Response:
        found = self._found(owner, repo)
        if login not in self.state["users"] and not self._is_owner(login):
            return _error(404, "Not Found")
        access = self._access(found, login)
        return Response(200, {"permission": access, "role_name": access, "user": self._user(request, login)})

    # -- deployments ------------------------------------------------------------------------------
    def _deployment(self, owner: str, repo: str, deployment_id: str) -> tuple[dict, dict]:
        """The repo and its deployment; otherwise GitHub's 404 is raised."""
        found = self._repo(owner, repo)
        for d in (found or {}).get("deployments", ()):
            if str(d["id"]) == deployment_id:
                return found, d
        raise _Refused(_error(404, "Not Found"))

    def list_deployments(self, request: Request, owner: str, repo: str) -> Response:
        found = self._found(owner, repo)
        filters = {k: request.arg(k) for k in ("sha", "ref", "environment", "task") if request.arg(k)}
        items = [d for d in found["deployments"] if all(str(d.get(k)) == v for k, v in filters.items())]
        return self._page(request, [self._deployment_json(request, found, d) for d in reversed(items)])

    def get_deployment(self, request: Request, owner: str, repo: str, id: str) -> Response:
        found, d = self._deployment(owner, repo, id)
        return Response(200, self._deployment_json(request, found, d))

    def create_deployment(self, request: Request, owner: str, repo: str) -> Response:
        found = self._found(owner, repo)
        body = self._write_body(request, found)
        ref = body.get("ref")
        if not isinstance(ref, str) or not ref:
            return _invalid("Deployment", "ref")
        sha = self._resolve(found, ref)
        if sha is None:
            return _error(422, f"No ref found for: {ref}")
        deployment = {
            "id": self._new_id("deployment"),
            "sha": sha,
            "ref": ref,
            "environment": body.get("environment") or "production",
            "description": body.get("description"),
            "task": body.get("task") or "deploy",
            "payload": body.get("payload") if isinstance(body.get("payload"), dict) else {},
            "creator": self.state["bot"],
            "created_at": self._now,
            "seq": self.world.current_seq,
            "statuses": [],
        }
        found["deployments"].append(deployment)
        return Response(201, self._deployment_json(request, found, deployment))

    def list_statuses(self, request: Request, owner: str, repo: str, id: str) -> Response:
        found, d = self._deployment(owner, repo, id)
        return self._page(request, [self._status_json(request, found, d, s) for s in reversed(d["statuses"])])

    def create_status(self, request: Request, owner: str, repo: str, id: str) -> Response:
        found, d = self._deployment(owner, repo, id)
        body = self._write_body(request, found)
        if body.get("state") not in STATUS_STATES:
            return _invalid("DeploymentStatus", "state", "invalid" if "state" in body else "missing_field")
        status = {
            "id": self._new_id("status"),
            "state": body["state"],
            "order": self._serial(),
            "created_at": self._now,
            "creator": self.state["bot"],
            "description": body.get("description"),
            "target_url": body.get("log_url") or body.get("target_url"),
            "seq": self.world.current_seq,
        }
        d["statuses"].append(status)
        return Response(201, self._status_json(request, found, d, status))

    # -- state: production, checks, final state -----------------------------------------------------
    @staticmethod
    def _production(repo: dict) -> tuple[str | None, dict | None, dict | None]:
        """(sha, deployment, status) of the production deployment whose success status came last."""
        best = (None, None, None)
        order = -1
        for d in repo["deployments"]:
            if d["environment"] != "production":
                continue
            for s in d["statuses"]:
                if s["state"] == "success" and s["order"] > order:
                    best, order = (d["sha"], d, s), s["order"]
        return best

    def _repo_by_ref(self, ref: str) -> dict | None:
        return next((r for r in self.state["repos"].values() if r["ref"] == ref), None)

    def _commit_by_ref(self, repo: dict, ref: str) -> str | None:
        return next((s for s, c in repo["commits"].items() if c["ref"] == ref), None)

    def _issue_by_ref(self, ref: str) -> tuple[dict | None, dict | None]:
        for repo in self.state["repos"].values():
            for issue in repo["issues"].values():
                if issue.get("ref") == ref:
                    return repo, issue
        return None, None

    @staticmethod
    def _seqs(*values: Any) -> tuple[int, ...]:
        out: set[int] = set()
        for v in values:
            if isinstance(v, int):
                out.add(v)
            elif isinstance(v, list | tuple | set):
                out.update(x for x in v if isinstance(x, int))
        return tuple(sorted(out))

    def state_check(self, name: str, spec: Mapping[str, Any]) -> StateResult:
        handler = getattr(self, f"_check_{name}", None)
        if handler is None:
            return super().state_check(name, spec)
        repo_ref = spec.get("repo")
        if repo_ref is not None and self._repo_by_ref(repo_ref) is None:
            return StateResult.of(False, f"repository {repo_ref}", "no such repository in this world")
        return handler(spec)

    def _revision(self, repo: dict, revision: str) -> tuple[str | None, str]:
        if revision == "default":
            branch = repo["default_branch"]
            return repo["branches"].get(branch), f"the default branch {branch}"
        if revision == "production":
            return self._production(repo)[0], "production"
        if revision in repo["branches"]:
            return repo["branches"][revision], f"branch {revision}"
        sha = self._commit_by_ref(repo, revision)
        if sha is not None:
            return sha, f"commit {revision}"
        return None, revision

    def _check_file_at(self, spec: Mapping[str, Any]) -> StateResult:
        repo = self._repo_by_ref(spec["repo"])
        path, revision = spec["path"], spec["revision"]
        sha, where = self._revision(repo, revision)
        mode, text = ("contains", spec["contains"]) if "contains" in spec else ("equals", spec["equals"])
        verb = "containing" if mode == "contains" else "equal to"
        expected = f"{path} at {where} of {repo['full_name']} {verb} {text!r}"
        if sha is None:
            return StateResult.of(False, expected, f"no revision {revision!r} in {repo['full_name']}")
        tree = repo["commits"][sha]["tree"]
        evidence = self._file_evidence(repo, sha, path)
        if path not in tree:
            return StateResult.of(False, expected, f"no file {path} at {sha[:7]}", evidence=evidence)
        content = tree[path]
        passed = text in content if mode == "contains" else content == text
        shown = content if len(content) <= 200 else content[:200] + "…"
        return StateResult.of(passed, expected, f"{path} at {sha[:7]} reads {shown!r}", evidence=evidence)

    def _file_evidence(self, repo: dict, sha: str, path: str) -> tuple[int, ...]:
        """The agent's calls behind a file's content at a commit: the commits in its history that
        changed the file, and the merges that brought it."""
        seqs = []
        for s in ancestors(repo["commits"], sha):
            c = repo["commits"][s]
            if c["seq"] is not None and self._changes(repo, s, path):
                seqs.append(c["seq"])
        return self._seqs(seqs)

    def _check_pull(self, spec: Mapping[str, Any]) -> StateResult:
        repo, issue = self._issue_by_ref(spec["pull"])
        want = bool(spec["merged"])
        expected = f"pull request {spec['pull']} {'merged' if want else 'not merged'}"
        if issue is None or not issue["pull"]:
            return StateResult.of(False, expected, f"no pull request {spec['pull']}")
        pull = issue["pull"]
        actual = (
            f"#{issue['number']} in {repo['full_name']} merged as {pull['merge_commit_sha'][:7]}"
            if pull["merged"] and pull["merge_commit_sha"]
            else f"#{issue['number']} in {repo['full_name']} not merged ({issue['state']})"
        )
        return StateResult.of(
            pull["merged"] == want, expected, actual, evidence=self._seqs(pull["merge_seq"], issue["seqs"])
        )

    def _check_production(self, spec: Mapping[str, Any]) -> StateResult:
        repo = self._repo_by_ref(spec["repo"])
        want = self._commit_by_ref(repo, spec["commit"])
        expected = f"production of {repo['full_name']} at {spec['commit']}" + (
            f" ({want[:7]})" if want else ""
        )
        sha, d, s = self._production(repo)
        if sha is None:
            return StateResult.of(False, expected, "no successful production deployment")
        name = repo["commits"].get(sha, {}).get("ref") or sha[:7]
        evidence = self._seqs(d["seq"], s["seq"])
        return StateResult.of(sha == want, expected, f"production at {name} ({sha[:7]})", evidence=evidence)

    def _check_issue(self, spec: Mapping[str, Any]) -> StateResult:
        repo = self._repo_by_ref(spec["repo"])

        def strs(value: Any) -> list[str]:
            return [] if value is None else [value] if isinstance(value, str) else list(value)

        titles, bodies = strs(spec.get("title_contains")), strs(spec.get("body_contains"))
        labels, state = strs(spec.get("labels")), spec.get("state")
        conditions = []
        if titles:
            conditions.append("title containing " + " and ".join(repr(t) for t in titles))
        if bodies:
            conditions.append("body containing " + " and ".join(repr(b) for b in bodies))
        if labels:
            conditions.append("labels " + ", ".join(labels))
        if state:
            conditions.append(f"state {state}")

        def fits(issue: dict) -> bool:
            title, body = issue["title"].casefold(), (issue["body"] or "").casefold()
            names = {n.casefold() for n in issue["labels"]}
            return (
                all(t.casefold() in title for t in titles)
                and all(b.casefold() in body for b in bodies)
                and all(lb.casefold() in names for lb in labels)
                and (not state or issue["state"] == state)
            )

        issues = [i for i in repo["issues"].values() if not i["pull"]]
        hits = [i for i in issues if fits(i)]
        n = len(hits)
        if "count" in spec:
            passed, quantity = n == spec["count"], f"exactly {spec['count']}"
        elif "count_gte" in spec or "count_lte" in spec:
            lo, hi = spec.get("count_gte"), spec.get("count_lte")
            passed = (lo is None or n >= lo) and (hi is None or n <= hi)
            quantity = " and ".join(
                x
                for x in (
                    f"at least {lo}" if lo is not None else "",
                    f"at most {hi}" if hi is not None else "",
                )
                if x
            )
        else:
            passed, quantity = n >= 1, "at least 1"
        what = f" with {', '.join(conditions)}" if conditions else ""
        expected = f"{quantity} issue(s) in {repo['full_name']}{what}"
        numbers = ", ".join(f"#{i['number']}" for i in sorted(hits, key=lambda i: i["number"]))
        actual = f"{n} matching issue(s)" + (f" ({numbers})" if numbers else "") + f" among {len(issues)}"
        evidence = [[i["seq"], *i["seqs"]] for i in hits]
        if not hits and issues:
            # Name the closest miss: the issue meeting the most conditions (written in the trial first).
            def misses(issue: dict) -> list[str]:
                title, body = issue["title"].casefold(), (issue["body"] or "").casefold()
                names = {n.casefold() for n in issue["labels"]}
                out = [f"its title lacks {t!r}" for t in titles if t.casefold() not in title]
                out += [f"its body lacks {b!r}" for b in bodies if b.casefold() not in body]
                out += [f"it has no label {lb}" for lb in labels if lb.casefold() not in names]
                out += [f"it is {issue['state']}"] if state and issue["state"] != state else []
                return out

            closest = min(issues, key=lambda i: (len(misses(i)), bool(i.get("seed")), -i["number"]))
            actual += f"; closest: #{closest['number']} {closest['title']!r}, but " + " and ".join(
                misses(closest)
            )
            evidence.append([closest["seq"], *closest["seqs"]])
        return StateResult.of(passed, expected, actual, evidence=self._seqs(*evidence))

    def _check_permission(self, spec: Mapping[str, Any]) -> StateResult:
        repo = self._repo_by_ref(spec["repo"])
        login = next(
            (u["login"] for u in self.state["users"].values() if u["ref"] == spec["user"]), spec["user"]
        )
        access = self._access(repo, login)
        expected = f"{login} with {spec['is']} access to {repo['full_name']}"
        how = (
            "as a collaborator"
            if login in repo["collaborators"]
            else (
                "as a non-collaborator on a private repository"
                if repo["private"]
                else "as a non-collaborator on a public repository"
            )
        )
        evidence = self._seqs(repo.get("collaborator_seqs", {}).get(login))
        return StateResult.of(
            access == spec["is"], expected, f"{login} has {access} access {how}", evidence=evidence
        )

    def final_state(self) -> dict[str, Any]:
        repos = {}
        for name, repo in self.state["repos"].items():
            production = self._production(repo)[0]
            items = sorted(repo["issues"].values(), key=lambda i: i["number"])

            def item(i: dict) -> dict:
                out = {
                    "number": i["number"],
                    "title": i["title"],
                    "body": i["body"],
                    "state": i["state"],
                    "author": i["user"],
                    "labels": i["labels"],
                    "assignees": i["assignees"],
                    "comments": [
                        {"from": c["user"], "body": c["body"], "at": c["created_at"]} for c in i["comments"]
                    ],
                    "seed": i["seq"] is None,
                }
                if i["pull"]:
                    out.update(
                        {
                            "head": i["pull"]["head"],
                            "base": i["pull"]["base"],
                            "merged": i["pull"]["merged"],
                            "merge_commit": i["pull"]["merge_commit_sha"],
                        }
                    )
                return out

            repos[name] = {
                "ref": repo["ref"],
                "private": repo["private"],
                "default_branch": repo["default_branch"],
                "branches": dict(sorted(repo["branches"].items())),
                "files": {
                    b: dict(sorted(repo["commits"][s]["tree"].items()))
                    for b, s in sorted(repo["branches"].items())
                },
                "production": production,
                "commits": {
                    sha: {
                        "message": c["message"],
                        "parents": c["parents"],
                        "at": c["at"],
                        "ref": c["ref"],
                        "seed": c["seq"] is None,
                    }
                    for sha, c in repo["commits"].items()
                },
                "collaborators": dict(sorted(repo["collaborators"].items())),
                "issues": [item(i) for i in items if not i["pull"]],
                "pulls": [item(i) for i in items if i["pull"]],
                "deployments": [
                    {
                        "id": d["id"],
                        "sha": d["sha"],
                        "environment": d["environment"],
                        "statuses": [s["state"] for s in d["statuses"]],
                        "seed": d["seq"] is None,
                    }
                    for d in repo["deployments"]
                ],
            }
        return {"repos": repos}


# An issue, pull, comment or deployment number is digits: ``/issues/events`` is not issue "events" but
# an endpoint this simulator does not implement (a coverage gap).
GitHubSimulator._compiled = tuple(
    Route(
        r.method,
        re.compile(re.sub(r"\(\?P<(number|id)>\[\^/\]\+\)", r"(?P<\1>[0-9]+)", r.pattern.pattern)),
        r.handler,
    )
    for r in GitHubSimulator._compiled
)

TOOL = register(
    Tool(
        name="github",
        records=(
            RecordKind("user", "users", USER),
            RecordKind("repo", "repos", REPO, cleaner=_repo),
            RecordKind("pull", "pulls", PULL),
            RecordKind("issue", "issues", ISSUE),
        ),
        state_checks=CHECKS,
        has_bot=True,
        simulator=GitHubSimulator,
    )
)
