"""The shapes of checks: ``id`` plus exactly one kind (state, trace, judge or a process kind), state
checks from the tools' registry (``<tool>.<check>`` plus ``fault_resolved``), message selectors and
milestones. Every problem is collected; the normalised check keeps refs as their names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from checks.kinds.process import PROCESS_KINDS

from .problems import join_path
from .schema import Field, StateCheck, UnknownTool, Validator, all_tools, get_tool, json_type

__all__ = [
    "CHECK_KINDS",
    "Check",
    "MILESTONE_KINDS",
    "validate_check",
    "validate_state",
    "validate_milestone",
]

CHECK_KINDS = ("state", "trace", "judge", *PROCESS_KINDS)
MILESTONE_KINDS = (
    "called",
    "message",
    "decided",
    "knows",
    "told",
    "revealed",
    "issue_labeled",
    "fault_resolved",
)
PATTERN = re.compile(r"\*|(\*|[A-Za-z]+) (\*|/\S*)")
_USERS = ("slack.user", "github.user", "person")

SELECTOR = {
    "to": Field("person"),
    "in": Field("ref", kinds=("slack.channel", "github.issue", "github.pull")),
    "in_thread_of": Field("ref", kinds=("slack.message",)),
    "from": Field("ref", kinds=_USERS),
    "text_contains": Field("str_or_strs"),
    "fact": Field("fact"),
}
FAULT_RESOLVED = StateCheck({"fault": Field("ref", required=True, kinds=("fault",))}, scalar="fault")


@dataclass(frozen=True)
class Check:
    """A validated check: ``kind`` is one of CHECK_KINDS, ``spec`` its normalised value."""

    id: str
    kind: str
    spec: Any
    line: int = 0


def validate_check(raw: Any, path: str, v: Validator) -> Check | None:
    if not isinstance(raw, dict):
        v.add(path, f"a check must be an object with id and one kind, not {json_type(raw)}")
        return None
    check_id = raw.get("id")
    if "id" not in raw:
        v.add(path, "id is required")
    elif not isinstance(check_id, str) or not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", check_id):
        v.add(f"{path}.id", f"must be a name of letters, digits, _ . -, not {check_id!r}")
        check_id = None
    kinds = [k for k in raw if k in CHECK_KINDS]
    for key in raw:
        if key != "id" and key not in CHECK_KINDS:
            v.add(join_path(path, key), f"unknown check kind or field; kinds: {', '.join(CHECK_KINDS)}")
    if len(kinds) != 1:
        if not kinds and all(k == "id" or k in CHECK_KINDS for k in raw):
            v.add(path, f"a check needs exactly one kind: {', '.join(CHECK_KINDS)}")
        elif len(kinds) > 1:
            v.add(path, f"a check has exactly one kind, not {len(kinds)} ({', '.join(kinds)})")
        return None
    kind = kinds[0]
    spec = _KIND_VALIDATORS[kind](raw[kind], join_path(path, kind), v)
    return Check(check_id, kind, spec) if isinstance(check_id, str) else None


def validate_state(raw: Any, path: str, v: Validator) -> dict[str, Any] | None:
    """``{slack.message: {...}}``, ``{datadog.monitor: $m, is: OK}``, ``{github.file_at: [r, main, p],
    contains: x}``: one state check name, its selector inside or beside it (both with different values is
    an error). Returns ``{"check": name, **fields}``."""
    if not isinstance(raw, dict):
        v.add(path, f"must be an object naming one state check, not {json_type(raw)}")
        return None
    names = [k for k in raw if "." in k or k == "fault_resolved"]
    if len(names) != 1:
        known = ", ".join(_state_names())
        v.add(
            path,
            f"name exactly one state check ({known})"
            if not names
            else f"one state check per check, not {', '.join(names)}",
        )
        return None
    name = names[0]
    shape = _state_shape(name)
    if shape is None:
        v.add(join_path(path, name), f"unknown state check {name}; known: {', '.join(_state_names())}")
        return None
    sel_path = join_path(path, name)
    inner = raw[name]
    given: dict[str, tuple[Any, str]] = {}
    if isinstance(inner, dict):
        given = {k: (val, join_path(sel_path, k)) for k, val in inner.items()}
    elif isinstance(inner, list) and shape.positional:
        if len(inner) != len(shape.positional):
            v.add(sel_path, f"must be [{', '.join(shape.positional)}]")
        given = {
            k: (val, join_path(sel_path, i))
            for i, (k, val) in enumerate(zip(shape.positional, inner, strict=False))
        }
    elif shape.scalar and not isinstance(inner, (dict, list)):
        given = {shape.scalar: (inner, sel_path)}
    else:
        v.add(sel_path, f"must be an object{' or a ref' if shape.scalar else ''}, not {json_type(inner)}")
    for key, val in raw.items():
        if key == name:
            continue
        beside = join_path(path, key)
        if key in given and given[key][0] != val:
            v.add(beside, f"given inside {name} as {given[key][0]!r} and beside it as {val!r}")
        given.setdefault(key, (val, beside))
    out: dict[str, Any] = {"check": name}
    for key, (val, fpath) in given.items():
        spec = shape.fields.get(key)
        if spec is None:
            v.add(fpath, f"unknown field for {name}; allowed: {', '.join(shape.fields)}")
        elif val is None:
            v.add(fpath, "must not be null")
        else:
            out[key] = v.value(spec, val, fpath)
    for key, spec in shape.fields.items():
        if spec.required and key not in given:
            v.add(sel_path, f"{key} is required")
    if shape.cleaner is not None:
        shape.cleaner(out, sel_path, v)
    return out


def validate_milestone(raw: Any, path: str, v: Validator) -> dict[str, Any] | None:
    if not isinstance(raw, dict) or len(raw) != 1:
        v.add(path, f"a milestone is an object with one of {', '.join(MILESTONE_KINDS)}")
        return None
    ((kind, value),) = raw.items()
    sub = join_path(path, kind)
    if kind == "called":
        return {"called": _pattern(value, sub, v)}
    if kind == "message":
        return {"message": _selector(value, sub, v)}
    if kind in ("decided", "knows", "told", "revealed"):
        return {kind: _KIND_VALIDATORS[kind](value, sub, v)}
    if kind == "issue_labeled":
        return {
            kind: v.obj(
                {
                    "repo": Field("ref", required=True, kinds=("github.repo",)),
                    "labels": Field("strs", required=True, nonempty=True),
                },
                value,
                sub,
            )
        }
    if kind == "fault_resolved":
        return {kind: v.ref(value, sub, ("fault",))}
    v.add(sub, f"unknown milestone; one of {', '.join(MILESTONE_KINDS)}")
    return None


def _state_names() -> list[str]:
    return [f"{t.name}.{c}" for t in all_tools() for c in t.state_checks] + ["fault_resolved"]


def _state_shape(name: str) -> StateCheck | None:
    if name == "fault_resolved":
        return FAULT_RESOLVED
    tool, _, check = name.partition(".")
    try:
        return get_tool(tool).state_checks.get(check)
    except UnknownTool:
        return None


def _pattern(value: Any, path: str, v: Validator) -> str | None:
    if not isinstance(value, str) or not PATTERN.fullmatch(value):
        v.add(path, f'must be a call pattern "<METHOD> <PATH>" or "*", not {value!r}')
        return None
    return value


def _trace(raw: Any, path: str, v: Validator) -> dict[str, Any] | None:
    spec = v.obj(
        {"called": Field("any"), "not_called": Field("any"), "status": Field("choice", choices=("any",))},
        raw,
        path,
    )
    if spec is None:
        return None
    for key in ("called", "not_called"):
        if key in spec:
            patterns = v.value(Field("str_or_strs"), spec[key], join_path(path, key)) or []
            single = isinstance(spec[key], str)
            spec[key] = [
                _pattern(p, join_path(path, key) if single else join_path(join_path(path, key), i), v)
                for i, p in enumerate(patterns)
            ]
    if "called" not in spec and "not_called" not in spec:
        v.add(path, "give called, not_called or both")
    if "status" in spec and "called" not in spec:
        v.add(join_path(path, "status"), "status: any only goes with called")
    return spec


def _judge(raw: Any, path: str, v: Validator) -> str | None:
    return v.value(Field("str", nonempty=True), raw, path) if raw is not None else v.add(path, "is required")


def _revealed(raw: Any, path: str, v: Validator) -> list | None:
    return (
        v.value(Field("facts", nonempty=True), raw, path) if raw is not None else v.add(path, "is required")
    )


def _knows(raw: Any, path: str, v: Validator) -> dict[str, Any] | None:
    if not isinstance(raw, list) or len(raw) < 2:
        v.add(path, "must be [<person>, <person>.<fact>, ...]")
        return None
    person = v.ref(raw[0], join_path(path, 0), ("person",), bare_person=True)
    facts = [v.value(Field("fact"), f, join_path(path, i)) for i, f in enumerate(raw[1:], start=1)]
    return {"person": person, "facts": facts}


def _decided(raw: Any, path: str, v: Validator) -> dict[str, Any] | None:
    if not isinstance(raw, list) or len(raw) not in (2, 3):
        v.add(path, "must be [<person>, <decision>] or [<person>, <decision>, <option>]")
        return None
    person = v.ref(raw[0], join_path(path, 0), ("person",), bare_person=True)
    decision, option = raw[1], raw[2] if len(raw) == 3 else None
    if person is not None:
        options = v.ns.decisions.get(person, {})
        if decision not in options:
            v.add(
                join_path(path, 1),
                f"unknown decision {decision!r}: {person} has {', '.join(options) or 'none'}",
            )
        elif option is not None and option not in options[decision]:
            v.add(
                join_path(path, 2),
                f"{option!r} is not an option of {person}.{decision}: "
                f"{', '.join(map(str, options[decision]))}",
            )
    return {"person": person, "decision": decision, "option": option}


def _selector(raw: Any, path: str, v: Validator, *, count: bool = False) -> dict[str, Any] | None:
    fields = {**SELECTOR, "count_gte": Field("int", minimum=1, maximum=10_000)} if count else SELECTOR
    spec = v.obj(fields, raw, path)
    if (
        spec is not None
        and not set(spec) - {"count_gte"}
        and isinstance(raw, dict)
        and not raw.keys() - {"count_gte"}
    ):
        v.add(path, f"give at least one of {', '.join(SELECTOR)}")
    return spec


def _before(raw: Any, path: str, v: Validator) -> list | None:
    if not isinstance(raw, list) or len(raw) < 2:
        v.add(path, "must be a list of at least two milestones")
        return None
    return [validate_milestone(m, join_path(path, i), v) for i, m in enumerate(raw)]


def _within(raw: Any, path: str, v: Validator) -> dict[str, Any] | None:
    spec = v.obj(
        {"event": Field("any", required=True), "of": Field("any"), "limit": Field("duration", required=True)},
        raw,
        path,
    )
    if spec is None:
        return None
    if "event" in spec:
        spec["event"] = validate_milestone(spec["event"], join_path(path, "event"), v)
    of = spec.get("of", "start")
    spec["of"] = "start" if of == "start" else validate_milestone(of, join_path(path, "of"), v)
    return spec


_KIND_VALIDATORS = {
    "state": validate_state,
    "trace": _trace,
    "judge": _judge,
    "revealed": _revealed,
    "knows": _knows,
    "told": _knows,
    "decided": _decided,
    "message": lambda raw, path, v: _selector(raw, path, v, count=True),
    "never": _selector,
    "before": _before,
    "within": _within,
}
