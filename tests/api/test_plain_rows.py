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
    # One check's counts under its version's id, the other's under its check id (a summary older than
    # versions). The ids come from sequences that earlier tests moved on: where the other check's id is
    # this version's id, the run's rows could not tell the two apart, so the other's counts go under its
    # version's id too.
    extra_key = str(extra.pk if extra.pk != check.pk else extra.current_version.pk)
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
                    extra_key: {"errored": 2, "pass_rate": 12.5},
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


def test_sample_rows_are_the_serializers_on_every_shape(api, library, member, rf):
    """A run's samples list: odd JSON columns (null, objects with nulls, evidence that is no int), a
    whole-number latency, a world, results or none, and a scenario index beyond the test's scenarios."""
    from django.db.models import JSONField, Value

    from checks.services import create_test
    from runs import export
    from runs import services as runs
    from runs.models import CheckResult, Sample
    from runs.serializers import SampleSerializer
    from tests.support.scenes import support_question
    from worlds.services import create_scene, start_world

    test = create_test(
        test_set=library["test_set"],
        by=member,
        name="Three",
        scenarios=[{"name": "First", "input": "a"}, {"input": "b"}],
        checks=[{"check": library["check"].pk, "required": True}],
        samples_per_scenario=2,
    )
    run = runs.launch_run(test=test, by=member, additional_checks=[library["extra_check"]])
    samples = list(Sample.objects.filter(run=run).order_by("scenario_index", "sample_index"))
    assert len(samples) == 4
    scene = create_scene(agent=library["agent"], by=member, source=support_question(scene="plain-rows"))
    world, _ = start_world(version=scene.current_version)
    null = Value(None, JSONField())  # JSON's null in a column that is not nullable
    odd = [
        {"outcome": "pass", "status": "completed", "latency_ms": 12, "transcript": [{"role": "user"}, None]},
        {"tool_calls": None, "trace": None, "transcript": null, "world_checks": null, "error": "boom"},
        {"tool_calls": [{"name": "x", "input": {"a": [1, None]}}], "trace": {"k": "v"}, "world": world},
        {"world_checks": [{"id": "c", "passed": True}, None], "scenario_index": 7, "latency_ms": 0.25},
    ]
    for sample, changes in zip(samples, odd, strict=True):
        Sample.objects.filter(pk=sample.pk).update(**changes)
    first, extra = library["check"].current_version, library["extra_check"].current_version
    CheckResult.objects.create(
        sample=samples[0], check_version=first, outcome="pass", evidence=[0, True, None]
    )
    CheckResult.objects.create(
        sample=samples[0], check_version=extra, required=False, outcome="", expected="e", evidence=null
    )
    CheckResult.objects.create(sample=samples[2], check_version=first, outcome="fail", explanation="why")

    rows = api.get("member", f"/api/v1/runs/{run.pk}/samples/").json()["results"]
    run.refresh_from_db()
    context = {"request": rf.get("/"), "scenario_names": export.scenario_names(run)}
    ordered = Sample.objects.filter(run=run).order_by("scenario_index", "sample_index", "id")
    _same(rows, SampleSerializer(list(ordered), many=True, context=context).data)
    assert [len(r["results"]) for r in rows] == [2, 0, 1, 0]
    assert rows[-1]["scenario"] == "Scenario 8" and rows[0]["scenario"] == "First"
    assert [r["evidence"] for r in rows[0]["results"]] == [[0, 1, None], None]
    assert (rows[0]["transcript"], rows[1]["transcript"]) == ([{"role": "user"}, None], None)
    assert (rows[0]["latency_ms"], rows[2]["world"]) == (12.0, world.id)


# ----------------------------------------------------------------------------- tests


def test_test_rows_are_the_serializers_on_every_shape(api, library, member, agent):
    """The tests list (the worlds floor's: with scenes): odd stored scenarios, a version without checks,
    a scene test, an archived test, and a test without a current version (DRF leaves out its version's
    fields)."""
    from django.db.models import JSONField, QuerySet, Value

    from checks.models import Test, TestVersion
    from checks.services import create_test
    from tests.support.scenes import support_question
    from worlds.serializers import SceneTestSerializer
    from worlds.services import create_scene

    test_set = library["test_set"]
    bare = create_test(test_set=test_set, by=member, name="Bare", scenarios=[{"input": "x"}])
    odd = create_test(test_set=test_set, by=member, name="Odd", scenarios=[{"input": "y"}])
    stored = [{"name": "n"}, {"input": "i", "messages": None, "metadata": None}, {"metadata": {"a": 1}}]
    QuerySet.update(TestVersion.objects.filter(pk=odd.current_version_id), scenarios=stored)  # immutable rows
    nulled = create_test(test_set=test_set, by=member, name="Null scenarios", scenarios=[{"input": "z"}])
    QuerySet.update(
        TestVersion.objects.filter(pk=nulled.current_version_id), scenarios=Value(None, JSONField())
    )
    scene = create_scene(agent=agent, by=member, source=support_question(scene="rows"))
    api.post("member", "/api/v1/tests/", {"test_set": test_set.pk, "name": "Scene", "scenes": [scene.pk]})
    lost = create_test(test_set=test_set, by=member, name="No version", scenarios=[{"input": "w"}])
    Test.objects.filter(pk=lost.pk).update(current_version=None)
    gone = create_test(test_set=test_set, by=member, name="Archived", scenarios=[{"input": "v"}])
    Test.objects.filter(pk=gone.pk).update(archived_at=gone.created_at)

    for query, archived in (("", True), ("?archived=true", False)):
        rows = api.get("member", f"/api/v1/tests/{query}").json()["results"]
        tests = Test.objects.filter(archived_at__isnull=archived).order_by("name", "id")
        _same(rows, SceneTestSerializer(list(tests), many=True).data)
    rows = {r["name"]: r for r in api.get("member", "/api/v1/tests/").json()["results"]}
    assert "scenarios" not in rows["No version"] and rows["No version"]["version_id"] is None
    assert rows["Null scenarios"]["scenarios"] is None and rows["Bare"]["checks"] == []
    assert rows["Scene"]["scenes"] == [{"scene": scene.pk, "name": scene.name}]
    assert bare.pk in {r["id"] for r in rows.values()}


# ----------------------------------------------------------------------------- agents


def test_agent_rows_are_the_serializers_on_every_shape(api, agent, team, admin_user):
    """Agents with headers (their names only), nodes, a whole-number timeout, a stored URL with a password
    (masked), odd header names, and archived ones."""
    from django.db.models import JSONField, Value

    from agents.models import Agent
    from agents.serializers import AgentSerializer
    from agents.services import create_agent

    made = create_agent(
        team=team,
        by=admin_user,
        name="Workforce",
        endpoint_url="https://agent.example/run",
        headers={"X-Key": "secret", "Authorization": "Bearer s"},
        nodes=[{"name": "search", "kind": "tool"}, {"name": "writer"}],
        timeout_s=5,
    )
    Agent.objects.filter(pk=agent.pk).update(
        endpoint_url="https://user:pass@agent.example/x", header_names=[1]
    )
    odd = create_agent(team=team, by=admin_user, name="Odd", endpoint_url="https://odd.example/")
    Agent.objects.filter(pk=odd.pk).update(header_names=Value(None, JSONField()), description="d")
    gone = create_agent(team=team, by=admin_user, name="Gone", endpoint_url="https://gone.example/")
    Agent.objects.filter(pk=gone.pk).update(archived_at=gone.created_at)

    for query, archived in (("", True), ("?archived=true", False)):
        rows = api.get("member", f"/api/v1/agents/{query}").json()["results"]
        agents = Agent.objects.filter(archived_at__isnull=archived).order_by("name", "id")
        _same(rows, AgentSerializer(list(agents.prefetch_related("nodes")), many=True).data)
    rows = {r["name"]: r for r in api.get("member", "/api/v1/agents/").json()["results"]}
    assert (
        rows["Workforce"]["header_names"] == ["Authorization", "X-Key"]
        and len(rows["Workforce"]["nodes"]) == 2
    )
    assert "pass" not in rows[agent.name]["endpoint_url"] and rows[agent.name]["header_names"] == ["1"]
    assert rows["Odd"]["header_names"] is None and rows["Workforce"]["timeout_s"] == 5.0
    assert made.pk in {r["id"] for r in rows.values()}


# ----------------------------------------------------------------------------- core.rows


@pytest.mark.parametrize("host", ["testserver", "console.example:8443"])
def test_page_urls_are_each_objects_own(host, rf, settings, monkeypatch):
    """core.rows.page_urls (a list's `url`, from a template worked out once) is pk_url made absolute as a
    serializer makes it: with or without a request, for ints and anything else, and through the slow path
    when the URL does not hold the pk as its digits; None when the pages are not installed."""
    from django.urls import NoReverseMatch

    from core import rows, urls
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

    # hex: not the pk's digits (the route's template is looked up afresh, and again after the test)
    monkeypatch.setattr(urls, "reverse", lambda route, args, **kwargs: f"/runs/{args[0]:x}/")
    urls._url_parts.cache_clear()
    try:
        hexed = rows.page_urls(None, "runs:run-detail")
        assert [hexed(10), hexed(255)] == ["/runs/a/", "/runs/ff/"]
    finally:
        urls._url_parts.cache_clear()


def test_related_rows_and_an_unpaginated_plain_list(library, member, django_assert_num_queries):
    from types import SimpleNamespace

    from core.rows import plain_list, related_rows
    from runs import services as runs
    from runs.models import RunCheck

    two = runs.launch_run(test=library["test"], by=member, additional_checks=[library["extra_check"]])
    one = library["run"]
    checks = RunCheck.objects.order_by("-position")
    with django_assert_num_queries(1):
        found = related_rows([(two.pk, "x"), (one.pk, "y"), (10**9, "z")], checks, "run", ("additional",))
    assert found == {two.pk: [(True,), (False,)], one.pk: [(False,)], 10**9: []}
    with django_assert_num_queries(0):
        assert related_rows([], checks, "run", ("additional",)) == {}

    view = SimpleNamespace(paginate_queryset=lambda queryset: None)  # a view without pagination
    response = plain_list(view, iter([(1,), (2,)]), lambda page: [{"id": row[0]} for row in page])
    assert response.data == [{"id": 1}, {"id": 2}]
