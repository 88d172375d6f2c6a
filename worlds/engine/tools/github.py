"""GitHub: users, repos (commits, branches, production, collaborators, private), pulls and issues;
the ``github.*`` state checks of the reference."""

from __future__ import annotations

from typing import Any

from ..schema import Field, RecordKind, StateCheck, Tool, Validator, register

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
    )
)
