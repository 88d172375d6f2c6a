"""REST API v1 shapes of live tasks, monitors and one-off evaluations. monitors.services writes."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from agents.models import Agent
from checks.kinds import Outcome
from core.api import VisibleRelatedField
from monitors.models import Evaluation, Monitor, Task
from runs.models import VERDICT_FIELDS, CheckResult
from runs.serializers import CheckVersionResultSerializer

# ----------------------------------------------------------------------------- tasks


class TaskItemSerializer(serializers.Serializer):
    """Documentation of one posted task (validation is done by monitors.services in plain Python, fast).

    An agent's evalconsole/1 reply (`output`, `messages`, `toolCalls`, `trace`) plus `external_id` and
    `completed_at` is a valid task: `toolCalls` is accepted as the protocol spells it, or `tool_calls`.
    """

    external_id = serializers.CharField(
        max_length=200, help_text="Your id for the conversation; re-posting it is a no-op."
    )
    completed_at = serializers.DateTimeField(help_text="ISO 8601; a time without an offset is read as UTC.")
    messages = serializers.ListField(
        child=serializers.DictField(),
        required=False,
        help_text="The transcript: [{role: system|user|assistant|tool, content}].",
    )
    output = serializers.CharField(required=False, allow_blank=True, help_text="The agent's final answer.")
    tool_calls = serializers.ListField(
        child=serializers.DictField(),
        required=False,
        allow_null=True,
        help_text="[{name, status, input?, output?, error?, node?}]; null = unknown. "
        "Also accepted as `toolCalls` (the agent protocol's key); sending both is a 400.",
    )
    toolCalls = serializers.ListField(  # noqa: N815 - the agent protocol's key, as it goes over the wire
        child=serializers.DictField(),
        required=False,
        allow_null=True,
        help_text="The agent protocol's spelling of `tool_calls`: an evalconsole/1 reply's `toolCalls` "
        "posts as it is. Send one of the two.",
    )
    trace = serializers.ListField(
        child=serializers.DictField(),
        required=False,
        allow_null=True,
        help_text="[{method, path, status, tool?}]; null = unknown.",
    )
    metadata = serializers.DictField(required=False)
    latency_ms = serializers.FloatField(required=False, allow_null=True, min_value=0)


class IngestResultSerializer(serializers.Serializer):
    created = serializers.IntegerField(help_text="New tasks stored.")
    existing = serializers.IntegerField(
        help_text="Posted tasks whose external_id was already stored (unchanged)."
    )
    sampled = serializers.IntegerField(
        help_text="New tasks picked by at least one monitor (evaluated in the background)."
    )
    ids = serializers.ListField(child=serializers.IntegerField(), help_text="Task ids, in the posted order.")


class TaskSerializer(serializers.ModelSerializer):
    class Meta:
        model = Task
        fields = [
            "id",
            "agent",
            "external_id",
            "completed_at",
            "ingested_at",
            "latency_ms",
            "sampled",
            "has_failures",
            "metadata",
            "output",
        ]
        read_only_fields = fields


class TaskResultSerializer(CheckVersionResultSerializer):
    class Meta:
        model = CheckResult
        fields = [
            "id",
            "check",
            "check_version",
            "version",
            "name",
            *VERDICT_FIELDS,
            "monitor",
            "evaluation",
            "observed_at",
        ]
        read_only_fields = fields


class TaskDetailSerializer(TaskSerializer):
    results = TaskResultSerializer(many=True, read_only=True)

    class Meta(TaskSerializer.Meta):
        fields = [*TaskSerializer.Meta.fields, "messages", "tool_calls", "trace", "results"]
        read_only_fields = fields


# ----------------------------------------------------------------------------- monitors


class CheckRefSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    kind = serializers.CharField()
    version = serializers.IntegerField(help_text="The current version, used for newly sampled tasks.")


class CheckIdsField(serializers.ListField):
    """Written as a list of check ids; read from the monitor's checks (prefetched)."""

    def to_representation(self, data):
        return [c.pk for c in (data if isinstance(data, list) else data.all())]


class MonitorSerializer(serializers.ModelSerializer):
    agent = VisibleRelatedField(Agent, noun="Agent")
    checks = CheckIdsField(
        child=serializers.IntegerField(min_value=1),
        required=False,
        max_length=100,
        help_text="Ids of library checks of the agent (at least one).",
    )
    checks_detail = serializers.SerializerMethodField()
    sample_rate = serializers.DecimalField(
        max_digits=5,
        decimal_places=2,
        min_value=0,
        max_value=100,
        coerce_to_string=False,
        help_text="Percent of the agent's new tasks to evaluate (0-100, two decimals).",
    )

    class Meta:
        model = Monitor
        fields = ["id", "agent", "name", "checks", "checks_detail", "sample_rate", "active", "created_at"]
        read_only_fields = ["id", "created_at"]

    @extend_schema_field(CheckRefSerializer(many=True))
    def get_checks_detail(self, instance: Monitor) -> list[dict]:
        checks = getattr(instance, "listed_checks", None)  # the list's prefetch (monitor_queryset)
        return [
            {"id": c.pk, "name": c.name, "kind": c.kind, "version": c.version}
            for c in (instance.checks.all() if checks is None else checks)
        ]


class MonitorUpdateSerializer(MonitorSerializer):
    agent = serializers.PrimaryKeyRelatedField(read_only=True)

    class Meta(MonitorSerializer.Meta):
        read_only_fields = ["id", "agent", "created_at"]
        extra_kwargs = {"name": {"required": False}, "sample_rate": {"required": False}}

    def get_fields(self):
        fields = super().get_fields()
        fields["sample_rate"].required = False
        return fields


class PointSerializer(serializers.Serializer):
    start = serializers.DateTimeField()
    pass_ = serializers.IntegerField()
    fail = serializers.IntegerField()
    indeterminate = serializers.IntegerField()
    error = serializers.IntegerField()
    pass_rate = serializers.FloatField(
        allow_null=True, help_text="pass / (pass + fail) in percent; null if none."
    )

    def get_fields(self):
        fields = super().get_fields()
        fields["pass"] = fields.pop("pass_")
        return fields


class SeriesSerializer(serializers.Serializer):
    check = serializers.IntegerField()
    check_version = serializers.IntegerField()
    version = serializers.IntegerField()
    label = serializers.CharField(help_text="Check name and version, e.g. 'Polite v2'.")
    current = serializers.BooleanField(help_text="Whether this is the version used for new tasks.")
    points = PointSerializer(many=True)


class VolumeSerializer(serializers.Serializer):
    start = serializers.DateTimeField()
    tasks = serializers.IntegerField(help_text="Tasks of the agent completed in the bucket.")
    evaluated = serializers.IntegerField(help_text="Of those, tasks this monitor evaluated.")


class MonitorResultsSerializer(serializers.Serializer):
    monitor = serializers.IntegerField()
    bucket = serializers.ChoiceField(choices=["hour", "day"])
    since = serializers.DateTimeField()
    until = serializers.DateTimeField()
    sample_rate = serializers.FloatField()
    series = SeriesSerializer(many=True)
    volume = VolumeSerializer(many=True)


def dashboard_data(monitor: Monitor, board) -> dict[str, Any]:
    series = []
    for s in board.series:
        points = []
        for start in board.buckets:
            c = s.points.get(start)
            if c is None:
                continue
            determinate = c["pass"] + c["fail"]
            points.append(
                {
                    "start": start,
                    **c,
                    "pass_rate": round(c["pass"] * 100 / determinate, 2) if determinate else None,
                }
            )
        series.append(
            {
                "check": s.check_id,
                "check_version": s.version_id,
                "version": s.number,
                "label": s.label,
                "current": s.current,
                "points": points,
            }
        )
    return {
        "monitor": monitor.pk,
        "bucket": board.bucket,
        "since": board.since,
        "until": board.until,
        "sample_rate": float(monitor.sample_rate),
        "series": series,
        "volume": [{"start": b, **board.volume[b]} for b in board.buckets],
    }


# ----------------------------------------------------------------------------- evaluations


class TaskFilterSerializer(serializers.Serializer):
    completed_after = serializers.DateTimeField(required=False)
    completed_before = serializers.DateTimeField(required=False)
    q = serializers.CharField(
        required=False, allow_blank=True, max_length=200, help_text="Text in the metadata."
    )
    has_failures = serializers.BooleanField(required=False, allow_null=True, default=None)


class LaunchEvaluationSerializer(serializers.Serializer):
    agent = VisibleRelatedField(
        Agent,
        noun="Agent",
        required=False,
        help_text="Needed with `filter`; with `tasks` it defaults to their agent.",
    )
    tasks = serializers.ListField(
        child=serializers.IntegerField(min_value=1),
        required=False,
        max_length=100_000,
        help_text="Task ids (all of one agent).",
    )
    filter = TaskFilterSerializer(
        required=False, help_text="Instead of `tasks`: every task of `agent` matching."
    )
    checks = serializers.ListField(
        child=serializers.IntegerField(min_value=1),
        max_length=100,
        help_text="Library check ids; their current versions are frozen now.",
    )
    name = serializers.CharField(required=False, allow_blank=True, max_length=200)

    def validate(self, attrs):
        if ("tasks" in attrs) == ("filter" in attrs):
            raise serializers.ValidationError(
                {"tasks": "send either `tasks` (ids) or `filter`, not both or neither"}
            )
        if "filter" in attrs and "agent" not in attrs:
            raise serializers.ValidationError({"agent": "required with `filter`"})
        if "tasks" in attrs and not attrs["tasks"]:
            raise serializers.ValidationError({"tasks": "choose at least one task"})
        return attrs


class EvaluationVersionSerializer(serializers.Serializer):
    check = serializers.IntegerField(source="parent_id")
    check_version = serializers.IntegerField(source="pk")
    version = serializers.IntegerField(source="number")
    name = serializers.CharField()
    kind = serializers.CharField()


class EvaluationSerializer(serializers.ModelSerializer):
    check_versions = EvaluationVersionSerializer(many=True, read_only=True)
    task_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = Evaluation
        fields = [
            "id",
            "agent",
            "name",
            "status",
            "task_count",
            "check_versions",
            "created_at",
            "finished_at",
        ]
        read_only_fields = fields


class GridRowSerializer(serializers.Serializer):
    task = serializers.IntegerField()
    external_id = serializers.CharField()
    outcomes = serializers.DictField(
        child=serializers.ChoiceField(choices=Outcome.choices, allow_null=True),
        help_text="Check id -> outcome (null while not evaluated yet).",
    )


class EvaluationDetailSerializer(EvaluationSerializer):
    counts = serializers.SerializerMethodField()
    grid = serializers.SerializerMethodField()

    class Meta(EvaluationSerializer.Meta):
        fields = [*EvaluationSerializer.Meta.fields, "counts", "grid"]
        read_only_fields = fields

    def _grid(self, instance: Evaluation):
        from monitors.services import evaluation_grid

        cache = self.context.setdefault("_grids", {})
        if instance.pk not in cache:
            cache[instance.pk] = evaluation_grid(instance)
        return cache[instance.pk]

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_counts(self, instance: Evaluation) -> dict[str, dict[str, int]]:
        """Check id -> {pass, fail, indeterminate, error}."""
        grid = self._grid(instance)
        return {str(v.parent_id): grid.counts.get(v.pk, {}) for v in grid.versions}

    @extend_schema_field(GridRowSerializer(many=True))
    def get_grid(self, instance: Evaluation) -> list[dict]:
        grid = self._grid(instance)
        return [
            {
                "task": row.task.pk,
                "external_id": row.task.external_id,
                "outcomes": {
                    str(v.parent_id): (cell.outcome if cell else None)
                    for v, cell in zip(grid.versions, row.cells, strict=True)
                },
            }
            for row in grid.rows
        ]


class EvaluationResultSerializer(CheckVersionResultSerializer):
    external_id = serializers.CharField(source="task.external_id", read_only=True)

    class Meta:
        model = CheckResult
        fields = [
            "id",
            "task",
            "external_id",
            "check",
            "check_version",
            "version",
            "name",
            *VERDICT_FIELDS,
        ]
        read_only_fields = fields
