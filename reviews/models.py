"""Human review: queues of samples and tasks, and the labels people give each item per check version.

A label belongs to the item and to the check version whose result the reviewer judged; a new version of
the check starts with no labels of its own (its calibration figures start afresh) and the old labels stay
with the old version.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.db.models.functions import Coalesce
from django.urls import reverse

from checks.models import CheckVersion
from core.urls import NamedPage
from runs.models import CheckResult, Sample
from teams.models import Team, TeamScopedQuerySet


class ReviewQueueQuerySet(TeamScopedQuerySet):
    team_path = "team"

    def with_counts(self):
        """`item_count` and `labelled_count` (items with at least one label): one subquery each."""

        def count(items):
            grouped = (
                items.order_by().values("queue").annotate(n=models.Count("pk", distinct=True)).values("n")
            )
            return Coalesce(models.Subquery(grouped, output_field=models.IntegerField()), 0)

        items = ReviewItem.objects.filter(queue=models.OuterRef("pk"))
        return self.annotate(
            item_count=count(items), labelled_count=count(items.filter(labels__isnull=False))
        )


class ReviewQueue(NamedPage, models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="review_queues")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    detail_route = "reviews:queue-detail"
    objects = ReviewQueueQuerySet.as_manager()

    class Meta:
        ordering = ["name", "id"]
        constraints = [models.UniqueConstraint(fields=["team", "name"], name="reviewqueue_unique_team_name")]


class ReviewItemQuerySet(TeamScopedQuerySet):
    team_path = "queue__team"


# What an item shows of each check result (page and API): its outcome and which check version gave it.
SHOWN_RESULT_COLUMNS = (
    *("id", "outcome", "sample_id", "task_id"),
    *(f"check_version__{name}" for name in ("id", "parent_id", "number", "name", "kind")),
)


def shown_results():
    """The check results of the items' samples and tasks, as review pages and the API show them."""
    return CheckResult.objects.select_related("check_version").only(*SHOWN_RESULT_COLUMNS)


class ReviewItem(models.Model):
    """One sample (of a run) or one task (live traffic) to review, with the check results it had."""

    queue = models.ForeignKey(ReviewQueue, on_delete=models.CASCADE, related_name="items")
    sample = models.ForeignKey(
        Sample, on_delete=models.CASCADE, null=True, blank=True, related_name="review_items"
    )
    task = models.ForeignKey(
        "monitors.Task", on_delete=models.CASCADE, null=True, blank=True, related_name="review_items"
    )
    position = models.PositiveIntegerField()
    added_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    added_at = models.DateTimeField(auto_now_add=True)

    objects = ReviewItemQuerySet.as_manager()

    class Meta:
        ordering = ["queue", "position"]
        constraints = [
            models.CheckConstraint(
                condition=Q(sample__isnull=False, task__isnull=True)
                | Q(sample__isnull=True, task__isnull=False),
                name="reviewitem_sample_xor_task",
            ),
            models.UniqueConstraint(
                fields=["queue", "sample"], condition=Q(sample__isnull=False), name="reviewitem_unique_sample"
            ),
            models.UniqueConstraint(
                fields=["queue", "task"], condition=Q(task__isnull=False), name="reviewitem_unique_task"
            ),
            models.UniqueConstraint(fields=["queue", "position"], name="reviewitem_unique_position"),
        ]

    def __str__(self) -> str:
        return f"Item {self.position} of {self.queue}"

    def get_absolute_url(self) -> str:
        return reverse("reviews:item-review", args=[self.queue_id, self.pk])

    @property
    def kind(self) -> str:
        return "sample" if self.sample_id else "task"


class LabelQuerySet(TeamScopedQuerySet):
    team_path = "item__queue__team"


class Label(models.Model):
    """A person's pass/fail for one check version on one item (the result they saw), with a note."""

    class Verdict(models.TextChoices):
        PASS = "pass", "Pass"
        FAIL = "fail", "Fail"

    item = models.ForeignKey(ReviewItem, on_delete=models.CASCADE, related_name="labels")
    check_version = models.ForeignKey(CheckVersion, on_delete=models.PROTECT, related_name="review_labels")
    # The result the reviewer was shown (the judge's verdict for calibration), of `check_version`.
    result = models.ForeignKey(CheckResult, on_delete=models.CASCADE, related_name="review_labels")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="review_labels"
    )
    verdict = models.CharField(max_length=4, choices=Verdict.choices)
    note = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = LabelQuerySet.as_manager()

    class Meta:
        ordering = ["item", "check_version", "created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["item", "check_version", "reviewer"], name="label_unique_reviewer"
            ),
        ]
        indexes = [models.Index(fields=["check_version", "created_at"], name="label_version_created")]

    def __str__(self) -> str:
        return f"{self.reviewer}: {self.verdict} on {self.check_version} ({self.item})"
