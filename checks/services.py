"""Every write to the check library and to tests. Versions are created here and nowhere else."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from agents.models import Agent
from checks import kinds
from checks.models import Check, CheckVersion, Test, TestCheck, TestSet, TestVersion, scenario_name
from core.errors import Conflict, ValidationFailed
from core.ids import MAX_ID
from teams import access

MESSAGE_ROLES = ("system", "user", "assistant", "tool")


@dataclass(frozen=True)
class Limits:
    scenarios: int
    checks: int
    additional_checks: int
    samples_per_run: int

    @classmethod
    def current(cls) -> Limits:
        return cls(
            scenarios=settings.EVALCONSOLE_MAX_SCENARIOS,
            checks=settings.EVALCONSOLE_MAX_CHECKS,
            additional_checks=settings.EVALCONSOLE_MAX_ADDITIONAL_CHECKS,
            samples_per_run=settings.EVALCONSOLE_MAX_SAMPLES_PER_RUN,
        )


# ---------------------------------------------------------------- checks


def validate_check(*, name: str, kind: str, config: Mapping | None) -> tuple[str, str, dict]:
    """Return (name, kind, normalised config) or raise ValidationFailed naming `name`, `kind` or
    `config.*`."""
    errors: dict[str, str] = {}
    name = (name or "").strip()
    if not name:
        errors["name"] = "a check needs a name"
    elif len(name) > 200:
        errors["name"] = "at most 200 characters"
    try:
        kind_obj = kinds.get_kind(kind)
    except KeyError:
        choices = ", ".join(k.name for k in kinds.all_kinds())
        errors["kind"] = f"unknown kind {kind!r}; choose one of {choices}"
        raise ValidationFailed(errors) from None
    if config is not None and not isinstance(config, Mapping):
        errors["config"] = "must be an object"
        raise ValidationFailed(errors)
    try:
        normalised = kind_obj.validate_config(dict(config or {}))
    except kinds.ConfigError as exc:
        errors.update(
            {
                f"config.{field}" if field and field != "config" else "config": msg
                for field, msg in exc.errors.items()
            }
        )
    if errors:
        raise ValidationFailed(errors)
    return name, kind, normalised


def create_check(*, agent: Agent, by, name: str, kind: str, config: Mapping | None = None) -> Check:
    """Add a check to an agent's library with version 1."""
    access.require(by, access.CREATE, Check, team=agent.team)
    name, kind, config = validate_check(name=name, kind=kind, config=config)
    with transaction.atomic():
        check = Check.objects.create(agent=agent, name=name, kind=kind, created_by=by, version=1)
        version = CheckVersion.objects.create(
            parent=check, number=1, name=name, kind=kind, config=config, created_by=by
        )
        Check.objects.filter(pk=check.pk).update(current_version=version)
        check.current_version = version
    return check


def validate_check_edit(
    *, current: CheckVersion, name: str | None = None, kind: str | None = None, config: Mapping | None = None
) -> tuple[str, str, dict]:
    """What `edit_check` would save over `current` (None keeps a value; a new kind without a config
    starts from an empty one). Raises ValidationFailed like validate_check."""
    new_kind = kind if kind is not None else current.kind
    if config is None:
        config = current.config if new_kind == current.kind else {}
    return validate_check(name=name if name is not None else current.name, kind=new_kind, config=config)


def edit_check(
    *, check: Check, by, name: str | None = None, kind: str | None = None, config: Mapping | None = None
) -> Check:
    """Save version n+1 and move the current pointer. An edit that changes nothing makes no version."""
    access.require(by, access.CHANGE, check, team=check.agent.team)
    if check.archived_at is not None:
        raise ValidationFailed("this check is archived; restore it before editing", field="__all__")
    with transaction.atomic():
        locked = (
            Check.objects.select_for_update(of=("self",)).select_related("current_version").get(pk=check.pk)
        )
        current = locked.current_version
        name, new_kind, config = validate_check_edit(current=current, name=name, kind=kind, config=config)
        if (name, new_kind, config) == (current.name, current.kind, current.config):
            return locked
        number = locked.version + 1
        version = CheckVersion.objects.create(
            parent=locked, number=number, name=name, kind=new_kind, config=config, created_by=by
        )
        locked.current_version = version
        locked.version = number
        locked.name = name
        locked.kind = new_kind
        locked.save(update_fields=["current_version", "version", "name", "kind", "updated_at"])
    return locked


class CheckInUse(Conflict):
    """Archiving a check that tests still use, unconfirmed. `tests` lists them (at most 50)."""

    def __init__(self, check: Check, tests: list[Test]) -> None:
        self.tests = tests
        super().__init__(
            f"check {check.name!r} is used by {len(tests)} test{'s' if len(tests) != 1 else ''}: "
            f"{names_list([t.name for t in tests])}. Archived, it stays in them and their runs keep running "
            f"its last version (v{check.version}) until a test is edited, which then asks to remove it; "
            "confirm to archive it anyway"
        )


def names_list(names: Sequence[str], limit: int = 5) -> str:
    """'A, B and C' (', and N more' past `limit`)."""
    shown = list(names[:limit])
    if len(names) > limit:
        return f"{', '.join(shown)} and {len(names) - limit} more"
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} and {shown[-1]}"


def archive_check(*, check: Check, by, archived: bool = True, confirm: bool = False) -> Check:
    """Hide a check from pickers (new tests, launch-time additions); its versions and every run stay.

    Tests that already attach it keep it: their runs execute its last version, which cannot change
    while it is archived (edit_check refuses), until the test is edited; saving a test then refuses an
    archived check (resolve_checks). Archiving a check that active tests use raises CheckInUse naming
    them unless ``confirm``.
    """
    access.require(by, access.ARCHIVE, check, team=check.agent.team)
    if archived and not confirm and check.archived_at is None:
        tests = list(Test.objects.using_check(check).select_related("test_set").order_by("name", "pk")[:50])
        if tests:
            raise CheckInUse(check, tests)
    check.archived_at = timezone.now() if archived else None
    check.save(update_fields=["archived_at", "updated_at"])
    return check


def version_diff(old: CheckVersion | None, new: CheckVersion) -> list[tuple[str, object, object]]:
    """What changed between two versions, as (field, before, after), config keys flattened."""
    if old is None:
        return []
    changes: list[tuple[str, object, object]] = []
    for field in ("name", "kind"):
        if getattr(old, field) != getattr(new, field):
            changes.append((field, getattr(old, field), getattr(new, field)))
    keys = sorted(set(old.config) | set(new.config))
    for key in keys:
        before, after = old.config.get(key), new.config.get(key)
        if before != after:
            changes.append((f"config.{key}", before, after))
    return changes


# ---------------------------------------------------------------- test sets and tests


def create_test_set(*, agent: Agent, by, name: str, description: str = "") -> TestSet:
    access.require(by, access.CREATE, TestSet, team=agent.team)
    name = (name or "").strip()
    if not name:
        raise ValidationFailed("a test set needs a name", field="name")
    if len(name) > 200:
        raise ValidationFailed("at most 200 characters", field="name")
    if TestSet.objects.filter(agent=agent, name=name).exists():
        raise ValidationFailed(f"{agent} already has a test set called {name!r}", field="name")
    try:
        with transaction.atomic():
            return TestSet.objects.create(agent=agent, name=name, description=description or "")
    except IntegrityError as exc:  # another request created the same name since the check above
        raise ValidationFailed(f"{agent} already has a test set called {name!r}", field="name") from exc


def update_test_set(
    *, test_set: TestSet, by, name: str | None = None, description: str | None = None
) -> TestSet:
    """Rename a test set or change its description (test sets are not versioned; their tests are)."""
    access.require(by, access.CHANGE, test_set, team=test_set.agent.team)
    fields = []
    if name is not None:
        name = (name or "").strip()
        if not name:
            raise ValidationFailed("a test set needs a name", field="name")
        if len(name) > 200:
            raise ValidationFailed("at most 200 characters", field="name")
        if TestSet.objects.filter(agent_id=test_set.agent_id, name=name).exclude(pk=test_set.pk).exists():
            raise ValidationFailed(f"{test_set.agent} already has a test set called {name!r}", field="name")
        test_set.name = name
        fields.append("name")
    if description is not None:
        test_set.description = description
        fields.append("description")
    if fields:
        try:
            with transaction.atomic():
                test_set.save(update_fields=fields)
        except IntegrityError as exc:  # a concurrent rename to the same name
            raise ValidationFailed(
                f"{test_set.agent} already has a test set called {test_set.name!r}", field="name"
            ) from exc
    return test_set


def archived_test_set_problem(test_set: TestSet) -> str:
    return f"test set {test_set.name!r} is archived; restore it to add tests"


def archive_test_set(*, test_set: TestSet, by, archived: bool = True) -> TestSet:
    """Hide a test set (and launching it); its tests and their runs stay."""
    access.require(by, access.ARCHIVE, test_set, team=test_set.agent.team)
    test_set.archived_at = timezone.now() if archived else None
    test_set.save(update_fields=["archived_at"])
    return test_set


def normalise_scenarios(scenarios: object, limits: Limits) -> list[dict]:
    """The scenarios in stored form. Raises ValidationFailed naming every bad scenario field at once."""
    if not isinstance(scenarios, Sequence) or isinstance(scenarios, str | bytes):
        raise ValidationFailed("must be a list of scenarios", field="scenarios")
    if not scenarios:
        raise ValidationFailed("add at least one scenario", field="scenarios")
    errors: dict[str, str] = {}
    if len(scenarios) > limits.scenarios:
        errors["scenarios"] = f"{len(scenarios)} scenarios is over the limit of {limits.scenarios} per test"
    result = [_scenario(raw, index, errors) for index, raw in enumerate(scenarios)]
    if errors:
        raise ValidationFailed(errors)
    return result


def _scenario(raw: object, index: int, errors: dict[str, str]) -> dict:
    """One scenario in stored form; its problems go to `errors` (each field on its own key)."""
    where = f"scenarios.{index}"
    if isinstance(raw, str):
        raw = {"input": raw}
    if not isinstance(raw, Mapping):
        errors[where] = "must be an object with input or messages"
        return {}
    unknown = set(raw) - {"name", "input", "messages", "metadata"}
    if unknown:
        errors[where] = f"unknown field {sorted(unknown)[0]!r}"
    text = raw.get("input")
    messages = raw.get("messages")
    metadata = raw.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        errors[f"{where}.metadata"] = "must be an object"
        metadata = {}
    if messages:
        clean = _messages(messages, f"{where}.messages", errors)
        if clean:
            last_user = next(m["content"] for m in reversed(clean) if m["role"] == "user")
            text = text if isinstance(text, str) and text.strip() else last_user
        messages = clean
    else:
        if not isinstance(text, str) or not text.strip():
            errors[f"{where}.input"] = "a scenario needs an input message"
        messages = [{"role": "user", "content": text}]
    name = scenario_name(raw, index)
    if not isinstance(name, str) or len(name) > 200:
        errors[f"{where}.name"] = "must be text of at most 200 characters"
        name = ""
    return {"name": name.strip(), "input": text, "messages": messages, "metadata": dict(metadata)}


def _messages(messages: object, where: str, errors: dict[str, str]) -> list[dict]:
    """A chat transcript as [{role, content}], or [] with its problems in `errors`."""
    if not isinstance(messages, Sequence) or isinstance(messages, str):
        errors[where] = "must be a list of {role, content}"
        return []
    clean = []
    for m_index, message in enumerate(messages):
        m_where = f"{where}.{m_index}"
        if not isinstance(message, Mapping):
            errors[m_where] = "must be an object with role and content"
        elif message.get("role") not in MESSAGE_ROLES:
            errors[f"{m_where}.role"] = f"role must be one of {', '.join(MESSAGE_ROLES)}"
        elif not isinstance(message.get("content"), str):
            errors[f"{m_where}.content"] = "content must be text"
        else:
            clean.append({"role": message["role"], "content": message["content"]})
    if len(clean) < len(messages):
        return []
    if not any(m["role"] == "user" for m in clean):
        errors[where] = "a chat transcript needs at least one user message"
        return []
    return clean


def _as_int(value: object, field: str, errors: dict[str, str]) -> int | None:
    """`value` as a whole number, or None with the problem in `errors`."""
    if isinstance(value, bool):
        errors[field] = "must be a whole number"
        return None
    try:
        number = int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        errors[field] = "must be a whole number"
        return None
    if str(number) != str(value).strip() and not isinstance(value, int):
        errors[field] = "must be a whole number"
        return None
    return number


def validate_thresholds(
    *, scenario_count: int | None, samples_per_scenario: object, min_valid_per_scenario: object,
    required_pass_rate: object, limits: Limits,
) -> tuple[int, int, int]:
    """(samples, min_valid, rate), or ValidationFailed naming every bad one. A `scenario_count` of None
    (the scenarios are not a list) skips the samples-per-run limit."""
    errors: dict[str, str] = {}
    samples = _as_int(samples_per_scenario, "samples_per_scenario", errors)
    if samples is not None and samples < 1:
        errors["samples_per_scenario"] = "must be at least 1"
        samples = None
    if samples is not None and scenario_count is not None:
        total = scenario_count * samples
        if total > limits.samples_per_run:
            errors["samples_per_scenario"] = (
                f"{scenario_count} scenarios × {samples} samples = {total} is over the limit of "
                f"{limits.samples_per_run} samples per run"
            )
    min_valid = _as_int(min_valid_per_scenario, "min_valid_per_scenario", errors)
    if min_valid is not None:
        if samples is None:  # the upper bound is unknown; the samples field says why
            if min_valid < 1:
                errors["min_valid_per_scenario"] = "must be at least 1"
        elif not 1 <= min_valid <= samples:
            errors["min_valid_per_scenario"] = f"must be between 1 and the samples per scenario ({samples})"
    rate = _as_int(required_pass_rate, "required_pass_rate", errors)
    if rate is not None and not 1 <= rate <= 100:
        errors["required_pass_rate"] = "must be between 1 and 100 (%)"
    if errors:
        raise ValidationFailed(errors)
    return samples, min_valid, rate


def resolve_checks(
    *, agent: Agent, checks: object, limit: int, field: str = "checks"
) -> list[tuple[Check, bool]]:
    """[{check: id|Check, required: bool}] → [(Check, required)], all of `agent`, active, no duplicates.

    Raises ValidationFailed naming every bad item at once."""
    if checks is None:
        checks = []
    if not isinstance(checks, Sequence) or isinstance(checks, str):
        raise ValidationFailed("must be a list of checks", field=field)
    if len(checks) > limit:
        raise ValidationFailed(f"{len(checks)} checks is over the limit of {limit}", field=field)
    errors: dict[str, str] = {}
    wanted: list[tuple[int | None, bool]] = []
    for index, item in enumerate(checks):
        if isinstance(item, Mapping):
            ref, required = item.get("check"), item.get("required", True)
        else:
            ref, required = item, True
        if not isinstance(required, bool):
            errors[f"{field}.{index}.required"] = "required must be true or false"
        ref = ref.pk if isinstance(ref, Check) else ref
        try:
            check_id = int(ref)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            errors[f"{field}.{index}.check"] = "must be a check id"
            check_id = None
        wanted.append((check_id, required))
    ids = [check_id for check_id, _ in wanted if check_id is not None and 1 <= check_id <= MAX_ID]
    found = {c.pk: c for c in Check.objects.filter(pk__in=ids, agent=agent).select_related("current_version")}
    result = []
    seen = set()
    for index, (check_id, required) in enumerate(wanted):
        if check_id is None:
            continue
        where = f"{field}.{index}.check"
        check = found.get(check_id)
        if check is None:
            errors[where] = f"check {check_id} is not in {agent}'s library"
        elif check.archived_at is not None:
            errors[where] = f"check {check.name!r} is archived; leave it out, or restore it in the library"
        elif check_id in seen:
            errors[where] = f"check {check.name!r} is attached twice"
        else:
            seen.add(check_id)
            result.append((check, required))
    if errors:
        raise ValidationFailed(errors)
    return result


def _save_version(*, test: Test, by, number: int, name: str, spec: dict, attached) -> TestVersion:
    version = TestVersion.objects.create(test=test, number=number, name=name, created_by=by, **spec)
    TestCheck.objects.bulk_create(
        [
            TestCheck(test_version=version, library_check=check, required=required, position=position)
            for position, (check, required) in enumerate(attached)
        ]
    )
    return version


def validate_test(*, agent: Agent, name, scenarios, checks=(), samples_per_scenario=1,
                  min_valid_per_scenario=1, required_pass_rate=100) -> tuple[str, dict, list]:
    """(name, version fields, attached checks) of a test of `agent`, saving nothing; defaults of a new test.

    Raises ValidationFailed naming every bad field at once (each on its own key, e.g. `scenarios.1.input`).
    """
    limits = Limits.current()
    errors: dict[str, str] = {}
    name = name.strip() if isinstance(name, str) else ""
    if not name:
        errors["name"] = "a test needs a name"
    elif len(name) > 200:
        errors["name"] = "at most 200 characters"
    listed = isinstance(scenarios, Sequence) and not isinstance(scenarios, str | bytes)
    clean = _collect(errors, normalise_scenarios, scenarios, limits)
    thresholds = _collect(
        errors, validate_thresholds, scenario_count=len(scenarios) if listed else None,
        samples_per_scenario=samples_per_scenario, min_valid_per_scenario=min_valid_per_scenario,
        required_pass_rate=required_pass_rate, limits=limits,
    )
    attached = _collect(errors, resolve_checks, agent=agent, checks=checks, limit=limits.checks)
    if errors:
        raise ValidationFailed(errors)
    samples, min_valid, rate = thresholds
    spec = dict(scenarios=clean, samples_per_scenario=samples, min_valid_per_scenario=min_valid,
                required_pass_rate=rate)
    return name, spec, attached


def _collect(errors: dict[str, str], validate, *args, **kwargs):
    """`validate(...)`, or None with its ValidationFailed messages added to `errors`."""
    try:
        return validate(*args, **kwargs)
    except ValidationFailed as exc:
        errors.update(exc.errors)
        return None


def validate_new_test(*, test_set: TestSet, **fields) -> tuple[str, dict, list]:
    """validate_test for a new test of `test_set`, which must not be archived (named `test_set`)."""
    errors: dict[str, str] = {}
    if test_set.archived_at is not None:
        errors["test_set"] = archived_test_set_problem(test_set)
    validated = _collect(errors, validate_test, agent=test_set.agent, **fields)
    if errors:
        raise ValidationFailed(errors)
    return validated


def create_test(
    *, test_set: TestSet, by, name: str, scenarios, checks=(), samples_per_scenario=1,
    min_valid_per_scenario=1, required_pass_rate=100,
) -> Test:
    """Create a test with version 1. Every limit of DESIGN.md is checked, naming the field; an archived
    test set takes no new tests (`test_set`)."""
    access.require(by, access.CREATE, Test, team=test_set.agent.team)
    name, spec, attached = validate_new_test(
        test_set=test_set, name=name, scenarios=scenarios, checks=checks,
        samples_per_scenario=samples_per_scenario, min_valid_per_scenario=min_valid_per_scenario,
        required_pass_rate=required_pass_rate,
    )
    with transaction.atomic():
        test = Test.objects.create(test_set=test_set, name=name, created_by=by, version=1)
        version = _save_version(test=test, by=by, number=1, name=name, spec=spec, attached=attached)
        Test.objects.filter(pk=test.pk).update(current_version=version)
        test.current_version = version
    return test


def edit_test(*, test: Test, by, **changes) -> Test:
    """Save test version n+1 from the current one plus `changes`; unchanged input makes no version."""
    access.require(by, access.CHANGE, test, team=test.test_set.agent.team)
    allowed = {
        "name", "scenarios", "checks", "samples_per_scenario", "min_valid_per_scenario", "required_pass_rate"
    }
    unknown = set(changes) - allowed
    if unknown:
        raise ValidationFailed({field: "unknown field" for field in sorted(unknown)})
    with transaction.atomic():
        locked = Test.objects.select_for_update().get(pk=test.pk)
        current = TestVersion.objects.get(pk=locked.current_version_id)
        base = current_test_fields(current)
        merged = {**base, **changes}
        name, spec, attached = validate_test(agent=test.test_set.agent, **merged)
        same = (
            name == current.name
            and all(spec[k] == getattr(current, k) for k in spec)
            and [(c.pk, r) for c, r in attached] == [(c["check"], c["required"]) for c in base["checks"]]
        )
        if same:
            return locked
        number = locked.version + 1
        version = _save_version(test=locked, by=by, number=number, name=name, spec=spec, attached=attached)
        locked.current_version = version
        locked.version = number
        locked.name = name
        locked.save(update_fields=["current_version", "version", "name", "updated_at"])
    return locked


def current_test_fields(version: TestVersion) -> dict:
    """A test version's content as `edit_test` and `validate_test` take it (what an edit starts from)."""
    return {
        "name": version.name,
        "scenarios": version.scenarios,
        "checks": [
            {"check": tc.library_check_id, "required": tc.required} for tc in version.attached_checks.all()
        ],
        "samples_per_scenario": version.samples_per_scenario,
        "min_valid_per_scenario": version.min_valid_per_scenario,
        "required_pass_rate": version.required_pass_rate,
    }


def archive_test(*, test: Test, by, archived: bool = True) -> Test:
    access.require(by, access.ARCHIVE, test, team=test.test_set.agent.team)
    test.archived_at = timezone.now() if archived else None
    test.save(update_fields=["archived_at", "updated_at"])
    return test
