"""One loader for YAML 1.2 and JSON scenes (JSON is read as the YAML 1.2 it is).

ruamel.yaml composes the node tree (YAML 1.2 core schema: only ``true``/``false`` are booleans, ``yes``,
``no``, ``on`` and ``off`` stay strings); this module builds plain data from it (dict, list, str, int,
float, bool, None; timestamps stay the string written) and keeps every node's line under its field
path. Every duplicate key is reported with both lines; malformed text is one problem on its line.

A JSON scene takes a fast path first (:func:`_json_tree`): the standard library's JSON decoder for the
values and one regular expression for the structure and the lines, the same data and lines ruamel's
composer gives (ruamel.yaml is pure Python: 0.3-0.6 s for a 200-record scene against about 20 ms). Any
text it is not sure of (YAML, a duplicate key, a syntax error, escapes or line breaks JSON and YAML read
differently) goes through ruamel as before, which reports the problems.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from .problems import Problems, join_path

__all__ = ["Loaded", "load_tree"]

_T = "tag:yaml.org,2002:"


@dataclass
class Loaded:
    """The plain data tree and the line (1-based) of every node, by field path."""

    data: Any
    file: str
    lines: dict[str, int] = field(default_factory=dict)

    def line(self, path: str) -> int:
        """The line of ``path``, or of its nearest ancestor that has one (1 for the whole file)."""
        while path:
            if path in self.lines:
                return self.lines[path]
            path = _parent(path)
        return self.lines.get("", 1)


def _parent(path: str) -> str:
    if path.endswith("]"):
        return path[: path.rindex("[")]
    # keys may hold dots (``slack.message``): drop the last segment written
    return path.rsplit(".", 1)[0] if "." in path else ""


def load_tree(text: str, file: str = "scene.yaml") -> Loaded:
    """Parse ``text``; raises SceneInvalid with every duplicate key, or the one syntax error."""
    fast = _json_tree(text, file)
    return fast if fast is not None else _yaml_tree(text, file)


def _yaml_tree(text: str, file: str) -> Loaded:
    """ruamel.yaml's node tree turned into plain data and lines (any YAML 1.2 or JSON)."""
    loaded = Loaded(data=None, file=file)
    problems = Problems(file, loaded.line)
    yaml = YAML(typ="rt", pure=True)
    yaml.version = (1, 2)
    try:
        root = yaml.compose(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        message = exc.problem or exc.context or "malformed YAML"
        problems.add("", f"malformed YAML or JSON: {message}", line=line)
        problems.raise_if_any()
    except YAMLError as exc:  # e.g. a reader error on a control character
        problems.add("", f"malformed YAML or JSON: {exc}", line=1)
        problems.raise_if_any()
    loaded.lines[""] = 1
    loaded.data = None if root is None else _build(root, "", loaded, problems, set())
    problems.raise_if_any()
    return loaded


def _build(node: Node, path: str, loaded: Loaded, problems: Problems, active: set[int]) -> Any:
    loaded.lines.setdefault(path, node.start_mark.line + 1)
    if id(node) in active:  # an alias of its own ancestor
        problems.add(path, "a YAML alias may not refer to its own parent")
        return None
    if isinstance(node, MappingNode):
        active.add(id(node))
        out: dict[str, Any] = {}
        first_line: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = _scalar(key_node) if isinstance(key_node, ScalarNode) else None
            key_line = key_node.start_mark.line + 1
            if key is None or isinstance(key, (list, dict)):
                problems.add(path, "a mapping key must be a plain value", line=key_line)
                continue
            key = _key_text(key)
            if key in first_line:
                problems.add(
                    join_path(path, key),
                    f"duplicate key {key!r} (first on line {first_line[key]})",
                    line=key_line,
                )
                continue
            first_line[key] = key_line
            child = join_path(path, key)
            loaded.lines[child] = key_line
            out[key] = _build(value_node, child, loaded, problems, active)
        active.discard(id(node))
        return out
    if isinstance(node, SequenceNode):
        active.add(id(node))
        items = []
        for i, item in enumerate(node.value):
            child = join_path(path, i)
            loaded.lines[child] = item.start_mark.line + 1
            items.append(_build(item, child, loaded, problems, active))
        active.discard(id(node))
        return items
    return _scalar(node)


def _key_text(key: Any) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    return "null" if key is None else str(key)


def _scalar(node: ScalarNode) -> Any:
    tag = str(node.tag)
    text = node.value
    if node.style == ">":
        # ruamel's round-trip scanner marks each fold of a folded block scalar with a BEL character (its
        # constructor removes them; we read the node). A folded scalar has no escapes, so a BEL there is
        # always a mark, never text.
        text = text.replace("\a", "")
    if not tag.startswith(_T):
        return text  # a local tag (!foo): the text as written
    kind = tag[len(_T) :]
    if kind == "bool":
        return text.lower() == "true"
    if kind == "null":
        return None
    if kind == "int":
        digits = text.replace("_", "")
        try:
            return int(digits, 0)
        except ValueError:
            return int(digits, 10)  # YAML 1.2 reads 012 as twelve
    if kind == "float":
        low = text.lower().lstrip("+")
        if low in (".inf", "-.inf"):
            return -math.inf if low.startswith("-") else math.inf
        if low == ".nan":
            return math.nan
        return float(text.replace("_", ""))
    return text  # str, timestamp (kept as written), binary, ...


# ----------------------------------------------------------------------------- the JSON fast path

# One token of JSON after optional JSON whitespace: punctuation, a string (no raw control characters,
# JSON's escapes only), a number, or a literal. Strings and numbers are decoded by the json module.
_JSON_TOKEN = re.compile(
    r'[ \n]*(?:([{}\[\]:,])|("(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*")'
    r"|(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)|(true|false|null))"
)
# What JSON and ruamel's YAML read differently: a surrogate escape (ruamel keeps the two halves), a line
# break other than \n (\r, NEL, LS, PS), a tab, a character YAML does not allow (C1 controls, DEL,
# U+FFFE/FFFF, lone surrogates), a byte order mark. Such text takes ruamel.
_NOT_FAST = re.compile(r"\\u[dD][89abcdefABCDEF]|[\t\r\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]")
_LITERALS = {"true": True, "false": False, "null": None}


class _NotFast(Exception):
    """The fast path declines: ruamel reads the text."""


def _json_tree(text: str, file: str) -> Loaded | None:
    """The tree and lines of a JSON document, as :func:`load_tree` builds them from ruamel's nodes;
    None when the text is not plain JSON this path is sure of."""
    if not text.lstrip(" \n").startswith("{") or _NOT_FAST.search(text):
        return None
    loaded = Loaded(data=None, file=file)
    loaded.lines[""] = 1
    reader = _JsonReader(text, loaded.lines)
    try:
        loaded.data = reader.value("")
        if text[reader.pos :].strip(" \n"):
            return None  # more after the document (e.g. a YAML comment): ruamel decides
    except (_NotFast, ValueError, RecursionError):
        return None
    return loaded


class _JsonReader:
    def __init__(self, text: str, lines: dict[str, int]) -> None:
        self.text, self.lines = text, lines
        self.pos = 0
        self.line, self.counted = 1, 0  # the line at offset ``counted``

    def token(self) -> tuple[str, str, int]:
        """(kind, text, line) of the next token: kind "p", "s", "n" or "l"."""
        match = _JSON_TOKEN.match(self.text, self.pos)
        if match is None:
            raise _NotFast
        self.pos = match.end()
        kind = match.lastindex
        start = match.start(kind)
        self.line += self.text.count("\n", self.counted, start)
        self.counted = start
        return "psnl"[kind - 1], match.group(kind), self.line

    def value(self, path: str, first: tuple[str, str, int] | None = None) -> Any:
        kind, tok, line = first or self.token()
        self.lines.setdefault(path, line)
        if kind == "s" or kind == "n":
            return json.loads(tok)
        if kind == "l":
            return _LITERALS[tok]
        if tok == "{":
            return self._object(path)
        if tok == "[":
            return self._array(path)
        raise _NotFast

    def _object(self, path: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        kind, tok, line = self.token()
        if tok == "}" and kind == "p":
            return out
        while True:
            if kind != "s":
                raise _NotFast
            key = json.loads(tok)
            if key in out:
                raise _NotFast  # a duplicate key: ruamel's path reports it with both lines
            if self.token()[1] != ":":
                raise _NotFast
            child = join_path(path, key)
            self.lines[child] = line
            out[key] = self.value(child)
            kind, tok, _ = self.token()
            if kind != "p" or tok not in ",}":
                raise _NotFast
            if tok == "}":
                return out
            kind, tok, line = self.token()

    def _array(self, path: str) -> list[Any]:
        items: list[Any] = []
        first = self.token()
        if first[:2] == ("p", "]"):
            return items
        while True:
            child = join_path(path, len(items))
            self.lines[child] = first[2]
            items.append(self.value(child, first))
            kind, tok, _ = self.token()
            if kind != "p" or tok not in ",]":
                raise _NotFast
            if tok == "]":
                return items
            first = self.token()
