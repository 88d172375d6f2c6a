"""A queue's labels as a download: CSV or JSON Lines, one label a row, streamed in chunks."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator

from reviews.models import Label, ReviewQueue
from runs.export import csv_safe

FORMATS = ("csv", "jsonl")
CONTENT_TYPES = {"csv": "text/csv; charset=utf-8", "jsonl": "application/x-ndjson"}
COLUMNS = [
    "queue",
    "item",
    "position",
    "kind",
    "run",
    "sample",
    "task",
    "check",
    "check_version",
    "version",
    "check_name",
    "check_outcome",
    "verdict",
    "note",
    "reviewer",
    "created_at",
    "updated_at",
]
CHUNK = 500


def filename(queue: ReviewQueue, fmt: str) -> str:
    return f"review-queue-{queue.pk}-labels.{fmt}"


def rows(queue: ReviewQueue) -> Iterator[dict]:
    labels = (
        Label.objects.filter(item__queue=queue)
        .select_related("item__sample", "check_version", "result", "reviewer")
        .only(
            "id",
            "verdict",
            "note",
            "created_at",
            "updated_at",
            "item__id",
            "item__position",
            "item__sample_id",
            "item__task_id",
            "item__sample__run_id",
            "check_version__id",
            "check_version__parent_id",
            "check_version__number",
            "check_version__name",
            "result__outcome",
            "reviewer__username",
        )
        .order_by("item__position", "check_version_id", "created_at", "id")
    )
    for label in labels.iterator(chunk_size=CHUNK):
        item = label.item
        yield {
            "queue": queue.pk,
            "item": item.pk,
            "position": item.position,
            "kind": item.kind,
            "run": item.sample.run_id if item.sample_id else None,
            "sample": item.sample_id,
            "task": item.task_id,
            "check": label.check_version.parent_id,
            "check_version": label.check_version_id,
            "version": label.check_version.number,
            "check_name": label.check_version.name,
            "check_outcome": label.result.outcome,
            "verdict": label.verdict,
            "note": label.note,
            "reviewer": label.reviewer.username,
            "created_at": label.created_at.isoformat(),
            "updated_at": label.updated_at.isoformat(),
        }


def stream(queue: ReviewQueue, fmt: str) -> Iterator[str]:
    if fmt == "jsonl":
        for row in rows(queue):
            yield json.dumps(row, ensure_ascii=False) + "\n"
        return
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(COLUMNS)
    for row in rows(queue):
        writer.writerow([csv_safe("" if row[c] is None else row[c]) for c in COLUMNS])
        if buffer.tell() > 64_000:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()
