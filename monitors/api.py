"""REST API v1: task ingestion and reading, monitors (CRUD + results over time), one-off evaluations.

Thin over monitors.services. Another team's agent, task, monitor or evaluation is a 404.
"""

from __future__ import annotations

from django.conf import settings
from django.db.models import Count, F, Prefetch, QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.response import Response

from agents.models import Agent
from checks.models import Check, CheckVersion
from core.api import ApiPagination, SafeJSONParser, attach_rows, list_rows
from core.errors import ValidationFailed
from core.ids import id_from_text
from core.jsontext import json_text_problem
from monitors import services as monitoring
from monitors.models import Evaluation, Monitor, Task
from monitors.serializers import (
    EvaluationDetailSerializer,
    EvaluationResultSerializer,
    EvaluationSerializer,
    IngestResultSerializer,
    LaunchEvaluationSerializer,
    MonitorResultsSerializer,
    MonitorSerializer,
    MonitorUpdateSerializer,
    TaskDetailSerializer,
    TaskItemSerializer,
    TaskSerializer,
    dashboard_data,
)
from runs.models import VERDICT_FIELDS, CheckResult
from teams.api import ListRowsMixin, TeamScopedReadViewSet, TeamScopedViewMixin
from teams.throttling import TokenRateThrottle


class IngestRateThrottle(TokenRateThrottle):
    """Ingestion has its own budget (EVALCONSOLE_API_INGEST_THROTTLE, default 6000/min per token):
    a production service posting tasks one at a time must not starve the token's other calls."""

    scope = "ingest"

    def get_rate(self):
        return settings.EVALCONSOLE_API_INGEST_THROTTLE


def _filter_by_agent(qs: QuerySet, view) -> QuerySet:
    """Lists accept `?agent=<id>`; anything but an id is a 400 naming the field."""
    agent = view.request.query_params.get("agent")
    if view.action != "list" or not agent:
        return qs
    agent_id = id_from_text(agent)
    if agent_id is None:
        raise ValidationFailed("must be an agent id", field="agent")
    return qs.filter(agent_id=agent_id)


def _agent_id(raw: str) -> int:
    agent_id = id_from_text(raw)
    if agent_id is None:
        raise NotFound("No such agent.")
    return agent_id


@extend_schema_view(
    create=extend_schema(
        summary="Ingest completed tasks",
        description=(
            "Post one task object or a list of up to EVALCONSOLE_MAX_TASK_BATCH (1,000) of them. "
            "Idempotent by `external_id`: a task already stored is left unchanged and counted in "
            "`existing`. New tasks are sampled by the agent's active monitors and evaluated in "
            "the background; this call never waits for that. Validation errors name the item and "
            "the field: `items.3.completed_at` (for a single object, just the field). 201 when "
            "something was created, else 200. The evidence keys are the agent protocol's: an "
            "evalconsole/1 reply body (`output`, `messages`, `toolCalls`, `trace`) plus `external_id` "
            "and `completed_at` is a task; `tool_calls` is accepted for `toolCalls` (not both)."
        ),
        request=TaskItemSerializer(many=True),
        responses={
            201: IngestResultSerializer,
            200: IngestResultSerializer,
            400: OpenApiResponse(description='{"items.<index>.<field>": [message]}'),
        },
        parameters=[OpenApiParameter("agent_id", OpenApiTypes.INT, OpenApiParameter.PATH)],
    )
)
class AgentTaskIngestViewSet(viewsets.ViewSet):
    """`POST agents/{agent_id}/tasks/`: the ingestion hot path (validation in Python, one bulk insert)."""

    parser_classes = [SafeJSONParser]
    throttle_classes = [IngestRateThrottle]

    def create(self, request, agent_id: str):
        agent = get_object_or_404(Agent.objects.visible_to(request.user), pk=_agent_id(agent_id))
        body = request.data
        single = isinstance(body, dict)
        try:
            result = monitoring.ingest_tasks(agent=agent, by=request.user, items=body)
        except ValidationFailed as exc:
            errors = exc.errors
            if single:  # a single object: name the field alone
                errors = {key.removeprefix("items.0."): msg for key, msg in errors.items()}
            return Response({key: [msg] for key, msg in errors.items()}, status=status.HTTP_400_BAD_REQUEST)
        code = status.HTTP_201_CREATED if result.created else status.HTTP_200_OK
        data = {
            "created": result.created,
            "existing": result.existing,
            "sampled": result.sampled,
            "ids": result.ids,
        }
        return Response(data, status=code)


_TASK_FILTER_PARAMS = [
    OpenApiParameter("agent", OpenApiTypes.INT, description="Agent id."),
    OpenApiParameter("completed_after", OpenApiTypes.DATETIME, description="ISO 8601, inclusive."),
    OpenApiParameter("completed_before", OpenApiTypes.DATETIME, description="ISO 8601, exclusive."),
    OpenApiParameter(
        "q",
        OpenApiTypes.STR,
        description="Text in the task's external id, output or metadata (keys or values).",
    ),
    OpenApiParameter(
        "has_failures", OpenApiTypes.BOOL, description="Tasks with at least one failed check result."
    ),
]


@extend_schema_view(
    list=extend_schema(
        summary="List ingested tasks", description="Newest first.", parameters=_TASK_FILTER_PARAMS
    ),
    retrieve=extend_schema(
        summary="Show a task",
        description="Transcript, tool calls, trace and every check "
        "result recorded on it (monitors and evaluations).",
    ),
)
class TaskViewSet(TeamScopedReadViewSet):
    serializer_class = TaskSerializer
    filter_backends: list = []

    def get_queryset(self) -> QuerySet[Task]:
        qs = Task.objects.visible_to(self.request.user).order_by("-completed_at", "-id")
        if self.action == "list":
            filters = monitoring.parse_task_filters(self.request.query_params)
            return monitoring.filter_tasks(qs, filters).defer("messages", "tool_calls", "trace")
        return qs.prefetch_related(
            Prefetch("results", queryset=CheckResult.objects.select_related("check_version").order_by("id"))
        )

    def get_serializer_class(self):
        return TaskDetailSerializer if self.action == "retrieve" else TaskSerializer



# What EvaluationResultSerializer shows of a result's task and check version (field: path), read from
# columns of the result (`listed_<field>`, row_sources).
RESULT_COLUMNS = {
    "external_id": "task__external_id",
    "check": "check_version__parent_id",
    "version": "check_version__number",
    "name": "check_version__name",
}


def monitor_queryset(user, *, listed: bool = False) -> QuerySet[Monitor]:
    """The monitors as MonitorSerializer reads them; `listed`: as the list does (no agent row: the body
    names the agent by id; the checks' shown columns come in a plain list, `listed_checks`, added by
    MonitorViewSet.with_related)."""
    checks = Check.objects.order_by("name", "id")
    if listed:  # the checks: MonitorViewSet.with_related
        return Monitor.objects.visible_to(user).order_by("name", "id")
    return (
        Monitor.objects.visible_to(user)
        .select_related("agent")
        .prefetch_related(Prefetch("checks", queryset=checks))
        .order_by("name", "id")
    )


@extend_schema_view(
    list=extend_schema(summary="List monitors", parameters=[OpenApiParameter("agent", OpenApiTypes.INT)]),
    retrieve=extend_schema(summary="Show a monitor"),
    create=extend_schema(
        summary="Create a monitor",
        description="Checks run on `sample_rate` percent of the "
        "agent's tasks ingested from now on (deterministic per task).",
    ),
    partial_update=extend_schema(summary="Change a monitor", request=MonitorUpdateSerializer),
    update=extend_schema(summary="Replace a monitor's settings", request=MonitorUpdateSerializer),
    destroy=extend_schema(summary="Delete a monitor and its results (admins)"),
)
class MonitorViewSet(TeamScopedViewMixin, ListRowsMixin, viewsets.ModelViewSet):
    serializer_class = MonitorSerializer
    row_sources = {"checks": "listed_checks"}
    filter_backends: list = []

    def get_queryset(self) -> QuerySet[Monitor]:
        return _filter_by_agent(monitor_queryset(self.request.user, listed=self.action == "list"), self)

    def with_related(self, rows):
        # Each monitor's checks (through the many-to-many's join), their shown columns in a plain list.
        checks = Check.objects.order_by("name", "id")
        return attach_rows(rows, "listed_checks", checks, "monitors", ("pk", "name", "kind", "version"))

    def get_serializer_class(self):
        return MonitorUpdateSerializer if self.action in ("update", "partial_update") else MonitorSerializer


    def perform_create(self, serializer):
        data = serializer.validated_data
        serializer.instance = monitoring.create_monitor(
            agent=data["agent"],
            by=self.request.user,
            name=data["name"],
            checks=data.get("checks", []),
            sample_rate=data["sample_rate"],
            active=data.get("active", True),
        )

    def create(self, request, *args, **kwargs):
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        self.perform_create(serializer)
        return self._show(serializer.instance, status.HTTP_201_CREATED)

    def update(self, request, *args, **kwargs):
        monitor = self.get_object()
        serializer = self.get_serializer(monitor, data=request.data, partial=kwargs.get("partial", False))
        serializer.is_valid(raise_exception=True)
        monitoring.update_monitor(monitor=monitor, by=request.user, **serializer.validated_data)
        return self._show(monitor)

    def perform_destroy(self, instance: Monitor) -> None:
        monitoring.delete_monitor(monitor=instance, by=self.request.user)

    @extend_schema(
        summary="A monitor's results over time",
        description="Per check version and time bucket: pass/fail/indeterminate/error counts and "
        "the pass rate, plus the agent's task volume. A check edited after the monitor started "
        "shows one series per version.",
        parameters=[
            OpenApiParameter("bucket", OpenApiTypes.STR, enum=["hour", "day"], description="Default hour."),
            OpenApiParameter(
                "days",
                OpenApiTypes.INT,
                description="Window ending now, 1-365 days (default 2 for hour, 30 for day).",
            ),
        ],
        responses={200: MonitorResultsSerializer},
    )
    @action(detail=True, methods=["get"])
    def results(self, request, pk=None):
        monitor = self.get_object()
        bucket = request.query_params.get("bucket", "hour")
        if bucket not in monitoring.BUCKETS:
            raise ValidationFailed("must be hour or day", field="bucket")
        raw_days = request.query_params.get("days") or ("2" if bucket == "hour" else "30")
        if not (raw_days.isascii() and raw_days.isdigit() and 1 <= int(raw_days) <= 365):
            raise ValidationFailed("must be a whole number of days between 1 and 365", field="days")
        board = monitoring.monitor_dashboard(monitor, bucket=bucket, days=int(raw_days))
        return Response(dashboard_data(monitor, board))


def evaluation_queryset(user) -> QuerySet[Evaluation]:
    return (
        Evaluation.objects.visible_to(user)
        .annotate(task_count=Count("tasks", distinct=True))
        .prefetch_related(
            Prefetch("check_versions", queryset=CheckVersion.objects.order_by("parent__name", "parent_id"))
        )
        .order_by("-created_at", "-id")
    )


@extend_schema_view(
    list=extend_schema(
        summary="List one-off evaluations", parameters=[OpenApiParameter("agent", OpenApiTypes.INT)]
    ),
    retrieve=extend_schema(
        summary="Show an evaluation with its task x check grid",
        description="`grid` has one row per task with each check's outcome (null while "
        "pending); `counts` has the outcome totals per check.",
    ),
)
class EvaluationViewSet(TeamScopedReadViewSet):
    serializer_class = EvaluationSerializer
    filter_backends: list = []

    def get_queryset(self) -> QuerySet[Evaluation]:
        if self.action == "results":  # which evaluation (of the user's teams), no counts or checks
            return _filter_by_agent(Evaluation.objects.visible_to(self.request.user).only("id"), self)
        return _filter_by_agent(evaluation_queryset(self.request.user), self)

    def get_serializer_class(self):
        return EvaluationDetailSerializer if self.action in ("retrieve", "create") else EvaluationSerializer


    @extend_schema(
        summary="Launch a one-off evaluation",
        description="Runs the current versions of `checks` (frozen now) over completed tasks: "
        "`tasks` (ids) or every task of `agent` matching `filter`. Answers 202 at once; "
        "`GET evaluations/{id}/` shows the grid.",
        request=LaunchEvaluationSerializer,
        responses={202: EvaluationDetailSerializer},
    )
    def create(self, request, *args, **kwargs):
        data = self._body(LaunchEvaluationSerializer)
        agent = data.get("agent")
        if agent is None:
            first = (
                Task.objects.visible_to(request.user)
                .filter(pk=data["tasks"][0])
                .select_related("agent")
                .first()
            )
            if first is None:
                raise ValidationFailed(f"task {data['tasks'][0]} does not exist", field="tasks.0")
            agent = first.agent
        problem = json_text_problem(data.get("name", ""))
        if problem:
            raise ValidationFailed(problem, field="name")
        evaluation = monitoring.launch_evaluation(
            agent=agent,
            by=request.user,
            check_ids=data["checks"],
            task_ids=data.get("tasks"),
            filters=monitoring.TaskFilters(**data["filter"]) if "filter" in data else None,
            name=data.get("name", ""),
        )
        return self._show(evaluation, status.HTTP_202_ACCEPTED)

    @extend_schema(
        summary="An evaluation's results with expected, actual and explanation",
        description="Paginated, by task then check.",
        responses={200: EvaluationResultSerializer(many=True)},
    )
    @action(detail=True, methods=["get"], pagination_class=ApiPagination)
    def results(self, request, pk=None):
        evaluation = self.get_object()
        # The task's and check version's shown columns joined into the row (RESULT_COLUMNS), not as a
        # model instance of each per result.
        qs = (
            CheckResult.objects.filter(evaluation=evaluation)
            .only("id", "task", "check_version", *VERDICT_FIELDS)
            .annotate(**{f"listed_{name}": F(path) for name, path in RESULT_COLUMNS.items()})
            .order_by("task_id", "check_version__parent_id")
        )
        page = self.paginate_queryset(qs)
        sources = {name: f"listed_{name}" for name in RESULT_COLUMNS}
        return self.get_paginated_response(list_rows(EvaluationResultSerializer, page, {}, sources))
