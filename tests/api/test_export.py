"""`GET /api/v1/runs/{id}/export/?format=csv|json`: a run's samples and check results as a download."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from runs.export import CSV_COLUMNS
from runs.models import Run, Sample
from tests import factories

pytestmark = pytest.mark.django_db


def _url(run: Run, fmt: str | None = None) -> str:
    return f"/api/v1/runs/{run.pk}/export/" + (f"?format={fmt}" if fmt else "")


def _body(response) -> str:
    assert response.streaming  # never built in memory
    return b"".join(response.streaming_content).decode()


def _finish(run: Run, outputs: list[str], *, explanation: str = "Expected shipped.") -> Run:
    """Record the samples as a worker would: outputs[i] for sample i ("" = the agent call failed)."""
    run_checks = list(run.run_checks.select_related("check_version"))
    for sample, output in zip(run.samples.order_by("scenario_index", "sample_index"), outputs, strict=True):
        failed = output == ""
        Sample.objects.filter(pk=sample.pk).update(
            status=Sample.Status.DONE,
            outcome="error" if failed else "fail",
            output=output,
            latency_ms=12.5,
            error="agent unreachable" if failed else "",
        )
        if failed:
            continue
        factories.check_results(
            sample,
            run_checks,
            outcome="fail",
            expected="the output to include shipped",
            actual="it did not",
            explanation=explanation,
        )
    return run


def test_csv_has_one_row_per_check_result_and_never_a_formula(api, library):
    run = _finish(library["run"], ['=HYPERLINK("http://evil")', ""], explanation="@SUM(A1)")
    response = api.get("viewer", _url(run, "csv"))
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == f'attachment; filename="run-{run.pk}-samples.csv"'
    header, *rows = list(csv.reader(io.StringIO(_body(response))))
    assert header == CSV_COLUMNS
    assert len(rows) == 2  # one check result on sample 1; sample 2 errored: one row, no check columns
    first, second = (dict(zip(header, row, strict=True)) for row in rows)
    assert first["output"] == '\'=HYPERLINK("http://evil")' and first["explanation"] == "'@SUM(A1)"
    assert first["check_name"] == "Mentions shipping" and first["check_outcome"] == "fail"
    assert first["scenario"] == "Where is EC-1042" and first["latency_ms"] == "12.5"
    assert second["outcome"] == "error" and second["error"] == "agent unreachable"
    assert second["check"] == second["check_outcome"] == ""


@pytest.mark.parametrize("text", ["=1+2", "+1", "-1", "@A1", "\tx", "\rx"])
def test_csv_cells_that_start_like_a_formula_get_an_apostrophe(api, library, text):
    run = _finish(library["run"], [text, "plain -1"])
    header, *rows = list(csv.reader(io.StringIO(_body(api.get("member", _url(run, "csv"))))))
    outputs = [dict(zip(header, row, strict=True))["output"] for row in rows]
    assert outputs == ["'" + text, "plain -1"]


def test_json_is_the_samples_endpoint_unpaginated(api, library):
    run = _finish(library["run"], ["shipped <b>today</b>", ""])
    response = api.get("readonly", _url(run, "json"))
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    assert response["Content-Disposition"] == f'attachment; filename="run-{run.pk}-samples.json"'
    exported = json.loads(_body(response))
    assert exported == api.get("readonly", f"/api/v1/runs/{run.pk}/samples/").json()["results"]
    assert [s["output"] for s in exported] == ["shipped <b>today</b>", ""]
    assert exported[0]["results"][0]["name"] == "Mentions shipping" and exported[1]["results"] == []
    # JSON is the default, whatever the Accept header asks for.
    assert json.loads(_body(api.get("member", _url(run), HTTP_ACCEPT="text/csv"))) == exported


def test_a_format_that_is_not_csv_or_json_is_a_400_in_json(api, library):
    for fmt in ("xml", "CSV", "%00", "x" * 300):
        response = api.get("member", _url(library["run"]) + f"?format={fmt}")
        assert response.status_code == 400 and response["Content-Type"] == "application/json"
        assert "Must be csv or json" in response.json()["format"][0]


def test_another_teams_run_is_a_404_and_no_token_a_401(api, library):
    for fmt in ("csv", "json", None):
        response = api.get("outsider", _url(library["run"], fmt))
        assert response.status_code == 404 and response.json() == {
            "detail": "No Run matches the given query."
        }
        assert api.get("anonymous", _url(library["run"], fmt)).status_code == 401
    assert api.get("member", "/api/v1/runs/999999/export/?format=csv").status_code == 404


def test_export_streams_every_sample_in_chunks_with_their_own_results(api, library, member, settings):
    from checks.services import edit_test
    from runs import services as runs

    settings.EVALCONSOLE_MAX_SAMPLES_PER_RUN = 250
    settings.EVALCONSOLE_MAX_SCENARIOS = 10
    edit_test(
        test=library["test"],
        by=member,
        scenarios=[{"name": f"S{i}", "input": f"q{i}"} for i in range(10)],
        samples_per_scenario=25,
    )
    run = runs.launch_run(test=library["test"], by=member)
    _finish(run, [f"answer {i}" for i in range(250)])  # more samples than one chunk (100)
    header, *rows = list(csv.reader(io.StringIO(_body(api.get("member", _url(run, "csv"))))))
    assert len(rows) == 250
    assert [row[header.index("output")] for row in rows] == [f"answer {i}" for i in range(250)]
    assert all(row[header.index("check_name")] == "Mentions shipping" for row in rows)
    assert len(json.loads(_body(api.get("member", _url(run, "json"))))) == 250


def test_export_queries_do_not_grow_with_samples(api, library, member):
    from checks.services import edit_test
    from runs import services as runs

    def counted(url: str) -> int:
        _body(api.get("member", url))  # warm up: the token's last_used_at write
        with CaptureQueriesContext(connection) as queries:
            _body(api.get("member", url))
        return len(queries)

    small = _finish(library["run"], ["a", "b"])
    edit_test(test=library["test"], by=member, scenarios=[{"input": f"q{i}"} for i in range(5)])
    big = runs.launch_run(test=library["test"], by=member, additional_checks=[library["extra_check"]])
    _finish(big, [f"answer {i}" for i in range(10)])
    for fmt in ("csv", "json"):
        # token, run (with its test version), samples, their results with check versions
        assert counted(_url(small, fmt)) == counted(_url(big, fmt)) == 4
