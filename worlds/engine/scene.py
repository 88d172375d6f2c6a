"""``load_scene(text, filename) -> Scene``: parse, validate (every problem at once), normalise.

Raises :class:`SceneInvalid` listing every problem as ``file:line: field.path: message``. The Scene
holds durations as ``timedelta``, the clock start as an aware datetime, and refs as the names they
resolve to (``"slack_support"``, facts as ``("laura", "beta_on")``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from . import tools as _tools  # noqa: F401 - registers every tool
from .checks import Check, validate_check, validate_milestone, validate_state
from .clock import DEFAULT_PER_CALL, DEFAULT_START, parse_start
from .loader import Loaded, load_tree
from .problems import Problems, SceneInvalid, join_path
from .refs import Namespace
from .schema import Field, RecordKind, Tool, UnknownTool, Validator, get_tool, json_type

__all__ = [
    "MAX_CHECKS",
    "MAX_RECORDS_PER_TOOL",
    "MAX_TRIALS",
    "Decision",
    "Fact",
    "Fault",
    "OtherTool",
    "Person",
    "Record",
    "Scene",
    "SceneInvalid",
    "load_scene",
]

MAX_CHECKS = 20
MAX_TRIALS = 10
MAX_RECORDS_PER_TOOL = 200
OTHER_TOOLS_KEY = "tools"

TOP = {
    "scene": Field("str", required=True),
    "description": Field("str"),
    "task": Field("str", required=True),
    "clock": Field("any"),
    "trials": Field("int", minimum=1, maximum=MAX_TRIALS),
    "pass_rate": Field("number", minimum=0, maximum=100),
    "min_valid": Field("int", minimum=1, maximum=MAX_TRIALS),
    "world": Field("any"),
    "people": Field("any"),
    "world_rules": Field("any"),
    "checks": Field("any"),
    "pass": Field("strs"),
    "judge": Field("object", schema={"model": Field("str", nonempty=True)}),
}
CLOCK = {"start": Field("str"), "per_call": Field("duration")}
FACT = {"says": Field("str", required=True), "asked_by": Field("strs"), "match": Field("strs")}
DECISION = {
    "options": Field("strs", required=True, nonempty=True),
    "choose": Field("str", required=True),
    "after": Field("facts"),
    "asked_by": Field("strs"),
    "says": Field("str"),
}
PERSON = {
    "slack": Field("ref", kinds=("slack.user",)),
    "github": Field("ref", kinds=("github.user",)),
    "listens": Field("refs", kinds=("slack.channel",)),
    "facts": Field("any"),
    "decisions": Field("any"),
    "reply_after": Field("duration"),
    "voice": Field("choice", choices=("llm",)),
    "persona": Field("str"),
}
FAULT = {
    "id": Field("str", required=True),
    "at": Field("duration"),
    "effects": Field("any"),
    "resolved_when": Field("any"),
    "on_resolve": Field("any"),
}
ANSWER = {
    "status": Field("int", minimum=100, maximum=599),
    "body": Field("any"),
    "headers": Field("map", item=Field("str")),
}
SLUG = re.compile(r"[a-z0-9][a-z0-9-]{0,99}")


@dataclass(frozen=True)
class Record:
    """A seed record: ``fields`` are normalised (refs → names, durations → timedelta)."""

    ref: str
    tool: str
    kind: str
    fields: dict[str, Any]
    line: int = 0


@dataclass(frozen=True)
class Fact:
    id: str
    says: str
    asked_by: tuple[str, ...] = ()
    match: tuple[str, ...] = ()


@dataclass(frozen=True)
class Decision:
    id: str
    options: tuple[str, ...]
    choose: str
    after: tuple[tuple[str, str], ...] = ()
    asked_by: tuple[str, ...] = ()
    says: str = ""


@dataclass(frozen=True)
class Person:
    ref: str
    slack: str | None = None
    github: str | None = None
    listens: tuple[str, ...] = ()
    facts: dict[str, Fact] = field(default_factory=dict)
    decisions: dict[str, Decision] = field(default_factory=dict)
    reply_after: timedelta | None = None  # None: the clock's per_call
    voice: str | None = None
    persona: str = ""


@dataclass(frozen=True)
class Fault:
    id: str
    at: timedelta
    effects: dict[str, dict[str, Any]]
    resolved_when: dict[str, Any] | None
    on_resolve: dict[str, dict[str, Any]]


@dataclass(frozen=True)
class OtherTool:
    """A declared other tool: ``answers`` maps ``"METHOD /path"`` globs to ``{status, body, headers}``."""

    name: str
    answers: dict[str, dict[str, Any]]


@dataclass(frozen=True)
class Scene:
    name: str
    task: str
    description: str
    start: datetime
    per_call: timedelta
    trials: int
    pass_rate: float
    min_valid: int
    judge_model: str | None
    records: dict[str, Record]  # every seed record by ref, nested ones (commits) included
    world: dict[str, dict[str, dict[str, Record]]]  # tool -> collection -> ref -> record
    other_tools: dict[str, OtherTool]
    people: dict[str, Person]
    faults: list[Fault]
    checks: list[Check]
    required: tuple[str, ...]  # the pass list (default: every check)
    file: str = "scene.yaml"

    @property
    def tools(self) -> list[str]:
        """The tools this scene uses (simulated first, then other tools), in scene order."""
        return [*self.world, *self.other_tools]


def load_scene(text: str, filename: str = "scene.yaml") -> Scene:
    """Parse and validate a YAML 1.2 or JSON scene. Raises SceneInvalid with every problem."""
    loaded = load_tree(text, filename)
    return _Build(loaded).scene()


class _Build:
    def __init__(self, loaded: Loaded) -> None:
        self.loaded = loaded
        self.problems = Problems(loaded.file, loaded.line)
        self.ns = Namespace()
        self.v = Validator(self.problems, self.ns)

    def add(self, path: str, message: str) -> None:
        self.problems.add(path, message)

    def object_of(self, what: str, raw: Any, path: str) -> bool:
        """Whether ``raw`` is an object (of ``what``); otherwise a problem on ``path`` says so."""
        if isinstance(raw, dict):
            return True
        self.add(path, f"must be an object of {what}, not {json_type(raw)}")
        return False

    # -- pass 1: every declared name --------------------------------------------------------------
    def declare(self, ref: str, kind: str, tool: str, path: str) -> None:
        earlier = self.ns.declare(ref, kind, tool, path)
        if earlier is not None:
            self.add(
                path,
                f"duplicate ref {ref} (first declared on line {self.loaded.line(earlier.path)}, "
                f"{earlier.path})",
            )

    def declare_all(self, data: dict[str, Any]) -> None:
        world = data.get("world")
        for tool_name, collections in world.items() if isinstance(world, dict) else ():
            if tool_name == OTHER_TOOLS_KEY or not isinstance(collections, dict):
                continue
            try:
                tool = get_tool(tool_name)
            except UnknownTool:
                continue
            for coll, records in collections.items():
                rk = tool.record_kind(coll)
                if rk is not None and isinstance(records, dict):
                    self._declare_records(tool, rk.kind, rk.fields, records, f"world.{tool_name}.{coll}")
        people = data.get("people")
        for ref, person in people.items() if isinstance(people, dict) else ():
            self.declare(ref, "person", "", join_path("people", ref))
            person = person if isinstance(person, dict) else {}
            facts, decisions = person.get("facts"), person.get("decisions")
            self.ns.facts[ref] = set(facts) if isinstance(facts, dict) else set()
            self.ns.decisions[ref] = {
                d: list(spec.get("options") or [])
                if isinstance(spec, dict) and isinstance(spec.get("options"), list)
                else []
                for d, spec in (decisions.items() if isinstance(decisions, dict) else ())
            }
        rules = data.get("world_rules")
        faults = rules.get("faults") if isinstance(rules, dict) else None
        for i, fault in enumerate(faults if isinstance(faults, list) else ()):
            if isinstance(fault, dict) and isinstance(fault.get("id"), str):
                self.declare(fault["id"], "fault", "", f"world_rules.faults[{i}].id")

    def _declare_records(self, tool: Tool, kind: str, fields: dict, records: dict, path: str) -> None:
        for ref, record in records.items():
            rpath = join_path(path, ref)
            self.declare(ref, kind, tool.name, rpath)
            if not isinstance(record, dict):
                continue
            for key, spec in fields.items():
                if spec.type == "records" and isinstance(record.get(key), dict):
                    self._declare_records(tool, spec.record, spec.schema, record[key], join_path(rpath, key))

    # -- pass 2: every field ----------------------------------------------------------------------
    def scene(self) -> Scene:
        data = self.loaded.data
        if not isinstance(data, dict):
            self.add(
                "", f"a scene must be an object (scene, task, world, checks, ...), not {json_type(data)}"
            )
            self.problems.raise_if_any()
        self.declare_all(data)
        top = self.v.obj(TOP, data, "") or {}
        name = top.get("scene")
        if isinstance(name, str) and not SLUG.fullmatch(name):
            self.add("scene", f"must be a slug (lowercase letters, digits and -), not {name!r}")
        start, per_call = self.clock(data.get("clock"))
        records: dict[str, Record] = {}
        world, others = self.world(data.get("world"), records)
        people = self.people(data.get("people"))
        faults = self.faults(data.get("world_rules"))
        checks = self.checks(data.get("checks"))
        required = self.required(top.get("pass"), data.get("pass"), checks)
        self.problems.raise_if_any()
        return Scene(
            name=name,
            task=top["task"],
            description=top.get("description") or "",
            start=start,
            per_call=per_call,
            trials=top.get("trials") or 1,
            pass_rate=float(top.get("pass_rate", 100)),
            min_valid=top.get("min_valid") or 1,
            judge_model=(top.get("judge") or {}).get("model"),
            records=records,
            world=world,
            other_tools=others,
            people=people,
            faults=faults,
            checks=checks,
            required=required,
            file=self.loaded.file,
        )

    def clock(self, raw: Any) -> tuple[datetime, timedelta]:
        if raw is None:
            return DEFAULT_START, DEFAULT_PER_CALL
        spec = self.v.obj(CLOCK, raw, "clock") or {}
        start = DEFAULT_START
        if spec.get("start") is not None:
            try:
                start = parse_start(spec["start"])
            except ValueError as exc:
                self.add("clock.start", str(exc))
        per_call = spec.get("per_call") or DEFAULT_PER_CALL
        if per_call <= timedelta(0):
            self.add("clock.per_call", "must be more than 0s")
        return start, per_call

    def world(self, raw: Any, records: dict[str, Record]) -> tuple[dict, dict]:
        world: dict[str, dict[str, dict[str, Record]]] = {}
        others: dict[str, OtherTool] = {}
        if raw is None:
            return world, others
        if not self.object_of("tools", raw, "world"):
            return world, others
        for tool_name, collections in raw.items():
            path = join_path("world", tool_name)
            if tool_name == OTHER_TOOLS_KEY:
                others = self.other_tools(collections, path)
                continue
            try:
                tool = get_tool(tool_name)
            except UnknownTool as exc:
                self.add(path, f"{exc.message}; declare other tools under world.tools")
                continue
            if not self.object_of("record maps", collections, path):
                continue
            world[tool_name] = self.tool(tool, collections, path, records)
        return world, others

    def tool(self, tool: Tool, collections: dict, path: str, records: dict[str, Record]) -> dict:
        out: dict[str, dict[str, Record]] = {}
        count = 0
        for coll, raw_records in collections.items():
            cpath = join_path(path, coll)
            rk = tool.record_kind(coll)
            if rk is None:
                allowed = ", ".join(r.collection for r in tool.records)
                self.add(cpath, f"unknown record kind for {tool.name}; allowed: {allowed}")
                continue
            if not self.object_of("records by ref", raw_records, cpath):
                continue
            out[coll] = {}
            for ref, raw in raw_records.items():
                count += 1 + self._nested_count(rk, raw)
                record = self.record(tool, rk, ref, raw, join_path(cpath, ref), records)
                if record is not None:
                    out[coll][ref] = record
        if count > MAX_RECORDS_PER_TOOL:
            self.add(path, f"at most {MAX_RECORDS_PER_TOOL} records per tool, not {count}")
        if tool.has_bot and isinstance(collections.get("users"), dict) and collections["users"]:
            bots = [
                r for r, u in collections["users"].items() if isinstance(u, dict) and u.get("bot") is True
            ]
            if len(bots) != 1:
                found = f"found {len(bots)} ({', '.join(bots)})" if bots else "found none"
                self.add(
                    join_path(path, "users"),
                    f"exactly one user must have bot: true (the agent's own account); {found}",
                )
        return out

    @staticmethod
    def _nested_count(rk: RecordKind, raw: Any) -> int:
        if not isinstance(raw, dict):
            return 0
        return sum(
            len(raw[k]) for k, f in rk.fields.items() if f.type == "records" and isinstance(raw.get(k), dict)
        )

    def record(
        self, tool: Tool, rk: RecordKind, ref: str, raw: Any, path: str, records: dict
    ) -> Record | None:
        fields = self.v.obj(rk.fields, raw, path, what=f"a {tool.name} {rk.kind}")
        if fields is None:
            return None
        if rk.cleaner is not None:
            rk.cleaner(fields, path, self.v, raw)
        for key, spec in rk.fields.items():  # nested record maps (a repo's commits) are records too
            if spec.type == "records" and isinstance(fields.get(key), dict):
                for sub_ref, sub in fields[key].items():
                    if isinstance(sub, dict):
                        sub_path = join_path(join_path(path, key), sub_ref)
                        records[sub_ref] = Record(
                            sub_ref, tool.name, spec.record, sub, self.loaded.line(sub_path)
                        )
        record = Record(ref, tool.name, rk.kind, fields, self.loaded.line(path))
        records[ref] = record
        return record

    def other_tools(self, raw: Any, path: str) -> dict[str, OtherTool]:
        if not self.object_of("other tools by name", raw, path):
            return {}
        out = {}
        for name, spec in raw.items():
            tpath = join_path(path, name)
            if not re.fullmatch(r"[a-z][a-z0-9_-]*", name):
                self.add(tpath, "a tool name is lowercase letters, digits, _ and -")
            try:
                get_tool(name)
                self.add(tpath, f"{name} is a simulated tool; declare it under world.{name}")
                continue
            except UnknownTool:
                pass
            spec = (
                self.v.obj(
                    {"answers": Field("map", item=Field("object", schema=ANSWER))},
                    spec if spec is not None else {},
                    tpath,
                )
                or {}
            )
            answers = spec.get("answers") or {}
            for pattern in answers:
                if not re.fullmatch(r"(\*|[A-Za-z]+) (\*|/\S*)", pattern):
                    self.add(
                        join_path(join_path(tpath, "answers"), pattern),
                        'an answer key is "<METHOD> <PATH>", e.g. "GET /crm/customers/*"',
                    )
            out[name] = OtherTool(name, {k: dict(v or {}) for k, v in answers.items()})
        return out

    def people(self, raw: Any) -> dict[str, Person]:
        if raw is None:
            return {}
        if not self.object_of("people by ref", raw, "people"):
            return {}
        out = {}
        for ref, spec in raw.items():
            path = join_path("people", ref)
            fields = self.v.obj(PERSON, spec, path, what="a person")
            if fields is None:
                continue
            if not fields.get("slack") and "slack" not in (spec or {}):
                self.add(path, "slack is required (a person's Slack user)")
            facts = {}
            for fid, fraw in self._map(fields.get("facts"), join_path(path, "facts")).items():
                f = self.v.obj(FACT, fraw, join_path(join_path(path, "facts"), fid), what="a fact")
                if f is not None and f.get("says") is not None:
                    facts[fid] = Fact(
                        fid,
                        f["says"],
                        tuple(x for x in f.get("asked_by") or () if x),
                        tuple(x for x in f.get("match") or () if x),
                    )
            decisions = {}
            for did, draw in self._map(fields.get("decisions"), join_path(path, "decisions")).items():
                dpath = join_path(join_path(path, "decisions"), did)
                d = self.v.obj(DECISION, draw, dpath, what="a decision")
                if d is None or not d.get("options") or d.get("choose") is None:
                    continue
                if d["choose"] not in d["options"]:
                    self.add(
                        join_path(dpath, "choose"),
                        f"{d['choose']!r} is not one of options ({', '.join(map(str, d['options']))})",
                    )
                decisions[did] = Decision(
                    did,
                    tuple(d["options"]),
                    d["choose"],
                    tuple(a for a in d.get("after") or () if a),
                    tuple(d.get("asked_by") or ()),
                    d.get("says") or "",
                )
            out[ref] = Person(
                ref,
                fields.get("slack"),
                fields.get("github"),
                tuple(x for x in fields.get("listens") or () if x),
                facts,
                decisions,
                fields.get("reply_after"),
                fields.get("voice"),
                fields.get("persona") or "",
            )
        return out

    def _map(self, value: Any, path: str) -> dict:
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.add(path, f"must be an object by id, not {json_type(value)}")
            return {}
        return value

    def faults(self, raw: Any) -> list[Fault]:
        if raw is None:
            return []
        rules = self.v.obj({"faults": Field("any")}, raw, "world_rules") or {}
        faults_raw = rules.get("faults")
        if faults_raw is None:
            return []
        if not isinstance(faults_raw, list):
            self.add("world_rules.faults", f"must be a list of faults, not {json_type(faults_raw)}")
            return []
        out = []
        for i, fraw in enumerate(faults_raw):
            path = f"world_rules.faults[{i}]"
            f = self.v.obj(FAULT, fraw, path, what="a fault")
            if f is None:
                continue
            effects = self.effects(f.get("effects"), join_path(path, "effects"))
            on_resolve = self.effects(f.get("on_resolve"), join_path(path, "on_resolve"))
            when = None
            if f.get("resolved_when") is not None:
                when = self.predicate(f["resolved_when"], join_path(path, "resolved_when"))
            if isinstance(f.get("id"), str):
                out.append(Fault(f["id"], f.get("at") or timedelta(0), effects, when, on_resolve))
        return out

    def predicate(self, raw: Any, path: str) -> dict[str, Any] | None:
        """Any state check object, or a milestone."""
        if (
            isinstance(raw, dict)
            and len(raw) == 1
            and next(iter(raw))
            in ("called", "message", "decided", "knows", "told", "revealed", "issue_labeled")
        ):
            return validate_milestone(raw, path, self.v)
        return validate_state(raw, path, self.v)

    def effects(self, raw: Any, path: str) -> dict[str, dict[str, Any]]:
        if raw is None:
            return {}
        if not self.object_of("effects", raw, path):
            return {}
        out = {}
        for name, spec in raw.items():
            epath = join_path(path, name)
            tool_name, _, effect = name.partition(".")
            try:
                schema = get_tool(tool_name).effects.get(effect)
            except UnknownTool:
                schema = None
            if schema is None:
                self.add(epath, "unknown effect; one of datadog.monitor, pagerduty.incident, slack.message")
                continue
            value = self.v.obj(schema, spec, epath, what=name)
            if value is not None:
                out[name] = value
            if name == "slack.message" and isinstance(spec, dict) and ("channel" in spec) == ("dm" in spec):
                self.add(epath, "give exactly one of channel or dm")
        return out

    def checks(self, raw: Any) -> list[Check]:
        if raw is None:
            return []
        if not isinstance(raw, list):
            self.add("checks", f"must be a list of checks, not {json_type(raw)}")
            return []
        if len(raw) > MAX_CHECKS:
            self.add("checks", f"at most {MAX_CHECKS} checks per scene, not {len(raw)}")
        out, seen = [], {}
        for i, item in enumerate(raw):
            path = f"checks[{i}]"
            check = validate_check(item, path, self.v)
            if check is None:
                continue
            if check.id in seen:
                self.add(
                    join_path(path, "id"),
                    f"duplicate check id {check.id!r} (first at checks[{seen[check.id]}])",
                )
                continue
            seen[check.id] = i
            out.append(Check(check.id, check.kind, check.spec, self.loaded.line(path)))
        return out

    def required(self, ids: list | None, raw: Any, checks: list[Check]) -> tuple[str, ...]:
        if raw is None:
            return tuple(c.id for c in checks)
        known = {c.id for c in checks}
        for i, check_id in enumerate(ids or ()):
            if isinstance(check_id, str) and check_id not in known and known is not None:
                self.add(f"pass[{i}]", f"names no check: {check_id!r}")
        return tuple(x for x in ids or () if isinstance(x, str))
