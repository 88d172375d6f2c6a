"""REST API v1: checks (+ versions), test sets (+ launching their tests) and tests, over checks.services."""

from __future__ import annotations

import django_filters
from django.db.models import Prefetch, QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import serializers, status
from rest_framework.response import Response

from agents.models import UNLISTED_FIELDS, Agent
from checks import services
from checks.models import Check, CheckVersion, Test, TestCheck, TestSet
from checks.serializers import (
    TEST_ROW_COLUMNS,
    TEST_VERSION,
    CheckCreateSerializer,
    CheckEditSerializer,
    CheckSerializer,
    CheckVersionSerializer,
    TestCreateSerializer,
    TestEditSerializer,
    TestSerializer,
    TestSetCreateSerializer,
    TestSetEditSerializer,
    TestSetSerializer,
    test_rows,
)
from core.api import ArchivedFilterSet, VisibleModelChoiceFilter, attach_rows
from core.rows import plain_list, related_rows
from teams.api import ServiceWritesViewSet, service_writes_schema, versions_action


class CheckFilter(ArchivedFilterSet):
    agent = VisibleModelChoiceFilter(model=Agent)
    kind = django_filters.CharFilter(help_text="A check kind name, e.g. tool_usage.")
    used = django_filters.ChoiceFilter(
        choices=[("in_tests", "In tests"), ("in_monitors", "In monitors"), ("unused", "Unused")],
        method="filter_used",
        help_text="in_tests: attached to a current test version; in_monitors: in an active monitor; unused.",
    )

    class Meta:
        model = Check
        fields = ["agent", "kind", "used", "archived"]

    def filter_used(self, queryset, name, value):
        return queryset.used(value)


class TestSetFilter(ArchivedFilterSet):
    agent = VisibleModelChoiceFilter(model=Agent)

    class Meta:
        model = TestSet
        fields = ["agent", "archived"]


# What the checks and scenes lists show of a versioned identity (core.immutable.Versioned) itself.
LISTED_COLUMNS = (
    *("id", "agent_id", "name", "version", "current_version_id"),
    *("created_at", "updated_at", "archived_at"),
)


# What AttachedCheckOutSerializer shows of a test version's attached checks.
LISTED_CHECK_COLUMNS = ("library_check_id", "required")


class TestFilter(ArchivedFilterSet):
    test_set = VisibleModelChoiceFilter(model=TestSet)
    agent = VisibleModelChoiceFilter(model=Agent, field_name="test_set__agent")

    class Meta:
        model = Test
        fields = ["test_set", "agent", "archived"]


# ----------------------------------------------------------------------------- checks


class ArchiveParams(serializers.Serializer):
    confirm = serializers.BooleanField(default=False)


def _check_rules(fields: dict, current: CheckVersion | None = None) -> None:
    """The service's rules on a check body whose other fields did not parse (see validated_or_400)."""
    fields.pop("agent", None)
    if fields.get("kind", "") is None:
        return  # the kind did not parse: a config can only be checked against a known kind
    if current is not None:
        services.validate_check_edit(current=current, **fields)
    else:
        services.validate_check(name=fields.get("name"), kind=fields["kind"], config=fields.get("config"))


@extend_schema_view(
    list=extend_schema(summary="List checks", description="Active checks of your teams' agents, filterable."),
    retrieve=extend_schema(summary="Show a check (its current version)"),
)
@service_writes_schema(
    create_summary="Add a check to an agent's library (version 1)",
    edit_summary="Edit a check: saves version n+1",
    replace_summary="Replace a check's content: saves version n+1",
)
class CheckViewSet(ServiceWritesViewSet):
    serializer_class = CheckSerializer
    filterset_class = CheckFilter
    create_serializer_class = CheckCreateSerializer
    edit_serializer_class = CheckEditSerializer
    create_service = services.create_check
    edit_service = services.edit_check
    archive_service = services.archive_check
    object_kwarg = "check"
    fixed_field = "agent"
    put_defaults = {"config": {}}

    def get_queryset(self) -> QuerySet[Check]:
        checks = Check.objects.visible_to(self.request.user).order_by("agent_id", "kind", "name", "id")
        if self.action == "list":  # what CheckSerializer reads: no agent row, the version's config only
            listed = checks.select_related("current_version")
            return listed.only(*LISTED_COLUMNS, "kind", "current_version__config")
        return checks.select_related("agent", "current_version").defer(
            *(f"agent__{name}" for name in UNLISTED_FIELDS)
        )

    def rules(self, fields: dict, obj: Check | None = None) -> None:
        _check_rules(fields, current=obj.current_version if obj is not None else None)

    @extend_schema(
        summary="Archive a check",
        description=(
            "Admins only. Its versions and every result that used them stay. A check that active tests "
            "use answers 409 with `tests` (id, name) unless `?confirm=true`: archived, it stays in those "
            "tests and their runs keep running its last version until a test is edited (saving a new "
            "version then refuses the archived check)."
        ),
        parameters=[OpenApiParameter("confirm", bool, description="Archive even if tests use it.")],
        responses={204: None, 409: OpenApiTypes.OBJECT},
    )
    def destroy(self, request, *args, **kwargs):
        check = self.get_object()
        params = ArchiveParams(data=request.query_params)
        params.is_valid(raise_exception=True)
        try:
            services.archive_check(check=check, by=request.user, confirm=params.validated_data["confirm"])
        except services.CheckInUse as exc:
            return Response(
                {"detail": f"{exc} (DELETE with ?confirm=true)",
                 "tests": [{"id": t.pk, "name": t.name} for t in exc.tests]},
                status=status.HTTP_409_CONFLICT,
            )
        return Response(status=status.HTTP_204_NO_CONTENT)

    versions = versions_action(CheckVersionSerializer, summary="A check's versions, newest first")


# ----------------------------------------------------------------------------- test sets


@extend_schema_view(
    list=extend_schema(summary="List test sets"),
    retrieve=extend_schema(summary="Show a test set"),
    destroy=extend_schema(summary="Archive a test set", description="Admins only. Its tests' runs stay."),
)
@service_writes_schema(
    create_summary="Create a test set",
    edit_summary="Rename a test set or change its description",
    replace_summary="Replace a test set's name and description",
)
class TestSetViewSet(ServiceWritesViewSet):
    serializer_class = TestSetSerializer
    filterset_class = TestSetFilter
    create_serializer_class = TestSetCreateSerializer
    edit_serializer_class = TestSetEditSerializer
    create_service = services.create_test_set
    edit_service = services.update_test_set
    archive_service = services.archive_test_set
    object_kwarg = "test_set"
    fixed_field = "agent"
    put_defaults = {"description": ""}

    def get_queryset(self) -> QuerySet[TestSet]:
        sets = TestSet.objects.visible_to(self.request.user).order_by("name", "id")
        if self.action == "list":  # the row reads the agent's id only; the tests: with_related
            return sets
        return (
            sets.select_related("agent")
            .defer(*(f"agent__{name}" for name in UNLISTED_FIELDS))
            .prefetch_related(Prefetch("tests", queryset=Test.objects.order_by("name", "id")))
        )

    def with_related(self, rows):
        # The ids of each set's active tests (TestSetSerializer.get_tests), in a plain list.
        active = Test.objects.filter(archived_at__isnull=True).order_by("name", "id")
        return attach_rows(rows, "active_test_ids", active, "test_set", ("pk",))


# ----------------------------------------------------------------------------- tests


TEST_CREATE_SUMMARY = "Create a test (version 1)"
TEST_EDIT_SUMMARY = "Edit a test: saves version n+1"
TEST_REPLACE_SUMMARY = "Replace a test's content: saves version n+1"


def _test_rules(fields: dict, test: Test | None = None) -> None:
    """The service's rules on a test body whose other fields did not parse (see validated_or_400)."""
    test_set = test.test_set if test is not None else fields.pop("test_set", None)
    if test_set is None:
        return  # the agent is unknown, so are its checks
    if test is None:
        services.validate_new_test(test_set=test_set, **fields)
        return
    base = services.current_test_fields(test.current_version)
    services.validate_test(agent=test_set.agent, **{**base, **fields})


@extend_schema_view(
    list=extend_schema(summary="List tests"),
    retrieve=extend_schema(summary="Show a test (its current version)"),
    destroy=extend_schema(summary="Archive a test", description="Admins only. Its runs stay."),
)
@service_writes_schema(
    create_summary=TEST_CREATE_SUMMARY,
    edit_summary=TEST_EDIT_SUMMARY,
    replace_summary=TEST_REPLACE_SUMMARY,
)
class TestViewSet(ServiceWritesViewSet):
    serializer_class = TestSerializer
    filterset_class = TestFilter

    def get_queryset(self) -> QuerySet[Test]:
        tests = Test.objects.visible_to(self.request.user).order_by("name", "id")
        if self.action == "list":  # read as TEST_ROW_COLUMNS tuples
            return tests
        return (
            tests.select_related("test_set__agent", "current_version")
            .defer("test_set__description", *(f"test_set__agent__{name}" for name in UNLISTED_FIELDS))
            .prefetch_related("current_version__attached_checks")
        )


    def listed(self, page: list[tuple]) -> list[dict]:
        """The list's rows of `page` (TEST_ROW_COLUMNS tuples)."""
        checks = self.attached(page, TestCheck.objects.all(), LISTED_CHECK_COLUMNS)
        return test_rows(page, checks, self.get_serializer)

    def attached(self, page: list[tuple], queryset, columns: tuple[str, ...]) -> dict[int, list[tuple]]:
        """`columns` of the rows of `queryset` (a test version's) of each current version of `page`."""
        return related_rows(page, queryset, "test_version", columns, key=TEST_VERSION)

    create_serializer_class = TestCreateSerializer
    edit_serializer_class = TestEditSerializer
    create_service = services.create_test
    edit_service = services.edit_test
    archive_service = services.archive_test
    object_kwarg = "test"
    fixed_field = "test_set"
    put_defaults = {"checks": []}

    def rules(self, fields: dict, obj: Test | None = None) -> None:
        _test_rules(fields, test=obj)

    # Last in the class: the name `list` would hide the builtin from the class body below it.
    def list(self, request, *args, **kwargs):
        tests = self.filter_queryset(self.get_queryset()).values_list(*TEST_ROW_COLUMNS)
        return plain_list(self, tests, self.listed)

