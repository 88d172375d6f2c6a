"""Shapes of the review API (validation of values is the services')."""

from __future__ import annotations

from rest_framework import serializers

from checks.kinds import Outcome
from checks.models import Check
from core.api import VisibleRelatedField, row_function
from core.rows import datetime_text
from monitors.models import Monitor
from reviews.models import Label, ReviewItem, ReviewQueue
from runs.models import Run
from teams.models import Team


class ReviewQueueSerializer(serializers.ModelSerializer):
    team = serializers.IntegerField(source="team_id", read_only=True)
    created_by = serializers.CharField(source="created_by.username", read_only=True, default=None)
    items = serializers.IntegerField(source="item_count", read_only=True, help_text="Items in the queue.")
    labelled = serializers.IntegerField(
        source="labelled_count", read_only=True, help_text="Items with at least one label."
    )

    class Meta:
        model = ReviewQueue
        fields = ["id", "team", "name", "description", "created_by", "created_at", "items", "labelled"]
        read_only_fields = fields


# What the queues list reads of each queue (with ReviewQueueQuerySet.with_counts), in this order.
QUEUE_ROW_COLUMNS = (
    *("id", "team_id", "name", "description", "created_by__username", "created_at"),
    *("item_count", "labelled_count"),
)


def queue_rows(page: list[tuple]) -> list[dict]:
    """ReviewQueueSerializer's body of each queue of `page` (QUEUE_ROW_COLUMNS tuples), without a model
    instance or DRF's per-field dispatch."""
    when = datetime_text()
    return [
        {
            "id": pk,
            "team": team,
            "name": name,
            "description": description,
            "created_by": author,
            "created_at": when(created),
            "items": None if items is None else int(items),
            "labelled": None if labelled is None else int(labelled),
        }
        for pk, team, name, description, author, created, items, labelled in page
    ]


class ReviewQueueCreateSerializer(serializers.Serializer):
    team = VisibleRelatedField(
        Team, noun="Team", required=False, help_text="Optional when you belong to one team."
    )
    name = serializers.CharField(max_length=200)
    description = serializers.CharField(required=False, allow_blank=True, max_length=2000)


class ItemResultSerializer(serializers.Serializer):
    check_id = serializers.IntegerField(source="check_version.parent_id")
    check_version = serializers.IntegerField(source="check_version_id")
    version = serializers.IntegerField(source="check_version.number")
    name = serializers.CharField(source="check_version.name")
    kind = serializers.CharField(source="check_version.kind")
    outcome = serializers.ChoiceField(choices=Outcome.choices)


class LabelSerializer(serializers.ModelSerializer):
    item = serializers.IntegerField(source="item_id", read_only=True)
    check_id = serializers.IntegerField(source="check_version.parent_id", read_only=True)
    version = serializers.IntegerField(source="check_version.number", read_only=True)
    check_version = serializers.IntegerField(source="check_version_id", read_only=True)
    result_outcome = serializers.CharField(
        source="result.outcome",
        read_only=True,
        help_text="What the check said of the item (the judge, for an AI judge).",
    )
    reviewer = serializers.CharField(source="reviewer.username", read_only=True)

    class Meta:
        model = Label
        fields = [
            "id",
            "item",
            "check_id",
            "check_version",
            "version",
            "result_outcome",
            "verdict",
            "note",
            "reviewer",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


class ReviewItemSerializer(serializers.ModelSerializer):
    kind = serializers.CharField(read_only=True, help_text="sample or task")
    run = serializers.IntegerField(source="sample.run_id", read_only=True, default=None)
    results = serializers.SerializerMethodField()
    labels = LabelSerializer(many=True, read_only=True)

    class Meta:
        model = ReviewItem
        fields = ["id", "position", "kind", "sample", "run", "task", "added_at", "results", "labels"]
        read_only_fields = fields

    def get_results(self, item) -> list[dict]:
        owner = item.sample if item.sample_id else item.task
        # The list's prefetch keeps them in `fetched_results` (reviews.api); a new queryset per row costs.
        rows = getattr(owner, "fetched_results", None)
        rows = owner.results.all() if rows is None else rows
        child = self.__dict__.get("_result_child")
        if child is None:  # one row function for every row's results: binding fields costs per instance
            child = self.__dict__["_result_child"] = row_function(ItemResultSerializer())
        return [child(row) for row in sorted(rows, key=lambda r: r.pk)]


# What the items list reads of each item, in this order; of each result of its sample or task (in id
# order); and of each of its labels (in the order they were made). review_item_rows draws the rows.
REVIEW_ITEM_COLUMNS = ("id", "position", "sample_id", "task_id", "sample__run_id", "added_at")
ITEM_SAMPLE, ITEM_TASK = REVIEW_ITEM_COLUMNS.index("sample_id"), REVIEW_ITEM_COLUMNS.index("task_id")
ITEM_RESULT_VALUES = (
    "check_version__parent_id",
    "check_version_id",
    *(f"check_version__{name}" for name in ("number", "name", "kind")),
    "outcome",
)
ITEM_LABEL_VALUES = (
    *("id", "check_version__parent_id", "check_version_id", "check_version__number", "result__outcome"),
    *("verdict", "note", "reviewer__username", "created_at", "updated_at"),
)


def review_item_rows(
    page: list[tuple], results: dict[str, dict[int, list[tuple]]], labels: dict[int, list[tuple]]
) -> list[dict]:
    """ReviewItemSerializer's body of each item of `page` (REVIEW_ITEM_COLUMNS tuples) with the results of
    its sample or task (`results["sample"]`, `results["task"]`: owner id → ITEM_RESULT_VALUES tuples) and
    its labels (item id → ITEM_LABEL_VALUES tuples), without a model instance or DRF's per-field dispatch."""
    when = datetime_text()
    rows = []
    for pk, position, sample, task, run, added in page:
        owned = results["sample"][sample] if sample else results["task"][task]
        rows.append(
            {
                "id": pk,
                "position": position,
                "kind": "sample" if sample else "task",
                "sample": sample,
                "run": run,
                "task": task,
                "added_at": when(added),
                "results": [
                    {"check_id": c, "check_version": v, "version": n, "name": name, "kind": k, "outcome": o}
                    for c, v, n, name, k, o in owned
                ],
                "labels": [
                    {
                        "id": label,
                        "item": pk,
                        "check_id": check,
                        "check_version": version,
                        "version": number,
                        "result_outcome": outcome,
                        "verdict": verdict,
                        "note": note,
                        "reviewer": reviewer,
                        "created_at": when(created),
                        "updated_at": when(updated),
                    }
                    for label, check, version, number, outcome, verdict, note, reviewer, created, updated in (
                        labels[pk]
                    )
                ],
            }
        )
    return rows


class SendSerializer(serializers.Serializer):
    """One of: `run` (samples; narrowed by `check` and `outcome`), `monitor` (tasks it evaluated; narrowed
    the same way) or `tasks` (ids)."""

    run = VisibleRelatedField(Run, noun="Run", required=False)
    monitor = VisibleRelatedField(Monitor, noun="Monitor", required=False)
    tasks = serializers.ListField(child=serializers.IntegerField(min_value=1), required=False, max_length=500)
    check = VisibleRelatedField(Check, noun="Check", required=False)
    outcome = serializers.ChoiceField(choices=Outcome.choices, required=False)

    def validate(self, attrs):
        given = [k for k in ("run", "monitor", "tasks") if k in attrs]
        if len(given) != 1:
            raise serializers.ValidationError({"run": ["send exactly one of run, monitor or tasks"]})
        if "tasks" in attrs and ("check" in attrs or "outcome" in attrs):
            raise serializers.ValidationError({"check": ["check and outcome narrow a run or a monitor only"]})
        return attrs


class SentSerializer(serializers.Serializer):
    queue = serializers.IntegerField(source="queue.pk")
    added = serializers.IntegerField()
    already = serializers.IntegerField(help_text="Matching items the queue already held (left as they were).")


class LabelWriteSerializer(serializers.Serializer):
    item = serializers.IntegerField(min_value=1, help_text="An item of this queue.")
    check_version = serializers.IntegerField(
        min_value=1, help_text="The check version (id) whose result on the item you judge."
    )
    verdict = serializers.ChoiceField(choices=Label.Verdict.choices)
    note = serializers.CharField(required=False, allow_blank=True, max_length=2000, trim_whitespace=False)


class ConfusionSerializer(serializers.Serializer):
    pass_pass = serializers.IntegerField(help_text="Judge pass, people pass.")
    pass_fail = serializers.IntegerField(help_text="Judge pass, people fail.")
    fail_pass = serializers.IntegerField(help_text="Judge fail, people pass.")
    fail_fail = serializers.IntegerField(help_text="Judge fail, people fail.")


class InterReviewerSerializer(serializers.Serializer):
    items = serializers.IntegerField(
        help_text="Items labelled by two reviewers or more (the first two count)."
    )
    agreement = serializers.FloatField(allow_null=True)
    kappa = serializers.FloatField(allow_null=True)


class CalibrationSerializer(serializers.Serializer):
    check = serializers.IntegerField()
    version = serializers.IntegerField(help_text="The check version these figures are of.")
    labels = serializers.IntegerField(help_text="Labels compared with a pass or fail result.")
    agreement = serializers.FloatField(allow_null=True, help_text="Percent of labels the check agreed with.")
    kappa = serializers.FloatField(
        allow_null=True, help_text="Cohen's kappa; null without labels or with one class only."
    )
    confusion = ConfusionSerializer()
    not_compared = serializers.IntegerField(help_text="Labels on indeterminate or errored results.")
    inter_reviewer = InterReviewerSerializer()
