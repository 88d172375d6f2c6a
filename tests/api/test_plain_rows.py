"""The lists drawn from plain column values (core.rows; the runs, samples, tests, review items and agents
lists): each row is exactly, key order included, what the list's serializer shows of the same object, on
the odd shapes stored data can take (tests/api/test_queries.py holds their query counts)."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.django_db


def _same(rows: list[dict], expected: list) -> None:
    """The same JSON text (key order included), row by row."""
    assert len(rows) == len(expected)
    for row, shown in zip(rows, expected, strict=True):
        assert json.dumps(row) == json.dumps(shown)


# ----------------------------------------------------------------------------- runs


def test_run_rows_are_the_serializers_on_every_shape(api, library, member, rf):
    from runs import services as runs
    from runs.api import run_queryset
    from runs.models import Run
    from runs.serializers import RunSerializer

    test = library["test"]
    made = [
        runs.launch_run(test=test, by=member, additional_checks=[library["extra_check"]]) for _ in range(6)
    ]
    check, extra = library["check"].current_version, library["extra_check"]
    odd = [
        {"result": "pass", "launched_by": None, "summary": []},  # no launcher; a summary that is no object
        {"summary": {"scenarios": [{"index": 0, "passed": 2, "failed": 1, "done": 3, "flaky": True}]}},
        {  # counts per check version and per check id, odd flaky scenarios, a scenario that is no object
            "summary": {
                "scenarios": [
                    "x",
                    {"index": 5, "passed": 1},
                    {"index": 0, "passed": 2, "failed": 2, "pass_rate": 50.0},
                ],
                "checks": {
                    str(check.pk): {"passed": 1, "failed": 1, "flaky_scenarios": [0, "1", None]},
                    str(extra.pk): {"errored": 2, "pass_rate": 12.5},
                },
            }
        },
        {"summary": {"checks": ["no", "object"]}, "total_samples": 0, "done_samples": 0},
        {"batch": "b-1", "total_samples": 3, "done_samples": 1, "status": "running"},
    ]
    for run, changes in zip(made, odd, strict=False):
        Run.objects.filter(pk=run.pk).update(**changes)
    from django.utils import timezone

    Run.objects.filter(pk=made[1].pk).update(started_at=timezone.now(), finished_at=timezone.now())

    rows = api.get("member", "/api/v1/runs/").json()["results"]
    request = rf.get("/api/v1/runs/")
    shown = RunSerializer(list(run_queryset(member)), many=True, context={"request": request}).data
    _same(rows, shown)
    assert {r["launched_by"] for r in rows} == {None, member.username}
    assert any(c["flaky"] for r in rows for c in r["checks"])


# ----------------------------------------------------------------------------- core.rows


@pytest.mark.parametrize("host", ["testserver", "console.example:8443"])
def test_page_urls_are_each_objects_own(host, rf, settings, monkeypatch):
    """core.rows.page_urls (a list's `url`, from a template worked out once) is pk_url made absolute as a
    serializer makes it: with or without a request, for ints and anything else, and through the slow path
    when the URL does not hold the pk as its digits; None when the pages are not installed."""
    from django.urls import NoReverseMatch

    from core import rows
    from core.api import absolute_url
    from core.urls import pk_url

    settings.ALLOWED_HOSTS = ["*"]
    request = rf.get("/api/v1/runs/", HTTP_HOST=host, secure=host != "testserver")
    url, path = rows.page_urls(request, "runs:run-detail"), rows.page_urls(None, "runs:run-detail")
    for pk in (0, 7, 12, 2**40):
        assert url(pk) == absolute_url(request, pk_url("runs:run-detail", pk))
        assert path(pk) == pk_url("runs:run-detail", pk)
    for odd in (-1, "abc"):  # not a pk: reverse() itself says so
        with pytest.raises(NoReverseMatch):
            pk_url("runs:run-detail", odd)
        with pytest.raises(NoReverseMatch):
            url(odd)
    assert rows.page_urls(request, "runs:no-such-page")(3) is None

    monkeypatch.setattr(rows, "pk_url", lambda route, pk: f"/runs/{pk:x}/")  # hex: not the pk's digits
    hexed = rows.page_urls(None, "runs:run-detail")
    assert [hexed(10), hexed(255)] == ["/runs/a/", "/runs/ff/"]


def test_group_rows_and_an_unpaginated_plain_list():
    from types import SimpleNamespace

    from core.rows import group_rows, plain_list

    grouped = group_rows([(2, "a", 1), (1, "b", 2), (2, "c", 3)], [1, 2, 3])
    assert grouped == {1: [("b", 2)], 2: [("a", 1), ("c", 3)], 3: []}
    view = SimpleNamespace(paginate_queryset=lambda queryset: None)  # a view without pagination
    response = plain_list(view, iter([(1,), (2,)]), lambda page: [{"id": row[0]} for row in page])
    assert response.data == [{"id": 1}, {"id": 2}]
