"""REST API v1: runs (launch → 202, read, samples, export, cancel). Thin over runs.services."""

from __future__ import annotations

import django_filters
from django.db.models import Prefetch, QuerySet
from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response

from agents.models import Agent
from checks import api as checks_api
from checks.kinds import Outcome
from checks.models import Test, TestSet
from core.api import ListFilterSet, export_action, object_action, unpaged_action
from core.rows import plain_list, related_rows
from runs import export as run_export
from runs.compare import batch_groups
from runs.models import CheckResult, Run, RunCheck, Sample
from runs.serializers import (
    RUN_ROW_COLUMNS,
    SAMPLE_RESULT_VALUES,
    SAMPLE_ROW_COLUMNS,
    BatchSerializer,
    LaunchBatchSerializer,
    LaunchedRunsSerializer,
    LaunchedTrialsSerializer,
    LaunchRunSerializer,
    LaunchTestSetSerializer,
    LaunchTrialsSerializer,
    RunSerializer,
    SampleSerializer,
    SampleWorldSerializer,
    batch_data,
    run_rows,
    sample_rows,
)
from teams.api import TeamScopedReadViewSet
from teams.models import ApiToken
from worlds.services import WorldMissing
from worlds.trial_files import trial_files


def _visible(model):
    def queryset(request):
        return model.objects.visible_to(getattr(request, "user", None))

    return queryset


class RunFilter(ListFilterSet):
    agent = django_filters.ModelChoiceFilter(queryset=_visible(Agent))
    test = django_filters.ModelChoiceFilter(queryset=_visible(Test))
    test_set = django_filters.ModelChoiceFilter(queryset=_visible(TestSet), field_name="test__test_set")
    status = django_filters.ChoiceFilter(choices=Run.Status.choices)
    result = django_filters.ChoiceFilter(choices=Outcome.choices)
    batch = django_filters.CharFilter(help_text="Runs launched together (one test set launch).")
    created_after = django_filters.IsoDateTimeFilter(
        field_name="created_at", lookup_expr="gte", help_text="ISO 8601; inclusive."
    )
    created_before = django_filters.IsoDateTimeFilter(
        field_name="created_at", lookup_expr="lt", help_text="ISO 8601; exclusive."
    )

    class Meta:
        model = Run
        fields = ["agent", "test", "test_set", "status", "result", "batch", "created_after", "created_before"]


EXPORTED = "The download (`Content-Disposition: attachment`). CSV columns: {}.".format(
    ", ".join(run_export.CSV_COLUMNS)
)


def _token(request) -> ApiToken | None:
    return request.auth if isinstance(request.auth, ApiToken) else None


# What RunSerializer reads, and no more: the run's related rows hold JSON and text columns (an agent's
# headers, a check's config) that a list of 50 runs would otherwise decode for nothing.
RUN_COLUMNS = (
    *(f.attname for f in Run._meta.concrete_fields if f.name != "launched_by_token"),
    "test__test_set_id",
    *(f"test_version__{name}" for name in ("number", "name", "scenarios", "samples_per_scenario")),
    *(f"test_version__{name}" for name in ("min_valid_per_scenario", "required_pass_rate")),
    "launched_by__username",
)
RUN_CHECK_COLUMNS = (
    *("run_id", "required", "additional", "position", "check_version_id"),
    *(f"check_version__{name}" for name in ("parent_id", "number", "name", "kind")),
)


# A run's check versions as RunSerializer shows them (runs.serializers._check_rows).
RUN_CHECK_VALUES = (
    *("check_version__parent_id", "check_version_id", "check_version__number"),
    *("check_version__name", "check_version__kind", "required", "additional"),
)


def run_queryset(user) -> QuerySet[Run]:
    """The runs as RunSerializer reads them (the list reads RUN_ROW_COLUMNS instead)."""
    runs = Run.objects.visible_to(user).order_by("-created_at", "-id")
    runs = runs.select_related("test", "test_version", "launched_by").only(*RUN_COLUMNS)
    run_checks = RunCheck.objects.select_related("check_version").only(*RUN_CHECK_COLUMNS)
    return runs.prefetch_related(Prefetch("run_checks", queryset=run_checks.order_by("position")))


@extend_schema_view(
    list=extend_schema(
        summary="List runs", description="Newest first; filter by agent, test, status, result, creation time."
    ),
    retrieve=extend_schema(
        summary="Show a run",
        description="Status, result, per-scenario counts and pass rates, the check versions it used.",
    ),
)
class RunViewSet(TeamScopedReadViewSet):
    serializer_class = RunSerializer
    filterset_class = RunFilter

    def get_queryset(self) -> QuerySet[Run]:
        if self.action == "batch":
            return Run.objects.visible_to(self.request.user).select_related("test", "test_version")
        if self.action == "samples":  # the run's scenario names, nothing else
            runs = Run.objects.visible_to(self.request.user).select_related("test_version")
            return runs.only("id", "test_version", "test_version__scenarios")
        if self.action in ("export", "sample_world"):  # only the run's scenarios are read
            return Run.objects.visible_to(self.request.user).select_related("agent", "test_version")
        if self.action == "list":  # read as RUN_ROW_COLUMNS tuples
            return Run.objects.visible_to(self.request.user).order_by("-created_at", "-id")
        return run_queryset(self.request.user)

    @extend_schema(
        summary="Launch a run of a test",
        description="Queues one run of the test's current version (plus additional checks). Answers 202 at "
        "once; poll `GET runs/{id}/` until `status` is `completed` or `cancelled`.",
        request=LaunchRunSerializer,
        responses={202: RunSerializer},
    )
    def create(self, request, *args, **kwargs):
        from runs import services

        if isinstance(request.data, dict) and "trials" in request.data:
            raise ValidationError({"trials": ["To launch several trials, POST them to runs/trials/."]})
        data = self._body(LaunchRunSerializer)
        run = services.launch_run(
            test=data["test"],
            by=request.user,
            additional_checks=data.get("additional_checks", []),
            token=_token(request),
        )
        return self._show(run, status.HTTP_202_ACCEPTED)

    @extend_schema(
        summary="Launch trials: a test run N times as one batch",
        description="Queues `trials` runs of the test's current version under one batch id (all or none; "
        "each run within the per-run sample limit). 202 with the batch id and the runs; "
        "`GET runs/batches/{batch}/` then gives pass^k and pass@k per scenario over every trial's samples.",
        request=LaunchTrialsSerializer,
        responses={202: LaunchedTrialsSerializer},
    )
    @unpaged_action(detail=False, methods=["post"])
    def trials(self, request):
        from runs import services

        data = self._body(LaunchTrialsSerializer)
        runs = services.launch_trials(
            test=data["test"],
            by=request.user,
            trials=data["trials"],
            additional_checks=data.get("additional_checks", []),
            token=_token(request),
        )
        return _launched(self, request, runs, batch=True)

    @extend_schema(
        summary="Launch several runs as one batch",
        description="One run per entry of `tests` (a test may repeat), each with the `additional_checks`, "
        "under one batch id: all or none, in one transaction, handed to the workers at once. 202 with the "
        "batch id and the runs (in the order of `tests`); `GET runs/batches/{batch}/` gives their pooled "
        "consistency. "
        "At most `EVALCONSOLE_MAX_BATCH_RUNS` (200) runs; a test you cannot see is a 400 naming its place in "
        "`tests`.",
        request=LaunchBatchSerializer,
        responses={202: LaunchedTrialsSerializer},
    )
    @unpaged_action(detail=False, methods=["post"], url_path="batch", url_name="launch-batch")
    def launch_batch(self, request):
        from runs import services

        data = self._body(LaunchBatchSerializer)
        tests, extra = data["tests"], data.get("additional_checks", [])
        runs = services.launch_batch(
            tests=tests, by=request.user, additional_checks=extra, token=_token(request)
        )
        return _launched(self, request, runs, batch=True)

    @object_action(
        BatchSerializer,
        detail=False,
        url_path=r"batches/(?P<batch>[0-9A-Za-z_-]{1,40})",
        summary="A batch's consistency (trials, or a test set's launch)",
        description="Per test of the batch: its runs, and pass^k / pass@k per scenario over the samples of "
        "all those runs pooled (k up to runs × samples per scenario), with their mean. Figures of runs still "
        "going are the figures so far. 404 when no run of yours has this batch id.",
        missing="No such batch.",
    )
    def batch(self, request, batch=None):
        groups = batch_groups(list(self.get_queryset().filter(batch=batch)))
        if not groups:
            raise NotFound("No run of yours has this batch id.")
        return Response(BatchSerializer(batch_data(batch, groups)).data)

    @extend_schema(
        summary="Cancel a run",
        description="Queued samples are not called; the run ends as `cancelled`. 409 if it already finished.",
        request=None,
        responses={200: RunSerializer, 409: OpenApiResponse(description="The run already finished.")},
    )
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        from runs import services

        run = services.cancel_run(run=self.get_object(), by=request.user)
        return self._show(run)

    @extend_schema(
        summary="A run's samples with their check results",
        description="In scenario order, then sample order; paginated.",
        responses={200: SampleSerializer(many=True)},
        filters=False,
    )
    @action(detail=True, methods=["get"], serializer_class=SampleSerializer, filterset_class=None)
    def samples(self, request, pk=None):
        run = self.get_object()
        # Not shown: what the worker keeps (the request sent, attempts, lease), the results' details and
        # times, and the check versions' config.
        samples = Sample.objects.filter(run=run).order_by("scenario_index", "sample_index", "id")
        results = CheckResult.objects.order_by("id")
        names = run_export.scenario_names(run)

        def draw(page):
            return sample_rows(page, related_rows(page, results, "sample", SAMPLE_RESULT_VALUES), names)

        return plain_list(self, samples.values_list(*SAMPLE_ROW_COLUMNS), draw)

    @object_action(
        SampleWorldSerializer,
        detail=True,
        url_path=r"samples/(?P<sample_id>[0-9]{1,18})/world",
        summary="A scene sample's world: its trace, events and final state",
        description="The files of one trial (WORLDS.md \"Results\"): `trace` (trace.json), `events` "
        "(events.json) and `final_state` (world.json). No credentials. 404 when the sample is not in this "
        "run or plays no scene (a test of plain scenarios). Read while the trial runs, it is the world so "
        "far.",
        missing="No such sample, or no world.",
    )
    def sample_world(self, request, pk=None, sample_id=None):
        run = self.get_object()  # another team's run is a 404
        world_id = (
            Sample.objects.filter(run=run, pk=int(sample_id)).values_list("world_id", flat=True).first()
        )
        if not world_id:
            raise NotFound("This run has no such sample with a world.")
        try:
            files = trial_files(world_id)
        except WorldMissing:
            raise NotFound("This sample's world is gone.") from None
        return Response(SampleWorldSerializer(files).data)

    @extend_schema(
        summary="Export a run's samples and check results (CSV or JSON)",
        description="A download of every sample of the run and its check results, streamed. "
        "`format=json` (the default): an array of samples exactly as `GET runs/{id}/samples/` shows them, "
        "unpaginated. `format=csv`: one row per check result (a sample without results is one row with "
        "empty check columns); text cells starting with `=`, `+`, `-`, `@`, a tab or a carriage return "
        "get a leading `'` so a spreadsheet never runs them as formulas. The run page links here.",
        parameters=[
            OpenApiParameter(
                "format",
                str,
                enum=list(run_export.FORMATS),
                default="json",
                description="csv or json.",
            )
        ],
        responses={
            (200, "application/json"): OpenApiResponse(SampleSerializer(many=True), description=EXPORTED),
            (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description=EXPORTED),
        },
        operation_id="v1_runs_export",
        filters=False,
    )
    @export_action()
    def export(self, request, pk=None, format=None):
        run = self.get_object()  # another team's run is a 404 whatever the format
        fmt = request.query_params.get("format") or format or "json"  # `?format=` or `export.csv`
        if fmt not in run_export.FORMATS:
            raise ValidationError({"format": [f"Must be csv or json, not {fmt[:20]!r}."]})
        body = run_export.stream(run, fmt, self.get_serializer_context())
        response = StreamingHttpResponse(body, content_type=run_export.CONTENT_TYPES[fmt])
        response["Content-Disposition"] = f'attachment; filename="{run_export.filename(run, fmt)}"'
        return response

    # Last in the class: the name `list` would hide the builtin from the class body below it.
    def list(self, request, *args, **kwargs):
        runs = self.filter_queryset(self.get_queryset()).values_list(*RUN_ROW_COLUMNS)
        checks = RunCheck.objects.order_by("position")

        def draw(page):
            return run_rows(page, related_rows(page, checks, "run", RUN_CHECK_VALUES), request)

        return plain_list(self, runs, draw)


def launch_test_set_response(view, request, test_set: TestSet) -> Response:
    """`POST test-sets/{id}/runs/`: one run per active test of the set, 202 with the runs."""
    from runs import services

    data = view._body(LaunchTestSetSerializer)
    runs = services.launch_test_set(
        test_set=test_set,
        by=request.user,
        additional_checks=data.get("additional_checks", []),
        token=_token(request),
    )
    return _launched(view, request, runs, batch=False)


def _launched(view, request, runs: list[Run], *, batch: bool) -> Response:
    """202 with the launched runs re-read in one go (related rows loaded), in launch order."""
    fresh = {run.pk: run for run in run_queryset(request.user).filter(pk__in=[r.pk for r in runs])}
    data = {"runs": [fresh[r.pk] for r in runs]}
    if batch:
        data["batch"] = runs[0].batch
        body = LaunchedTrialsSerializer(data, context=view.get_serializer_context())
    else:
        body = LaunchedRunsSerializer(data, context=view.get_serializer_context())
    return Response(body.data, status=status.HTTP_202_ACCEPTED)


# Test sets, plus launching one: `POST test-sets/{id}/runs/` (creating runs is this app's part).
class TestSetViewSet(checks_api.TestSetViewSet):
    @extend_schema(
        summary="Launch every active test of the set",
        description="One run per test (each with the additional checks). 202: the runs are queued.",
        request=LaunchTestSetSerializer,
        responses={202: LaunchedRunsSerializer},
    )
    @action(detail=True, methods=["post"], filterset_class=None)
    def runs(self, request, pk=None):
        return launch_test_set_response(self, request, self.get_object())
