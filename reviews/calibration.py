"""Reading the labels back: how far a judge check version agrees with people, and people with each other.

Reads only (the writes are in services.py). One query for a version's labels whatever their number; the
figures come from the pure agreement module.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from checks.models import Check, CheckVersion
from reviews.agreement import VERDICTS, Agreement, agreement
from reviews.models import Label

DISAGREEMENTS_SHOWN = 50


@dataclass
class Calibration:
    """The figures of one check version: judge (first) against human labels (second)."""

    version: CheckVersion
    labels: int  # every label made on this version
    judge: Agreement  # pairs whose judge result was pass or fail
    not_compared: int  # labels on results that were indeterminate or errored
    reviewers: Agreement  # first two reviewers of items labelled twice or more
    disagreements: list[Label] = field(default_factory=list)  # newest first, at most DISAGREEMENTS_SHOWN
    disagreement_count: int = 0

    def as_dict(self) -> dict:
        return {
            "check": self.version.parent_id,
            "version": self.version.number,
            "labels": self.judge.count,
            "agreement": self.judge.agreement,
            "kappa": self.judge.kappa,
            "confusion": self.judge.confusion.as_dict(),
            "not_compared": self.not_compared,
            "inter_reviewer": {
                "items": self.reviewers.count,
                "agreement": self.reviewers.agreement,
                "kappa": self.reviewers.kappa,
            },
        }


def version_labels(version: CheckVersion):
    """A version's labels with their result, item, queue and reviewer (one query), oldest first."""
    return (
        Label.objects.filter(check_version=version)
        .select_related("result", "item__queue", "reviewer")
        .defer("result__details", "result__evidence", "result__expected", "result__actual")
        .order_by("created_at", "id")
    )


def calibrate(version: CheckVersion) -> Calibration:
    labels = list(version_labels(version))
    # One reviewer's label per judged result counts once (the same sample may sit in two queues).
    latest: dict[tuple[int, int], Label] = {}
    for label in labels:
        key = (label.result_id, label.reviewer_id)
        if key not in latest or label.updated_at >= latest[key].updated_at:
            latest[key] = label
    compared = [lab for lab in latest.values() if lab.result.outcome in VERDICTS]
    judge = agreement((lab.result.outcome, lab.verdict) for lab in compared)
    by_result: dict[int, list[Label]] = {}
    for label in sorted(latest.values(), key=lambda lab: (lab.created_at, lab.pk)):
        by_result.setdefault(label.result_id, []).append(label)
    reviewers = agreement(
        (group[0].verdict, group[1].verdict) for group in by_result.values() if len(group) > 1
    )
    disagreeing = sorted(
        (lab for lab in compared if lab.result.outcome != lab.verdict),
        key=lambda lab: (lab.updated_at, lab.pk),
        reverse=True,
    )
    return Calibration(
        version=version,
        labels=len(labels),
        judge=judge,
        not_compared=len(latest) - len(compared),
        reviewers=reviewers,
        disagreements=disagreeing[:DISAGREEMENTS_SHOWN],
        disagreement_count=len(disagreeing),
    )


def check_versions(check: Check) -> list[CheckVersion]:
    return list(
        CheckVersion.objects.filter(parent=check)
        .only("id", "parent_id", "number", "name", "kind", "config", "created_at")
        .order_by("-number")
    )


def pick_version(versions: list[CheckVersion], number: object, current: int) -> CheckVersion | None:
    """The version `number` (text from a query string) among `versions`, else the current one."""
    wanted = (
        int(number)
        if isinstance(number, str) and number.isascii() and number.isdigit() and len(number) < 9
        else current
    )
    return next((v for v in versions if v.number == wanted), None)
