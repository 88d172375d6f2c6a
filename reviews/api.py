"""REST API v1 of human review: queues, their items and labels, label exports, and a check's calibration.

Thin over reviews.services (writes) and reviews.calibration (figures). Viewers read; members create queues,
send items and label; another team's queue or check is a 404.
"""

from __future__ import annotations

from django.db.models import QuerySet
from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from checks.models import Check, CheckVersion
from core.api import collection_action, export_action, list_rows
from core.ids import id_from_text
from core.rows import plain_list, related_rows
from reviews import calibration, services
from reviews import export as label_export
from reviews.models import Label, ReviewItem, ReviewQueue
from reviews.serializers import (
    ITEM_LABEL_VALUES,
    ITEM_RESULT_VALUES,
    ITEM_SAMPLE,
    ITEM_TASK,
    QUEUE_ROW_COLUMNS,
    REVIEW_ITEM_COLUMNS,
    CalibrationSerializer,
    LabelSerializer,
    LabelWriteSerializer,
    ReviewItemSerializer,
    ReviewQueueCreateSerializer,
    ReviewQueueSerializer,
    SendSerializer,
    SentSerializer,
    queue_rows,
    review_item_rows,
)
from runs.models import CheckResult
from teams.api import TeamScopedReadViewSet, TeamScopedViewMixin, default_team


def _int(raw) -> int:
    return id_from_text(str(raw or "")) or 0


@extend_schema_view(
    list=extend_schema(
        summary="List review queues", description="Queues of your teams, by name, with counts."
    ),
    retrieve=extend_schema(summary="Show a review queue"),
)
class ReviewQueueViewSet(mixins.CreateModelMixin, TeamScopedReadViewSet):
    serializer_class = ReviewQueueSerializer
    filterset_class = None

    def get_queryset(self) -> QuerySet[ReviewQueue]:
        queues = ReviewQueue.objects.visible_to(self.request.user)
        if self.action != "list":  # the list reads QUEUE_ROW_COLUMNS tuples
            queues = queues.select_related("created_by")
        if self.action in ("list", "retrieve", "create"):
            queues = queues.with_counts()
        return queues.order_by("name", "id")

    @extend_schema(
        summary="Create a review queue",
        request=ReviewQueueCreateSerializer,
        responses={201: ReviewQueueSerializer},
    )
    def create(self, request, *args, **kwargs):
        data = self._body(ReviewQueueCreateSerializer)
        team = data.pop("team", None) or default_team(request.user)
        return self._show(services.create_queue(team=team, by=request.user, **data), status.HTTP_201_CREATED)

    def _item_rows(self, page: list[tuple]) -> list[dict]:
        """The items list's rows of `page` (REVIEW_ITEM_COLUMNS tuples): each item's sample's or task's
        results and its labels, one query each (none when the page has no such rows)."""
        found = CheckResult.objects.order_by("id")
        results = {
            "sample": related_rows(page, found, "sample", ITEM_RESULT_VALUES, key=ITEM_SAMPLE),
            "task": related_rows(page, found, "task", ITEM_RESULT_VALUES, key=ITEM_TASK),
        }
        labels = related_rows(page, Label.objects.order_by("created_at", "id"), "item", ITEM_LABEL_VALUES)
        return review_item_rows(page, results, labels)

    @collection_action(
        ReviewItemSerializer,
        list_summary="A queue's items with their check results and labels",
        add_summary="Send samples or tasks to the queue",
        add_description=f"One of `run` (its finished samples; with `check`, those whose result of that check "
        f"had `outcome`, or every one it judged; with `outcome` only, samples of that overall outcome), "
        f"`monitor` (tasks it evaluated, narrowed the same way) or `tasks` (ids). At most "
        f"{services.MAX_ITEMS_PER_SEND} new items a send (400 beyond); items already in the queue stay.",
        request=SendSerializer,
        responses={201: SentSerializer},
    )
    def items(self, request, pk=None):
        queue = self.get_object()  # another team's queue is a 404; a viewer's POST a 403
        if request.method == "POST":
            data = self._body(SendSerializer)
            if "run" in data:
                sent = services.send_samples(
                    queue=queue,
                    run=data["run"],
                    by=request.user,
                    check=data.get("check"),
                    outcome=data.get("outcome"),
                )
            else:
                sent = services.send_tasks(
                    queue=queue,
                    by=request.user,
                    monitor=data.get("monitor"),
                    task_ids=data.get("tasks"),
                    check=data.get("check"),
                    outcome=data.get("outcome"),
                )
            return Response(SentSerializer(sent).data, status=status.HTTP_201_CREATED)
        items = ReviewItem.objects.filter(queue=queue).order_by("position").values_list(*REVIEW_ITEM_COLUMNS)
        return plain_list(self, items, self._item_rows)

    @collection_action(
        LabelSerializer,
        list_summary="A queue's labels",
        add_summary="Label an item (pass or fail for one check version)",
        add_description="Your label: posting again for the same item and check version changes it (200); "
        "another reviewer's label stays. `check_version` must have a result on the item.",
        request=LabelWriteSerializer,
        responses={201: LabelSerializer, 200: LabelSerializer},
    )
    def labels(self, request, pk=None):
        queue = self.get_object()
        if request.method == "POST":
            data = self._body(LabelWriteSerializer)
            item = (
                ReviewItem.objects.filter(queue=queue, pk=data["item"]).select_related("queue__team").first()
            )
            if item is None:
                raise ValidationError({"item": [f"Item {data['item']} does not exist in this queue."]})
            version = CheckVersion.objects.filter(
                pk=data["check_version"], parent__agent__team=queue.team
            ).first()
            if version is None:
                raise ValidationError(
                    {"check_version": [f"Check version {data['check_version']} does not exist."]}
                )
            existed = Label.objects.filter(item=item, check_version=version, reviewer=request.user).exists()
            label = services.label_item(
                item=item,
                check_version=version,
                by=request.user,
                verdict=data["verdict"],
                note=data.get("note", ""),
            )
            fresh = Label.objects.select_related("reviewer", "check_version", "result").get(pk=label.pk)
            return Response(
                LabelSerializer(fresh).data, status=status.HTTP_200_OK if existed else status.HTTP_201_CREATED
            )
        labels = (
            Label.objects.filter(item__queue=queue)
            .select_related("reviewer", "check_version", "result")
            .defer("result__details", "result__evidence")
            .order_by("item__position", "created_at", "id")
        )
        page = self.paginate_queryset(labels)
        return self.get_paginated_response(list_rows(LabelSerializer, page, {}))

    @extend_schema(
        summary="Export a queue's labels (CSV or JSON Lines)",
        description="A download, streamed, one label a row: columns " + ", ".join(label_export.COLUMNS) + ". "
        "Text cells a spreadsheet would run as a formula get a leading `'` in CSV.",
        parameters=[OpenApiParameter("format", str, enum=list(label_export.FORMATS), default="csv")],
        responses={
            (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR),
            (200, "application/x-ndjson"): OpenApiResponse(OpenApiTypes.STR),
        },
        operation_id="v1_review_queues_export",
        filters=False,
    )
    @export_action()
    def export(self, request, pk=None, format=None):
        queue = self.get_object()
        fmt = request.query_params.get("format") or format or "csv"
        if fmt not in label_export.FORMATS:
            raise ValidationError({"format": [f"Must be csv or jsonl, not {fmt[:20]!r}."]})
        response = StreamingHttpResponse(
            label_export.stream(queue, fmt), content_type=label_export.CONTENT_TYPES[fmt]
        )
        response["Content-Disposition"] = f'attachment; filename="{label_export.filename(queue, fmt)}"'
        return response

    # Last in the class: the name `list` would hide the builtin from the class body below it.
    def list(self, request, *args, **kwargs):
        queues = self.filter_queryset(self.get_queryset()).values_list(*QUEUE_ROW_COLUMNS)
        return plain_list(self, queues, queue_rows)


# `GET checks/{id}/calibration/`: a second viewset under the checks/ prefix with only this action (checks'
# own viewset knows nothing of reviews, a floor above it).
class CheckCalibrationViewSet(TeamScopedViewMixin, viewsets.GenericViewSet):
    serializer_class = CalibrationSerializer
    pagination_class = None
    filterset_class = None

    def get_queryset(self) -> QuerySet[Check]:
        return Check.objects.visible_to(self.request.user)

    @extend_schema(
        summary="How far a check (an AI judge) agrees with people's labels",
        description="Figures of one check version (`?version=N`, default the current one): labels compared, "
        "percent agreement, Cohen's kappa (null without labels, or when every label and result is one class) "
        "and the confusion matrix, judge first and people second. A new version starts its own figures.",
        parameters=[OpenApiParameter("version", int, required=False, description="Version number.")],
        responses={200: CalibrationSerializer},
        filters=False,
    )
    @action(detail=True, methods=["get"], filterset_class=None)
    def calibration(self, request, pk=None):
        check = get_object_or_404(self.get_queryset(), pk=_int(pk))
        versions = calibration.check_versions(check)
        raw = request.query_params.get("version")
        if raw is not None and not any(v.number == _int(raw) for v in versions):
            raise ValidationError({"version": [f"Check {check.pk} has no version {raw[:20]!r}."]})
        version = calibration.pick_version(versions, raw, check.version)
        return Response(CalibrationSerializer(calibration.calibrate(version).as_dict()).data)
