"""Forms of the check library and the test builder.

They parse what the browser sends into the shapes checks.services takes; every rule (required
fields, limits, a kind's config schema) is checked by the services, so the page and the API agree.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django import forms
from django.db import models
from django.forms.fields import InvalidJSONInput

from checks import kinds
from checks.kinds import FieldSpec, Kind
from core.forms import ColumnChoiceField
from core.ids import id_from_text
from core.jsontext import MAX_JSON_DEPTH, json_text_problem

TOO_DEEP = f"is nested more than {MAX_JSON_DEPTH} levels deep"


def parse_json_text(text: str) -> Any:
    """JSON typed into a form, held to the API's rules for stored JSON. Raises ValueError saying why."""
    try:
        value = json.loads(text)
    except RecursionError:  # json gives up long before a 5,000-deep document is read
        raise ValueError(TOO_DEEP) from None
    except ValueError as exc:
        raise ValueError(f"is not valid JSON: {exc}") from None
    problem = json_text_problem(value)
    if problem:
        raise ValueError(problem)
    return value


class StorableJSONFormField(forms.JSONField):
    """forms.JSONField with the API's rules (NUL characters, lone surrogates, depth), never a 500."""

    def to_python(self, value):
        try:
            value = super().to_python(value)
        except RecursionError:
            raise forms.ValidationError(TOO_DEEP) from None
        problem = json_text_problem(value)
        if problem:
            raise forms.ValidationError(problem)
        return value

    def bound_data(self, data, initial):
        try:
            return super().bound_data(data, initial)
        except RecursionError:  # shown back as the text that was typed
            return InvalidJSONInput(data)

# ---------------------------------------------------------------- checks


class CheckForm(forms.Form):
    """Name and kind; the kind's own config fields come from CheckConfigForm."""

    name = forms.CharField(
        label="Name",
        required=False,
        max_length=200,
        widget=forms.TextInput(attrs={"placeholder": "e.g. Looks up the order"}),
    )
    kind = forms.ChoiceField(label="Kind", choices=())

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["kind"].choices = kinds.kind_choices()


def humanise(value: str) -> str:
    return value.replace("_", " ")


def _item_schema(kind: Kind, name: str) -> dict:
    """The JSON schema of one item of list field `name` (an empty dict when unknown)."""
    prop = (kind.json_schema.get("properties") or {}).get(name) or {}
    if "items" in prop:
        return prop["items"] or {}
    for option in prop.get("oneOf", []) + prop.get("anyOf", []):
        if isinstance(option, Mapping) and option.get("type") == "array":
            return option.get("items") or {}
    return {}


@dataclass
class RowColumn:
    name: str
    label: str
    choices: tuple[str, ...] = ()
    help: str = ""


@dataclass
class ConfigField:
    """One config field as the template draws it."""

    spec: FieldSpec
    widget: str  # text | textarea | checkbox | number | select | lines | rows | json
    html_name: str
    value: Any = ""
    choices: list[tuple[str, str]] = field(default_factory=list)
    columns: list[RowColumn] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"id_{self.html_name}"

    @property
    def label(self) -> str:
        return self.spec.label

    @property
    def help(self) -> str:
        return self.spec.help

    @property
    def required(self) -> bool:
        return self.spec.required

    @property
    def row_cells(self) -> list[list[tuple[RowColumn, Any]]]:
        return [[(c, row.get(c.name, "")) for c in self.columns] for row in self.rows]


def _display_json_value(value: Any) -> str:
    """A row value as text that parses back to the same JSON value (see _parse_json_value)."""
    if value is None:
        return ""
    if isinstance(value, str):
        try:
            json.loads(value)
        except (ValueError, RecursionError):
            return value
        return json.dumps(value)  # "42" stays a string: shown quoted
    return json.dumps(value)


def _parse_json_value(text: str) -> Any:
    """Text typed in a row's value box: JSON if it parses (42, true, "42", [1]), else the text itself."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError(TOO_DEEP) from None
    except ValueError:
        return text


class CheckConfigForm:
    """The config fields of one kind, built from its FieldSpecs, bound to POST data or a config.

    ``action`` edits list rows without saving: ``add:<field>`` or ``remove:<field>:<index>``.
    """

    prefix = "cfg"

    def __init__(
        self, kind: Kind, data: Mapping | None = None, initial: Mapping | None = None, action: str = ""
    ) -> None:
        self.kind = kind
        self.data = data
        self.errors: list[str] = []  # about the config as a whole
        self.fields: list[ConfigField] = []
        initial = dict(initial if initial is not None else kind.default_config())
        for spec in kind.fields:
            self.fields.append(self._build(spec, initial.get(spec.name, spec.default)))
        if action:
            self._apply(action)

    # -- building

    def _name(self, spec: FieldSpec, *parts: object) -> str:
        return "-".join([self.prefix, spec.name, *map(str, parts)])

    def _widget(self, spec: FieldSpec) -> tuple[str, list[RowColumn]]:
        if spec.type == "list":
            item = _item_schema(self.kind, spec.name)
            if item.get("type") == "object" and item.get("properties"):
                columns = [
                    RowColumn(
                        name=key,
                        label=key.replace("_", " ").capitalize(),
                        choices=tuple(prop.get("enum") or ()),
                        help=prop.get("description", ""),
                    )
                    for key, prop in item["properties"].items()
                ]
                return "rows", columns
            if item.get("type") == "string" or not item:
                return "lines", []
            return "json", []
        return {
            "text": "text",
            "textarea": "textarea",
            "bool": "checkbox",
            "int": "number",
            "choice": "select",
            "json": "json",
        }[spec.type], []

    def _build(self, spec: FieldSpec, value: Any) -> ConfigField:
        widget, columns = self._widget(spec)
        cf = ConfigField(spec=spec, widget=widget, html_name=self._name(spec), columns=columns)
        if widget == "select":
            blank = [] if spec.required or spec.default is not None else [("", "—")]
            cf.choices = blank + [(c, humanise(c)) for c in spec.choices]
        bound = self.data is not None
        if widget == "rows":
            cf.rows = (
                self._bound_rows(cf)
                if bound
                else [
                    {
                        c.name: (
                            _display_json_value(row.get(c.name))
                            if c.name == "value"
                            else (row.get(c.name) or "")
                        )
                        for c in columns
                    }
                    for row in (value or [])
                    if isinstance(row, Mapping)
                ]
            )
            return cf
        if bound:
            if widget == "checkbox":
                cf.value = cf.html_name in self.data
            else:
                cf.value = self.data.get(cf.html_name, "")
            return cf
        if widget == "checkbox":
            cf.value = bool(value)
        elif widget == "lines":
            cf.value = "\n".join(value) if isinstance(value, list) else (value or "")
        elif widget == "json":
            cf.value = "" if value is None else json.dumps(value, indent=2, ensure_ascii=False)
        else:
            cf.value = "" if value is None else str(value)
        return cf

    def _bound_rows(self, cf: ConfigField) -> list[dict[str, Any]]:
        try:
            count = min(int(self.data.get(f"{cf.html_name}-count", 0)), 50)
        except (TypeError, ValueError):
            count = 0
        rows = []
        for index in range(count):
            rows.append({c.name: self.data.get(f"{cf.html_name}-{index}-{c.name}", "") for c in cf.columns})
        return rows

    def _apply(self, action: str) -> None:
        verb, _, rest = action.partition(":")
        name, _, index = rest.partition(":")
        for cf in self.fields:
            if cf.spec.name != name or cf.widget != "rows":
                continue
            if verb == "add" and len(cf.rows) < 20:
                cf.rows.append({c.name: (c.choices[0] if c.choices else "") for c in cf.columns})
            elif verb == "remove" and index.isdigit() and int(index) < len(cf.rows):
                del cf.rows[int(index)]

    # -- parsing

    def parse(self) -> dict[str, Any]:
        """The raw config the services validate. Values that do not parse are left out and noted."""
        config: dict[str, Any] = {}
        for cf in self.fields:
            try:
                value = self._parse_field(cf)
            except ValueError as exc:
                cf.errors.append(str(exc))
                continue
            problem = json_text_problem(value)  # what the API refuses to store, refused here too
            if problem:
                cf.errors.append(problem)
                continue
            if value is not None:
                config[cf.spec.name] = value
        return config

    def _parse_field(self, cf: ConfigField) -> Any:
        if cf.widget == "checkbox":
            return bool(cf.value)
        if cf.widget == "rows":
            rows = []
            for row in cf.rows:
                if not any(str(row.get(c.name, "")).strip() for c in cf.columns if not c.choices):
                    continue  # an untouched empty row
                item = {}
                for c in cf.columns:
                    text = str(row.get(c.name, ""))
                    if c.name == "value":
                        if text.strip():
                            item["value"] = _parse_json_value(text)
                    else:
                        item[c.name] = text.strip()
                rows.append(item)
            return rows or None
        text = str(cf.value)
        if not text.strip():
            return None
        if cf.widget == "number":
            try:
                return int(text.strip())
            except ValueError:
                raise ValueError("must be a whole number") from None
        if cf.widget == "lines":
            return [line.strip() for line in text.splitlines() if line.strip()]
        if cf.widget == "json":
            return parse_json_text(text)
        return text

    # -- errors from the services

    def add_errors(self, errors: Mapping[str, str]) -> None:
        """Attach `config.<field>[.<row>.<column>]` messages to their fields; the rest to the form."""
        by_name = {cf.spec.name: cf for cf in self.fields}
        for key, message in errors.items():
            path = key.split(".")
            if path[0] == "config":
                path = path[1:]
            cf = by_name.get(path[0]) if path else None
            if cf is None:
                self.errors.append(message if not path else f"{'.'.join(path)}: {message}")
            elif cf.errors:
                continue  # a parse error already explains this field
            elif len(path) >= 3 and path[1].isdigit():
                cf.errors.append(f"row {int(path[1]) + 1}, {humanise(path[2])}: {message}")
            elif len(path) == 2 and path[1].isdigit():
                cf.errors.append(f"item {int(path[1]) + 1}: {message}")
            else:
                cf.errors.append(message)

    @property
    def has_errors(self) -> bool:
        return bool(self.errors) or any(cf.errors for cf in self.fields)


# ---------------------------------------------------------------- the team's check library


class CheckSearchForm(forms.Form):
    """The cross-agent library's search: text (check name, agent name or kind), a kind, an agent."""

    q = forms.CharField(
        label="Search", required=False, max_length=200, help_text="A check's name, its agent or its kind.",
        widget=forms.TextInput(attrs={"type": "search", "placeholder": "e.g. refund, latency, Support bot"}),
        error_messages={
            "max_length": "at most 200 characters (it has %(show_value)d)",
            "null_characters_not_allowed": "must not contain NUL characters (\\u0000)",
        },
    )
    kind = forms.ChoiceField(label="Kind", required=False)
    agent = ColumnChoiceField(label="Agent", required=False, queryset=None, empty_label="All agents")

    def __init__(self, *args, agents, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["kind"].choices = [("", "All kinds"), *kinds.kind_choices()]
        self.fields["agent"].queryset = agents

    def clean_q(self) -> str:
        text = self.cleaned_data["q"]
        problem = json_text_problem(text)
        if problem:
            raise forms.ValidationError(problem)
        return text

    def filter(self, checks):
        """`checks` narrowed by the valid form's fields (call is_valid() first)."""
        data = self.cleaned_data
        if data.get("agent"):
            checks = checks.filter(agent=data["agent"])
        if data.get("kind"):
            checks = checks.filter(kind=data["kind"])
        text = data.get("q", "")
        if text:
            folded = text.casefold()
            kind_names = [n for n, label in kinds.kind_choices() if folded in f"{n} {label}".casefold()]
            checks = checks.filter(
                models.Q(name__icontains=text)
                | models.Q(agent__name__icontains=text)
                | models.Q(kind__in=kind_names)
            )
        return checks


# ---------------------------------------------------------------- test sets


class NewTestSetForm(forms.Form):
    name = forms.CharField(label="Name", required=False, max_length=200)
    description = forms.CharField(
        label="Description", required=False, widget=forms.Textarea(attrs={"rows": 2})
    )


# ---------------------------------------------------------------- the test builder

MESSAGE_ROLES = ("user", "assistant", "system", "tool")


@dataclass
class MessageRow:
    role: str = "user"
    content: str = ""


@dataclass
class ScenarioRow:
    name: str = ""
    mode: str = "single"  # single input | chat transcript
    input: str = ""
    messages: list[MessageRow] = field(default_factory=list)
    metadata: str = ""  # JSON text, optional
    errors: dict[str, list[str]] = field(default_factory=dict)
    focus: str = ""  # "input" or "message-<j>": what to focus after an HTMX swap

    def error(self, where: str, message: str) -> None:
        self.errors.setdefault(where, []).append(message)

    @property
    def head_errors(self) -> list[str]:
        return self.errors.get("", [])

    @property
    def single(self) -> bool:
        return self.mode != "chat"


@dataclass
class CheckRow:
    check_id: int
    advisory: bool = False
    check: Any = None  # the library Check, resolved by the view for display
    errors: list[str] = field(default_factory=list)


def int_or_text(value: Any) -> Any:
    text = str(value if value is not None else "").strip()
    return int(text) if text.lstrip("-").isdigit() else text


class TestBuilder:
    """What the test builder shows and sends: scenarios, attached checks and thresholds.

    Built from a TestVersion (edit), from defaults (new) or from POST data (every HTMX round trip
    and the final save). ``apply(action)`` edits it in place without saving anything.
    """


    SCENARIOS, SCENES = "scenarios", "scenes"

    def __init__(self) -> None:
        self.name = ""
        # A test holds scenarios or scenes (checks/scene_mode.py); a test being edited keeps its kind.
        self.mode = self.SCENARIOS
        self.scene_ids: list[int] = []  # library scenes picked, in order
        self.scene_source = ""  # a scene file pasted (or uploaded) to add to the library
        self.scenarios: list[ScenarioRow] = []
        self.checks: list[CheckRow] = []
        self.samples_per_scenario: str = "1"
        self.min_valid_per_scenario: str = "1"
        self.required_pass_rate: str = "100"
        self.errors: dict[str, list[str]] = {}

    # -- construction

    @classmethod
    def new(cls) -> TestBuilder:
        builder = cls()
        builder.scenarios.append(ScenarioRow())
        return builder

    @classmethod
    def from_version(cls, version, scene_ids: list[int] = ()) -> TestBuilder:
        builder = cls()
        builder.name = version.name
        if scene_ids:
            builder.mode, builder.scene_ids = cls.SCENES, list(scene_ids)
        for raw in [] if scene_ids else version.scenarios:
            messages = raw.get("messages") or []
            single = messages == [{"role": "user", "content": raw.get("input", "")}] or not messages
            builder.scenarios.append(
                ScenarioRow(
                    name=raw.get("name", ""),
                    mode="single" if single else "chat",
                    input=raw.get("input", ""),
                    messages=[MessageRow(m.get("role", "user"), m.get("content", "")) for m in messages],
                    metadata=json.dumps(raw["metadata"], indent=2, ensure_ascii=False)
                    if raw.get("metadata")
                    else "",
                )
            )
        for attached in version.attached_checks.all():
            builder.checks.append(
                CheckRow(
                    check_id=attached.library_check_id,
                    advisory=not attached.required,
                    check=attached.library_check,
                )
            )
        builder.samples_per_scenario = str(version.samples_per_scenario)
        builder.min_valid_per_scenario = str(version.min_valid_per_scenario)
        builder.required_pass_rate = str(version.required_pass_rate)
        return builder

    @classmethod
    def from_post(cls, data: Mapping) -> TestBuilder:
        builder = cls()
        builder.name = data.get("name", "")
        builder.mode = cls.SCENES if data.get("mode") == cls.SCENES else cls.SCENARIOS
        picked = data.getlist("scenes") if hasattr(data, "getlist") else data.get("scenes") or []
        for raw in picked[:100]:
            raw = str(raw)
            scene_id = id_from_text(raw)
            if scene_id is not None and scene_id not in builder.scene_ids:
                builder.scene_ids.append(scene_id)
        builder.scene_source = data.get("source", "")
        builder.samples_per_scenario = data.get("samples_per_scenario", "")
        builder.min_valid_per_scenario = data.get("min_valid_per_scenario", "")
        builder.required_pass_rate = data.get("required_pass_rate", "")
        for i in range(_bounded(data.get("scenario_count"), 50)):
            p = f"s-{i}-"
            row = ScenarioRow(
                name=data.get(p + "name", ""),
                mode="chat" if data.get(p + "mode") == "chat" else "single",
                input=data.get(p + "input", ""),
                metadata=data.get(p + "metadata", ""),
            )
            for j in range(_bounded(data.get(p + "msg_count"), 100)):
                role = data.get(f"{p}m-{j}-role", "user")
                row.messages.append(
                    MessageRow(role if role in MESSAGE_ROLES else "user", data.get(f"{p}m-{j}-content", ""))
                )
            # Switching mode carries the text over: the single input becomes the first user message.
            if row.mode == "chat" and not row.messages:
                row.messages.append(MessageRow("user", row.input))
            if row.mode == "single" and not row.input.strip():
                row.input = next((m.content for m in reversed(row.messages) if m.role == "user"), "")
            builder.scenarios.append(row)
        for k in range(_bounded(data.get("check_count"), 50)):
            raw_id = str(data.get(f"c-{k}-id", ""))
            if raw_id.isdigit():
                builder.checks.append(CheckRow(check_id=int(raw_id), advisory=f"c-{k}-advisory" in data))
        return builder

    # -- in-place edits (HTMX round trips)

    def apply(self, action: str, data: Mapping, limits) -> None:
        verb, _, rest = action.partition(":")
        args = [int(a) for a in rest.split(":") if a.isdigit()]
        if verb == "add_scenario" and len(self.scenarios) < limits.scenarios:
            self.scenarios.append(ScenarioRow(focus="input"))
        elif verb == "remove_scenario" and args and args[0] < len(self.scenarios):
            del self.scenarios[args[0]]
        elif verb == "add_message" and args and args[0] < len(self.scenarios):
            row = self.scenarios[args[0]]
            last = row.messages[-1].role if row.messages else "assistant"
            row.messages.append(MessageRow("assistant" if last == "user" else "user", ""))
            row.focus = f"message-{len(row.messages) - 1}"
        elif verb == "remove_message" and len(args) == 2 and args[0] < len(self.scenarios):
            messages = self.scenarios[args[0]].messages
            if args[1] < len(messages) and len(messages) > 1:
                del messages[args[1]]
        elif verb == "add_check":
            raw = str(data.get("add_check", ""))
            if (
                raw.isdigit()
                and all(c.check_id != int(raw) for c in self.checks)
                and len(self.checks) < limits.checks
            ):
                self.checks.append(CheckRow(check_id=int(raw), advisory="add_check_advisory" in data))
        elif verb == "remove_check" and args and args[0] < len(self.checks):
            del self.checks[args[0]]

    # -- to the services

    def parse_scenarios(self) -> list[dict[str, Any]]:
        """Scenarios as checks.services.normalise_scenarios takes them. Metadata that does not parse and
        text the API would refuse to store (json_text_problem) are noted on their fields."""
        result = []
        for row in self.scenarios:
            raw: dict[str, Any] = {"name": row.name.strip()}
            _screen(row.name, lambda problem, row=row: row.error("name", problem))
            if row.mode == "chat":
                raw["messages"] = [{"role": m.role, "content": m.content} for m in row.messages]
                for j, m in enumerate(row.messages):
                    _screen(m.content, lambda p, row=row, j=j: row.error("messages", f"message {j + 1}: {p}"))
            else:
                raw["input"] = row.input
                _screen(row.input, lambda problem, row=row: row.error("input", problem))
            if row.metadata.strip():
                try:
                    raw["metadata"] = parse_json_text(row.metadata)
                except ValueError as exc:
                    row.error("metadata", str(exc))
            result.append(raw)
        return result

    @property
    def scenes(self) -> bool:
        return self.mode == self.SCENES

    @property
    def item_count(self) -> int:
        """Scenarios, or scenes (a pasted file counts: saving attaches it)."""
        if self.scenes:
            return len(self.scene_ids) + (1 if self.scene_source.strip() else 0)
        return len(self.scenarios)

    def service_kwargs(self) -> dict[str, Any]:
        _screen(self.name, lambda problem: self.errors.setdefault("name", []).append(problem))
        return {
            "name": self.name,
            "scenarios": [] if self.scenes else self.parse_scenarios(),
            "checks": [{"check": c.check_id, "required": not c.advisory} for c in self.checks],
            "samples_per_scenario": int_or_text(self.samples_per_scenario),
            "min_valid_per_scenario": int_or_text(self.min_valid_per_scenario),
            "required_pass_rate": int_or_text(self.required_pass_rate),
        }

    def add_errors(self, errors: Mapping[str, str]) -> None:
        """Attach a service's messages (`scenarios.1.messages.0.role`, `checks.0.check`, ...) to rows.

        A field that already shows a problem found while parsing keeps only that one."""
        for key, message in errors.items():
            path = key.split(".")
            if (
                path[0] == "scenarios"
                and len(path) >= 2
                and path[1].isdigit()
                and int(path[1]) < len(self.scenarios)
            ):
                row = self.scenarios[int(path[1])]
                where = path[2] if len(path) > 2 else ""
                if where in row.errors:
                    continue
                if where == "messages" and len(path) > 3 and path[3].isdigit():
                    message = f"message {int(path[3]) + 1}{' ' + path[4] if len(path) > 4 else ''}: {message}"
                row.error(where, message)
            elif (
                path[0] == "checks"
                and len(path) >= 2
                and path[1].isdigit()
                and int(path[1]) < len(self.checks)
            ):
                self.checks[int(path[1])].errors.append(message)
            elif path[0] not in self.errors or path[0] == "__all__":
                self.errors.setdefault(path[0] if path[0] != "__all__" else "", []).append(message)

    @property
    def has_errors(self) -> bool:
        return (
            bool(self.errors) or any(r.errors for r in self.scenarios) or any(c.errors for c in self.checks)
        )

    @property
    def top_errors(self) -> list[str]:
        return self.errors.get("", [])

    @property
    def attached_ids(self) -> set[int]:
        return {c.check_id for c in self.checks}


def _screen(text: str, report) -> None:
    """Call `report(problem)` if the API would refuse to store `text` (a NUL character, ...)."""
    problem = json_text_problem(text)
    if problem:
        report(problem)


def _bounded(value: Any, limit: int) -> int:
    try:
        return max(0, min(int(value), limit))
    except (TypeError, ValueError):
        return 0
