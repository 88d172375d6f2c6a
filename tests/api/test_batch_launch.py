"""`POST /api/v1/runs/batch/`: several runs launched as one batch, one transaction and one enqueue."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from runs.models import Run, Sample

pytestmark = pytest.mark.django_db

URL = "/api/v1/runs/batch/"


@pytest.fixture
def second_test(library, member):
    from checks import services as checks

    return checks.create_test(
        test_set=library["test_set"],
        by=member,
        name="Refunds",
        scenarios=[{"input": "Refund EC-1042"}, {"input": "Refund EC-7"}],
        checks=[{"check": library["check"].pk}],
    )


def _launched_ids() -> set[int]:
    return set(Run.objects.values_list("pk", flat=True))


def test_a_batch_is_one_launch_of_every_entry_in_order(
    api, library, second_test, django_capture_on_commit_callbacks
):
    test, extra = library["test"], library["extra_check"]
    before = _launched_ids()
    with django_capture_on_commit_callbacks() as enqueued:
        answer = api.post(
            "member", URL, {"tests": [test.pk, second_test.pk, test.pk], "additional_checks": [extra.pk]}
        )
    assert answer.status_code == 202, answer.content
    body = answer.json()
    assert [r["test"] for r in body["runs"]] == [test.pk, second_test.pk, test.pk]
    assert {r["batch"] for r in body["runs"]} == {body["batch"]} and body["batch"]
    assert [r["status"] for r in body["runs"]] == ["queued"] * 3
    assert len(enqueued) == 1  # one drain task for the whole batch, queued when the transaction commits
    runs = Run.objects.filter(pk__in=_launched_ids() - before).order_by("pk")
    assert [r.total_samples for r in runs] == [2, 2, 2]
    assert Sample.objects.filter(run__in=runs, status="queued").count() == 6
    for run in runs:  # every run has the test's own checks and the additional one, frozen
        frozen = run.run_checks.order_by("position").values_list("check_version__parent_id", "additional")
        checks = list(frozen)
        assert checks == [(library["check"].pk, False), (extra.pk, True)]
    # The batch's consistency endpoint knows the batch.
    pooled = api.get("member", f"/api/v1/runs/batches/{body['batch']}/").json()
    assert sorted(t["test"] for t in pooled["tests"]) == sorted([test.pk, second_test.pk])


def _queries_for(api, tests: list[int]) -> int:
    with CaptureQueriesContext(connection) as queries:
        answer = api.post("member", URL, {"tests": tests})
    assert answer.status_code == 202, answer.content
    return len(queries)


def test_the_queries_of_a_batch_do_not_grow_with_its_runs(api, library, second_test):
    test = library["test"]
    api.get("member", "/api/v1/runs/")  # the token's last_used_at write happens at most once a minute
    two = _queries_for(api, [test.pk, second_test.pk])
    twelve = _queries_for(api, [test.pk, second_test.pk] * 6)
    assert twelve == two


def test_bad_entries_are_400s_naming_the_field_and_launch_nothing(
    api, library, second_test, settings, other_team, admin_user
):
    from checks import services as checks
    from tests import factories

    test = library["test"]
    before = _launched_ids()

    def refused(body) -> dict:
        answer = api.post("member", URL, body)
        assert answer.status_code == 400, answer.content
        return answer.json()

    assert "tests" in refused({})
    assert refused({"tests": []}) == {"tests": ["Name at least one test to launch."]}
    assert refused({"tests": [test.pk, "x"]}) == {"tests": {"1": ["A valid integer is required."]}}
    assert refused({"tests": "5"})["tests"] == ['Expected a list of items but got type "str".']
    # Another team's test is as unknown as a missing one, at its place in the list.
    theirs = factories.test(factories.agent(other_team, name="Their bot"), scenarios=["hi"])
    assert refused({"tests": [test.pk, theirs.pk]}) == {"tests": {"1": [f"Test {theirs.pk} does not exist."]}}
    settings.EVALCONSOLE_MAX_BATCH_RUNS = 3
    assert refused({"tests": [test.pk] * 4}) == {"tests": ["4 runs is over the limit of 3 runs per batch."]}
    # What one launch refuses, a batch refuses for the entry (all or none: the good entry is not launched).
    checks.archive_test(test=second_test, by=admin_user)
    body = refused({"tests": [test.pk, second_test.pk]})
    assert body == {"tests.1": ["test 'Refunds' is archived; restore it to launch it"]}
    already = refused({"tests": [test.pk], "additional_checks": [library["check"].pk]})
    attached = "check 'Mentions shipping' is already attached to the test"
    assert already == {"additional_checks.0.check": [attached]}
    assert _launched_ids() == before


@pytest.mark.parametrize(
    ("persona", "code"),
    [("viewer", 403), ("readonly", 403), ("outsider", 400), ("anonymous", 401), ("admin", 202)],
)
def test_who_may_launch_a_batch(api, library, persona, code):
    before = _launched_ids()
    answer = api.post(persona, URL, {"tests": [library["test"].pk]})
    assert answer.status_code == code, answer.content
    if code == 400:  # another team's test does not exist for them
        assert answer.json() == {"tests": {"0": [f"Test {library['test'].pk} does not exist."]}}
    assert (_launched_ids() != before) == (code == 202)
