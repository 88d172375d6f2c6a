"""A simulated tool's state stored in pieces, so a call that changes one record writes that record.

A tool's state (JSON-like: dicts, lists, scalars) is stored as rows keyed by a path from the state's
root (``[]``, ``["repos","acme/orders","issues","12"]``, ``["messages",80]``). A row is either a
*leaf*, holding the value at its path whole, or a *skeleton* of a container that is stored split: a
dict's keys in their order (``DICT``) or a list's length (``LIST``), each child a row of its own.
Reading the rows back gives the state exactly, dict order included.

A value is split when its fingerprint is over ``LEAF_BYTES`` and it is a list or a dict with string
keys; what is split stays split (a dict whose records shrink keeps its rows), so the shape of the rows
depends on the state's history, never its content. Which rows a call changed is found by walking the
tree of what is stored (:class:`Split` nodes and the leaves' fingerprints) along the new state:
:func:`diff` gives the rows to write (new or changed) and the paths to delete. A state stored whole
(one leaf at ``[]``, as every tool starts) is split by the first call that changes it.

Pure Python, no Django: the console's store (worlds.services, worlds.callstore) uses it."""

from __future__ import annotations

import json
import marshal
from collections.abc import Iterable
from marshal import dumps as _dumps
from typing import Any

__all__ = [
    "DICT",
    "LEAF",
    "LEAF_BYTES",
    "LIST",
    "ROOT",
    "Split",
    "assemble",
    "diff",
    "fingerprint",
    "path_text",
]

LEAF, DICT, LIST = "", "d", "l"  # a row's shape
ROOT = "[]"  # the path of a tool's whole state
LEAF_BYTES = 2048  # a value whose fingerprint is longer is stored split (when it can be)

Path = tuple[str | int, ...]
Node = Any  # bytes (a leaf's fingerprint) or Split
Row = tuple[Path, str, Any]  # (path, shape, data)


class Split:
    """A container stored split: ``keys`` (a dict's, in order) or None for a list; its children's nodes
    (a dict by key, or a list by index)."""

    __slots__ = ("children", "keys")

    def __init__(self, keys: list[str] | None, children: dict[str, Node] | list[Node]) -> None:
        self.keys = keys
        self.children = children

    def __repr__(self) -> str:  # pragma: no cover - debugging
        return f"Split({self.keys!r}, {self.children!r})"


def fingerprint(value: Any) -> bytes:
    """Equal bytes mean an equal value (marshal is exact about types; a different dict order only makes
    a needless write). Version 0 writes no back-references or interning marks, which depend on
    reference counts rather than on the value, and is the fastest."""
    try:
        return marshal.dumps(value, 0)
    except ValueError:
        return json.dumps(value, sort_keys=False, default=str).encode()


def path_text(path: Path) -> str:
    """A path as stored: its JSON text (dict keys strings, list indexes numbers)."""
    return json.dumps(list(path), separators=(",", ":"))


def _splittable(value: Any) -> bool:
    kind = type(value)
    if kind is list:
        return True
    return kind is dict and all(type(k) is str for k in value)


def _fresh(value: Any, path: Path, puts: list[Row], mark: bytes | None = None) -> Node:
    """Rows for ``value`` stored anew at ``path`` (split when large)."""
    if mark is None:
        mark = fingerprint(value)
    if len(mark) <= LEAF_BYTES or not _splittable(value):
        puts.append((path, LEAF, value))
        return mark
    if type(value) is dict:
        keys = list(value)
        puts.append((path, DICT, keys))
        return Split(keys, {k: _fresh(v, (*path, k), puts) for k, v in value.items()})
    puts.append((path, LIST, len(value)))
    return Split(None, [_fresh(v, (*path, i), puts) for i, v in enumerate(value)])


def _drop(node: Node, path: Path, gone: list[Path], *, itself: bool = True) -> None:
    """The paths of ``node``'s rows (its own unless ``itself`` is false, and every descendant's)."""
    if itself:
        gone.append(path)
    if type(node) is Split:
        pairs: Iterable = node.children.items() if node.keys is not None else enumerate(node.children)
        for key, child in pairs:
            _drop(child, (*path, key), gone)


def diff(value: Any, node: Node | None, path: Path, puts: list[Row], gone: list[Path]) -> Node:
    """The node of ``value`` stored at ``path`` where ``node`` (None: nothing) is stored now; appends
    the rows to write to ``puts`` and the paths to delete to ``gone``. ``node`` is left as it was."""
    if type(node) is Split:
        if node.keys is not None and type(value) is dict and _splittable(value):
            keys = list(value)
            old = node.children
            if keys != node.keys:
                puts.append((path, DICT, keys))
                for key in node.keys:
                    if key not in value:
                        _drop(old[key], (*path, key), gone)
            children: dict[str, Node] = {}
            for key, item in value.items():
                children[key] = _child(item, old.get(key), path, key, puts, gone)
            return Split(keys, children)
        if node.keys is None and type(value) is list:
            old = node.children
            if len(value) != len(old):
                puts.append((path, LIST, len(value)))
                for i in range(len(value), len(old)):
                    _drop(old[i], (*path, i), gone)
            n = len(old)
            items = [_child(v, old[i] if i < n else None, path, i, puts, gone) for i, v in enumerate(value)]
            return Split(None, items)
        _drop(node, path, gone, itself=False)  # another kind of value: the row at ``path`` is rewritten
        return _fresh(value, path, puts)
    mark = fingerprint(value)
    if mark == node:
        return node
    return _fresh(value, path, puts, mark)


def _child(value: Any, node: Node | None, parent: Path, key: str | int, puts: list[Row], gone: list) -> Node:
    """diff() of a container's item, its path made only when something is written (most items of a
    collection are unchanged leaves: one marshal and a comparison)."""
    if type(node) is bytes:
        try:
            mark = _dumps(value, 0)
        except ValueError:
            mark = fingerprint(value)
        if mark == node:
            return node
        return _fresh(value, (*parent, key), puts, mark)
    return diff(value, node, (*parent, key), puts, gone)


def assemble(rows: Iterable[tuple[str | list, str, Any]]) -> tuple[Any, Node]:
    """A tool's state from its stored rows (path, as text or parsed; shape; data), and the node of what
    is stored."""
    by_path = {tuple(json.loads(p) if type(p) is str else p): (shape, data) for p, shape, data in rows}
    if not by_path:
        raise ValueError("a tool state has no rows")

    def build(path: Path) -> tuple[Any, Node]:
        try:
            shape, data = by_path[path]
        except KeyError:
            raise ValueError(f"a tool state misses its row {path_text(path)}") from None
        if shape == DICT:
            value: dict[str, Any] = {}
            children: dict[str, Node] = {}
            for key in data:
                value[key], children[key] = build((*path, key))
            return value, Split(list(data), children)
        if shape == LIST:
            items, nodes = [], []
            for i in range(data):
                item, child = build((*path, i))
                items.append(item)
                nodes.append(child)
            return items, Split(None, nodes)
        return data, fingerprint(data)

    return build(())
