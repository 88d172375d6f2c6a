"""The simulated GitHub's version model: commits as whole trees of text files (path → text), their
SHAs computed from tree, parents, message and simulated time, ancestry, and the file-level three-way
merge GitHub's merge button does. Plain data in, plain data out (the world stores it as JSON)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

__all__ = [
    "Conflict",
    "ancestors",
    "apply_files",
    "blob_sha",
    "commit_sha",
    "is_ancestor",
    "merge_base",
    "merge_trees",
    "tree_sha",
]


class Conflict(Exception):
    """The same file was changed differently on both sides."""

    def __init__(self, paths: list[str]) -> None:
        super().__init__(", ".join(paths))
        self.paths = paths


def blob_sha(text: str) -> str:
    """The SHA git gives a file's content (``blob <size>\\0<bytes>``)."""
    data = text.encode()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def tree_sha(tree: Mapping[str, str]) -> str:
    listing = json.dumps({path: blob_sha(text) for path, text in sorted(tree.items())}, sort_keys=True)
    return hashlib.sha1(b"tree\0" + listing.encode()).hexdigest()


def commit_sha(tree: Mapping[str, str], parents: list[str], message: str, at: str, author: str = "") -> str:
    """Deterministic: the same tree, parents, message, author and time give the same SHA."""
    lines = [
        f"tree {tree_sha(tree)}",
        *(f"parent {p}" for p in parents),
        f"author {author} {at}",
        "",
        message,
    ]
    return hashlib.sha1("\n".join(lines).encode()).hexdigest()


def apply_files(tree: Mapping[str, str], files: Mapping[str, str | None]) -> dict[str, str]:
    """A new tree: ``files`` sets each path's text, ``None`` deletes it."""
    out = dict(tree)
    for path, text in files.items():
        if text is None:
            out.pop(path, None)
        else:
            out[path] = text
    return out


def ancestors(commits: Mapping[str, Mapping[str, Any]], sha: str) -> list[str]:
    """``sha`` and every commit behind it, nearest first (breadth first over all parents)."""
    seen: list[str] = []
    queue = [sha]
    while queue:
        current = queue.pop(0)
        if current in seen or current not in commits:
            continue
        seen.append(current)
        queue.extend(commits[current].get("parents", []))
    return seen


def is_ancestor(commits: Mapping[str, Mapping[str, Any]], older: str, newer: str) -> bool:
    return older in ancestors(commits, newer)


def merge_base(commits: Mapping[str, Mapping[str, Any]], a: str, b: str) -> str | None:
    behind_a = set(ancestors(commits, a))
    return next((sha for sha in ancestors(commits, b) if sha in behind_a), None)


def merge_trees(
    base: Mapping[str, str], ours: Mapping[str, str], theirs: Mapping[str, str]
) -> dict[str, str]:
    """File by file: a side that left a file as it was takes the other side's version; both changing it
    the same way is fine; both changing it differently is a :class:`Conflict`."""
    out: dict[str, str] = {}
    conflicts = []
    for path in sorted(set(base) | set(ours) | set(theirs)):
        b, o, t = base.get(path), ours.get(path), theirs.get(path)
        if o == t or t == b:
            merged = o
        elif o == b:
            merged = t
        else:
            conflicts.append(path)
            continue
        if merged is not None:
            out[path] = merged
    if conflicts:
        raise Conflict(conflicts)
    return out
