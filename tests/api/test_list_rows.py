"""List rows are drawn by core.api.list_rows (not DRF's per-field dispatch): each row is exactly what the
object's own endpoint shows, and the drawing agrees with DRF's to_representation on every field shape."""

from __future__ import annotations

from types import SimpleNamespace
from zoneinfo import ZoneInfo

import pytest
from rest_framework import serializers

from core.api import row_function

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("kind", ["agents", "checks", "test-sets", "tests", "runs"])
def test_a_list_row_is_the_objects_own_body(kind, api, library, member):
    from runs import services as runs

    runs.launch_run(test=library["test"], by=member, additional_checks=[library["extra_check"]])
    rows = api.get("member", f"/api/v1/{kind}/").json()["results"]
    assert rows
    for row in rows:
        assert row == api.get("member", f"/api/v1/{kind}/{row['id']}/").json()


class Inner(serializers.Serializer):
    n = serializers.IntegerField()
    label = serializers.CharField(source="name")


class Shapes(serializers.Serializer):
    plain = serializers.IntegerField()
    through = serializers.CharField(source="parent.name", allow_null=True)
    fallback = serializers.CharField(source="missing", default="none")
    optional = serializers.CharField(source="absent", required=False)
    computed = serializers.CharField(source="shout")  # a method: DRF calls it
    flag = serializers.BooleanField()
    ratio = serializers.FloatField()
    when = serializers.DateTimeField()
    items = Inner(many=True)
    one = Inner(allow_null=True)
    extra = serializers.SerializerMethodField()
    listed = serializers.ListField(child=serializers.IntegerField())

    def get_extra(self, obj) -> str:
        plain = obj["plain"] if isinstance(obj, dict) else obj.plain
        return f"{plain}-{self.context['suffix']}"


def _thing(**changes):
    import datetime as dt

    base = {
        "plain": "7",
        "parent": SimpleNamespace(name="Acme"),
        "shout": lambda: "HI",
        "flag": 1,
        "ratio": 2,
        "when": dt.datetime(2026, 12, 2, 10, 0, tzinfo=dt.UTC),
        "items": [{"n": 1, "name": "a"}, SimpleNamespace(n="2", name=3)],
        "one": None,
        "listed": ["1", 2],
    }
    return SimpleNamespace(**{**base, **changes})


@pytest.mark.parametrize(
    "thing",
    [
        _thing(),
        _thing(parent=None, flag="false", one=SimpleNamespace(n=5, name="x"), items=[]),
        _thing(plain=None, when=None, flag=None, absent="here", missing="given"),
        {"plain": 3, "parent": {"name": "D"}, "shout": "s", "flag": True, "ratio": 1.5, "when": None,
         "items": [], "one": {"n": 1, "name": "o"}, "listed": []},
    ],
    ids=["objects", "null-parent", "nulls-and-optionals", "a-dict"],
)
def test_rows_match_drf_on_every_field_shape(thing):
    context = {"suffix": "z"}
    assert row_function(Shapes(context=context))(thing) == Shapes(thing, context=context).data


def test_a_field_that_cannot_be_read_fails_as_drf_does():
    broken = SimpleNamespace(**{k: v for k, v in vars(_thing()).items() if k != "ratio"})
    with pytest.raises(AttributeError, match="ratio"):
        Shapes(broken, context={"suffix": "z"}).data  # noqa: B018
    with pytest.raises(AttributeError, match="ratio"):
        row_function(Shapes(context={"suffix": "z"}))(broken)


class Times(serializers.Serializer):
    when = serializers.DateTimeField()
    local = serializers.DateTimeField(default_timezone=ZoneInfo("Europe/Paris"))
    stamped = serializers.DateTimeField(format="%Y-%m-%d %H:%M")


@pytest.mark.parametrize(
    "when",
    [
        "utc",
        "utc-microseconds",
        "offset",
        "naive",
        "text",
    ],
)
def test_datetimes_match_drf_in_every_zone_and_shape(when, settings):
    """The shortcut for aware datetimes (core.api.datetime_representer) writes DRF's text: "Z" for UTC, the
    field's own zone, another format, and a naive value or a string through DRF itself."""
    import datetime as dt

    value = {
        "utc": dt.datetime(2026, 12, 2, 10, 0, tzinfo=dt.UTC),
        "utc-microseconds": dt.datetime(2026, 12, 2, 10, 0, 5, 123, tzinfo=dt.UTC),
        "offset": dt.datetime(2026, 6, 2, 10, 0, tzinfo=dt.timezone(dt.timedelta(hours=-5))),
        "naive": dt.datetime(2026, 12, 2, 10, 0),
        "text": "2026-12-02T10:00:00Z",
    }[when]
    thing = SimpleNamespace(when=value, local=value, stamped=value)
    if when == "text":  # DRF writes a string as it is, but strftime() needs a datetime
        thing.stamped = dt.datetime(2026, 12, 2, 10, 0, tzinfo=dt.UTC)
    for zone in ("UTC", "America/New_York"):
        settings.TIME_ZONE = zone
        from django.utils import timezone

        with timezone.override(zone):
            assert row_function(Times())(thing) == Times(thing).data


def test_a_plain_rows_datetime_of_none_is_null_without_drfs_field(monkeypatch):
    """core.rows.datetime_text (the plain rows' datetimes) shows None as None, as DRF shows a null, without
    a call of DRF's field (a list has a column of them, e.g. archived_at); a datetime is still DRF's text."""
    import datetime as dt

    from core.rows import datetime_text

    value = dt.datetime(2026, 12, 2, 10, 0, tzinfo=dt.UTC)
    shown = serializers.DateTimeField().to_representation(value)

    def called(self, value):
        raise AssertionError(f"DRF's field was called with {value!r}")

    monkeypatch.setattr(serializers.DateTimeField, "to_representation", called)
    when = datetime_text()
    assert when(None) is None
    assert when(value) == shown


class Attached(serializers.Serializer):
    check = serializers.IntegerField(source="library_check_id")


class VersionChecks(serializers.Serializer):
    through_all = Attached(source="current_version.attached_checks.all", many=True)
    through_manager = Attached(source="current_version.attached_checks", many=True)
    number = serializers.IntegerField(source="current_version.number")


def test_a_path_ending_in_a_managers_all_reads_what_drf_reads(library):
    """`source="x.things.all"`: the rows call the manager's all() as DRF does (core.api._call_all),
    prefetched or not."""
    from checks.models import Test

    for test in (
        Test.objects.get(pk=library["test"].pk),
        Test.objects.prefetch_related("current_version__attached_checks").get(pk=library["test"].pk),
    ):
        row = row_function(VersionChecks())(test)
        assert row == VersionChecks(test).data
        assert row["through_all"] == [{"check": library["check"].pk}]


@pytest.mark.parametrize(
    "path",
    [
        *("/runs/12/", "/", "/prefix/runs/7/"),  # plain: the shortcut
        *("//evil.example/x", "/a/./b/", "/a/../b/", "/ü/", "/a b/", "/q?x=1#f"),  # Django's own path
    ],
)
@pytest.mark.parametrize("host", ["testserver", "console.example:8443"])
def test_absolute_url_is_what_django_builds(path, host, rf, settings):
    """core.api.absolute_url (the runs list's `url`, scheme and host worked out once) is
    request.build_absolute_uri, plain paths and odd ones alike, asked twice on one request."""
    from core.api import absolute_url

    settings.ALLOWED_HOSTS = ["*"]
    request = rf.get("/api/v1/runs/", HTTP_HOST=host, secure=host != "testserver")
    assert absolute_url(request, path) == request.build_absolute_uri(path)
    assert absolute_url(request, path) == request.build_absolute_uri(path)


def test_attached_rows_are_the_prefetch_they_replace(library, member, django_assert_num_queries):
    from django.db.models import Prefetch

    from checks.models import TestCheck, TestVersion
    from checks.services import create_test
    from core.api import attach_rows
    from runs import services as runs
    from runs.models import Run

    create_test(test_set=library["test_set"], by=member, name="Bare", scenarios=[{"input": "x"}])
    both = [{"check": library["check"].pk}, {"check": library["extra_check"].pk, "required": False}]
    create_test(test_set=library["test_set"], by=member, name="Two", scenarios=[{"input": "x"}], checks=both)
    attached = TestCheck.objects.all()
    as_list = Prefetch("attached_checks", attached, to_attr="p")
    prefetched = list(TestVersion.objects.order_by("id").prefetch_related(as_list))
    versions = list(TestVersion.objects.order_by("id"))
    with django_assert_num_queries(1):
        attach_rows(versions, "rows", attached, "test_version", ("id", "library_check_id", "required"))
    shown = [[(c.id, c.library_check_id, c.required) for c in v.p] for v in prefetched]
    assert [[(r.id, r.library_check_id, r.required) for r in v.rows] for v in versions] == shown
    assert [] in shown and any(len(rows) > 1 for rows in shown)  # a version without checks, one with two
    with django_assert_num_queries(0):
        assert attach_rows([], "rows", attached, "test_version", ("id",)) == []

    # One level of relation: `a__b` is `.a.b`, and a missing related row is None.
    kept, orphan = (runs.launch_run(test=library["test"], by=member) for _ in range(2))
    Run.objects.filter(pk=orphan.pk).update(launched_by=None)
    ordered = Run.objects.order_by("id")
    tests = attach_rows([library["test"]], "listed", ordered, "test", ("id", "launched_by__username"))
    found = {row.id: row.launched_by for row in tests[0].listed}
    assert found[kept.pk].username == member.username
    assert found[orphan.pk] is None
    with pytest.raises(ValueError, match="one level"):
        attach_rows(tests, "listed", Run.objects.all(), "test", ("test_version__test__name",))


def test_a_foreign_key_id_reads_what_drf_reads(library, member):
    """A ModelSerializer's PrimaryKeyRelatedField of a foreign key is read from its id column (DRF goes
    through serializable_value and a PKOnlyObject); null keys, and rows that are no model instance, too."""
    from runs import services as runs
    from runs.models import Run

    class RunIds(serializers.ModelSerializer):
        class Meta:
            model = Run
            fields = ["id", "test", "launched_by", "launched_by_token"]  # set, set, null

    kept, orphan = (runs.launch_run(test=library["test"], by=member) for _ in range(2))
    Run.objects.filter(pk=orphan.pk).update(launched_by=None)
    shown = RunIds()
    row = row_function(shown)
    for run in Run.objects.filter(pk__in=[kept.pk, orphan.pk]):
        assert row(run) == shown.to_representation(run)
    assert row(Run.objects.get(pk=orphan.pk))["launched_by"] is None
    plain = SimpleNamespace(id=1, test=library["test"], launched_by=member, launched_by_token=None)
    assert row(plain) == shown.to_representation(plain) == {
        "id": 1, "test": library["test"].pk, "launched_by": member.pk, "launched_by_token": None
    }
