"""One loader for YAML 1.2 and JSON scenes (JSON is read as the YAML 1.2 it is).

ruamel.yaml composes the node tree (YAML 1.2 core schema: only ``true``/``false`` are booleans, ``yes``,
``no``, ``on`` and ``off`` stay strings); this module builds plain data from it (dict, list, str, int,
float, bool, None; timestamps stay the string written) and keeps every node's line under its field
path. Every duplicate key is reported with both lines; malformed text is one problem on its line.
"""

from __future__ import annotations

import math
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
