"""A run's samples and check results as a download: CSV (one row per check result) or JSON.

`GET /api/v1/runs/{id}/export/?format=csv|json` (runs/api.py) serves both, to tokens and to the run
page's links alike. The body is streamed: samples are read in chunks with their results prefetched,
so memory stays flat even if the per-run sample limit is raised. Reading only; nothing is written.

CSV: one row per (sample, check result), a sample without results (queued, errored) as one row with
empty check columns. Text cells that a spreadsheet would run as a formula (starting with = + - @, a
tab or a carriage return) get a leading apostrophe (OWASP "CSV injection").
JSON: an array of samples, each exactly as `GET runs/{id}/samples/` shows it (results nested).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from typing import Any

from django.db.models import Prefetch

from checks.models import scenario_name
from runs.models import CheckResult, Run, Sample

FORMATS = ("csv", "json")
CONTENT_TYPES = {"csv": "text/csv; charset=utf-8", "json": "application/json"}
CHUNK = 100  # samples read per query while streaming

CSV_COLUMNS = [
    "run",
    "scenario_index",
    "scenario",
    "sample_index",
    "sample",
    "status",
    "outcome",
    "latency_ms",
    "error",
    "output",
    "check",
    "check_version",
    "version",
    "check_name",
    "kind",
    "required",
    "check_outcome",
    "expected",
    "actual",
    "explanation",
]
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_safe(value: Any) -> Any:
    """A cell a spreadsheet shows as text: a string starting like a formula gets a leading `'`."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def filename(run: Run, fmt: str) -> str:
    return f"run-{run.pk}-samples.{fmt}"


def scenario_names(run: Run) -> dict[int, str]:
    return {i: scenario_name(s, i) for i, s in enumerate(run.test_version.scenarios or [])}


def samples(run: Run) -> Iterator[Sample]:
    """The run's samples in scenario then sample order, results (with check versions) prefetched."""
    results = CheckResult.objects.select_related("check_version").order_by("id")
    return (
        Sample.objects.filter(run=run)
        .prefetch_related(Prefetch("results", queryset=results))
        .order_by("scenario_index", "sample_index", "id")
        .iterator(chunk_size=CHUNK)
    )


class _Line:
    """csv.writer's file: hands back each row instead of writing it."""

    def write(self, text: str) -> str:
        return text


def csv_rows(run: Run) -> Iterator[list[Any]]:
    names = scenario_names(run)
    for sample in samples(run):
        head = [
            run.pk,
            sample.scenario_index,
            names.get(sample.scenario_index) or scenario_name(None, sample.scenario_index),
            sample.sample_index,
            sample.pk,
            sample.status,
            sample.outcome,
            sample.latency_ms,
            sample.error,
            sample.output,
        ]
        results = list(sample.results.all())
        if not results:
            yield head + [""] * (len(CSV_COLUMNS) - len(head))
        for result in results:
            version = result.check_version
            yield head + [
                version.parent_id,
                version.pk,
                version.number,
                version.name,
                version.kind,
                result.required,
                result.outcome,
                result.expected,
                result.actual,
                result.explanation,
            ]


def csv_stream(run: Run) -> Iterator[str]:
    writer = csv.writer(_Line())
    yield writer.writerow(CSV_COLUMNS)
    for row in csv_rows(run):
        yield writer.writerow([csv_safe(cell) for cell in row])


def json_stream(run: Run, context: dict[str, Any]) -> Iterator[str]:
    """A JSON array, one sample at a time (the serializer of `GET runs/{id}/samples/`)."""
    from runs.serializers import SampleSerializer

    context = {**context, "scenario_names": scenario_names(run)}
    yield "["
    for index, sample in enumerate(samples(run)):
        body = json.dumps(SampleSerializer(sample, context=context).data, ensure_ascii=False, default=str)
        yield ("," if index else "") + "\n" + body
    yield "\n]\n"


def stream(run: Run, fmt: str, context: dict[str, Any]) -> Iterator[str]:
    """The export of `run` in `fmt` (one of FORMATS)."""
    return csv_stream(run) if fmt == "csv" else json_stream(run, context)
