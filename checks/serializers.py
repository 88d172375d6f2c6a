"""REST API v1 shapes of checks, check versions, test sets and tests. checks.services writes."""

from __future__ import annotations

from types import SimpleNamespace

from rest_framework import serializers

from agents.models import Agent
from checks import kinds
from checks.models import Check, CheckVersion, Test, TestSet
from checks.services import MESSAGE_ROLES
from core.api import StorableDictField, VisibleRelatedField, row_function
from core.rows import datetime_text


class CheckConfigField(StorableDictField):
    """The kind's config object; the OpenAPI schema shows it per kind (evalconsole.schema)."""


class KindField(serializers.ChoiceField):
    """A check kind name from the registry (choices read when the serializer is built)."""

    def __init__(self, **kwargs):
        super().__init__(choices=kinds.kind_choices(), **kwargs)


# ----------------------------------------------------------------------------- checks


class CheckSerializer(serializers.ModelSerializer):
    """A library check: its identity plus the content of its current version."""

    agent = serializers.IntegerField(source="agent_id", read_only=True)
    kind = serializers.CharField(read_only=True)
    config = serializers.SerializerMethodField()
    version = serializers.IntegerField(read_only=True, help_text="The current version number.")
    version_id = serializers.IntegerField(source="current_version_id", read_only=True, allow_null=True)

    class Meta:
        model = Check
        fields = [
            "id",
            "agent",
            "name",
            "kind",
            "config",
            "version",
            "version_id",
            "created_at",
            "updated_at",
            "archived_at",
        ]
        read_only_fields = fields

    def get_config(self, check: Check) -> dict:
        return dict(check.current_version.config) if check.current_version else {}


class CheckCreateSerializer(serializers.Serializer):
    agent = VisibleRelatedField(Agent, noun="Agent")
    name = serializers.CharField(max_length=200)
    kind = KindField()
    config = CheckConfigField(required=False, help_text="The kind's settings; see the schema per kind.")


class CheckEditSerializer(serializers.Serializer):
    """Any change saves version n+1; a change of `kind` without `config` starts from an empty config."""

    name = serializers.CharField(max_length=200, required=False)
    kind = KindField(required=False)
    config = CheckConfigField(required=False)


class CheckVersionSerializer(serializers.ModelSerializer):
    check_id = serializers.IntegerField(source="parent_id", read_only=True)
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)
    config = serializers.SerializerMethodField()

    class Meta:
        model = CheckVersion
        fields = ["id", "check_id", "number", "name", "kind", "config", "created_by", "created_at"]
        read_only_fields = fields

    def get_config(self, version: CheckVersion) -> dict:
        return dict(version.config)


# ----------------------------------------------------------------------------- test sets


class TestSetSerializer(serializers.ModelSerializer):

    agent = serializers.IntegerField(source="agent_id", read_only=True)
    tests = serializers.SerializerMethodField(help_text="Ids of the set's active tests.")

    class Meta:
        model = TestSet
        fields = ["id", "agent", "name", "description", "tests", "created_at", "archived_at"]
        read_only_fields = fields

    def get_tests(self, test_set: TestSet) -> list[int]:
        listed = getattr(test_set, "active_test_ids", None)  # the list's plain rows (checks.api)
        if listed is not None:
            return [t.pk for t in listed]
        return [t.pk for t in test_set.tests.all() if t.archived_at is None]


class TestSetCreateSerializer(serializers.Serializer):

    agent = VisibleRelatedField(Agent, noun="Agent")
    name = serializers.CharField(max_length=200)
    description = serializers.CharField(required=False, allow_blank=True, max_length=10_000)


class TestSetEditSerializer(serializers.Serializer):

    name = serializers.CharField(max_length=200, required=False)
    description = serializers.CharField(required=False, allow_blank=True, max_length=10_000)


# ----------------------------------------------------------------------------- tests


class MessageSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=list(MESSAGE_ROLES))
    content = serializers.CharField(allow_blank=True, trim_whitespace=False, max_length=100_000)


class ScenarioSerializer(serializers.Serializer):
    """One input: `input` (a single user message) or `messages` (a chat transcript), plus metadata."""

    name = serializers.CharField(max_length=200, required=False, allow_blank=True)
    input = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False, max_length=100_000)
    messages = MessageSerializer(many=True, required=False, max_length=200)
    metadata = StorableDictField(required=False)

    def to_representation(self, instance):
        return scenario_body(instance)


def scenario_body(scenario: dict) -> dict:
    """A stored scenario as the API shows it (ScenarioSerializer)."""
    return {
        "name": scenario.get("name", ""),
        "input": scenario.get("input", ""),
        "messages": list(scenario.get("messages") or []),
        "metadata": dict(scenario.get("metadata") or {}),
    }


class AttachedCheckSerializer(serializers.Serializer):
    check = VisibleRelatedField(Check, noun="Check")
    required = serializers.BooleanField(default=True, help_text="false: advisory (shown, never counted).")


class AttachedCheckOutSerializer(serializers.Serializer):
    check = serializers.IntegerField(source="library_check_id")
    required = serializers.BooleanField()


class TestSerializer(serializers.ModelSerializer):
    """A test: its identity plus the content of its current version."""


    test_set = serializers.IntegerField(source="test_set_id", read_only=True)
    agent = serializers.IntegerField(source="test_set.agent_id", read_only=True)
    version = serializers.IntegerField(read_only=True, help_text="The current version number.")
    version_id = serializers.IntegerField(source="current_version_id", read_only=True, allow_null=True)
    scenarios = ScenarioSerializer(source="current_version.scenarios", many=True, read_only=True)
    checks = AttachedCheckOutSerializer(
        source="current_version.attached_checks", many=True, read_only=True
    )
    samples_per_scenario = serializers.IntegerField(
        source="current_version.samples_per_scenario", read_only=True
    )
    min_valid_per_scenario = serializers.IntegerField(
        source="current_version.min_valid_per_scenario", read_only=True
    )
    required_pass_rate = serializers.IntegerField(source="current_version.required_pass_rate", read_only=True)

    class Meta:
        model = Test
        fields = [
            "id",
            "test_set",
            "agent",
            "name",
            "version",
            "version_id",
            "scenarios",
            "checks",
            "samples_per_scenario",
            "min_valid_per_scenario",
            "required_pass_rate",
            "created_at",
            "updated_at",
            "archived_at",
        ]
        read_only_fields = fields


class TestEditSerializer(serializers.Serializer):
    """Any change saves test version n+1. Limits (DESIGN.md) are checked by the service, naming the field."""


    name = serializers.CharField(max_length=200, required=False)
    scenarios = ScenarioSerializer(many=True, required=False, max_length=1000)
    checks = AttachedCheckSerializer(many=True, required=False, max_length=1000)
    samples_per_scenario = serializers.IntegerField(min_value=1, max_value=10_000, required=False)
    min_valid_per_scenario = serializers.IntegerField(min_value=1, max_value=10_000, required=False)
    required_pass_rate = serializers.IntegerField(
        min_value=1, max_value=100, required=False, help_text="Percent of determinate samples that must pass."
    )

    def validate_scenarios(self, value: list[dict]) -> list[dict]:
        # Leave out keys that were not sent: the service fills names and inputs.
        return [{k: v for k, v in scenario.items() if v not in (None, "")} for scenario in value]

    def validate_checks(self, value: list[dict]) -> list[dict]:
        return [{"check": item["check"], "required": item["required"]} for item in value]


class TestCreateSerializer(TestEditSerializer):

    test_set = VisibleRelatedField(TestSet, noun="Test set")
    name = serializers.CharField(max_length=200)
    scenarios = ScenarioSerializer(many=True, max_length=1000)
    samples_per_scenario = serializers.IntegerField(min_value=1, max_value=10_000, default=1)
    min_valid_per_scenario = serializers.IntegerField(min_value=1, max_value=10_000, default=1)
    required_pass_rate = serializers.IntegerField(min_value=1, max_value=100, default=100)


# What the tests list reads of each test, in this order (test_rows draws its rows from them).
TEST_ROW_COLUMNS = (
    *("id", "test_set_id", "test_set__agent_id", "name", "version", "current_version_id"),
    *(f"current_version__{name}" for name in ("scenarios", "samples_per_scenario", "min_valid_per_scenario")),
    *("current_version__required_pass_rate", "created_at", "updated_at", "archived_at"),
)
TEST_VERSION = TEST_ROW_COLUMNS.index("current_version_id")


def test_rows(page: list[tuple], checks: dict[int, list[tuple]], serializer) -> list[dict]:
    """TestSerializer's body of each test of `page` (TEST_ROW_COLUMNS tuples) with its version's attached
    checks (`checks`: version id → (check id, required) tuples), without a model instance or DRF's
    per-field dispatch. A test without a current version (DRF leaves its version's fields out) is drawn by
    core.api.row_function of `serializer()` (the list's serializer, made only then)."""
    when = datetime_text()
    rows = []
    for row in page:
        pk, test_set, agent, name, number, version, scenarios, samples, min_valid, rate = row[:10]
        created, updated, archived = row[10:]
        if version is None:
            rows.append(_versionless_row(serializer(), row))
            continue
        rows.append(
            {
                "id": pk,
                "test_set": test_set,
                "agent": agent,
                "name": name,
                "version": number,
                "version_id": version,
                "scenarios": None if scenarios is None else [scenario_body(s) for s in scenarios],
                "checks": [{"check": check, "required": required} for check, required in checks[version]],
                "samples_per_scenario": samples,
                "min_valid_per_scenario": min_valid,
                "required_pass_rate": rate,
                "created_at": when(created),
                "updated_at": when(updated),
                "archived_at": when(archived),
            }
        )
    return rows


def _versionless_row(serializer, row: tuple) -> dict:
    """The body of a test without a current version (TEST_ROW_COLUMNS) as `serializer` draws it."""
    pk, test_set, agent, name, number = row[:5]
    created, updated, archived = row[10:]
    test = SimpleNamespace(id=pk, pk=pk, test_set_id=test_set, test_set=SimpleNamespace(agent_id=agent))
    test.__dict__.update(name=name, version=number, current_version_id=None, current_version=None)
    test.__dict__.update(created_at=created, updated_at=updated, archived_at=archived)
    return row_function(serializer)(test)
