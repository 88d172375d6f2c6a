"""REST API v1: checks (+ versions), test sets (+ launching their tests) and tests, over checks.services."""

from __future__ import annotations

import django_filters
from django.db.models import Prefetch, QuerySet
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from agents.models import Agent
from checks import services
from checks.models import Check, CheckVersion, Test, TestSet
from checks.serializers import (
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
)
from core.api import ArchivedFilterSet, VisibleModelChoiceFilter, validated_or_400
from teams.api import TeamScopedViewMixin


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
    __test__ = False
    agent = VisibleModelChoiceFilter(model=Agent)

    class Meta:
        model = TestSet
        fields = ["agent", "archived"]


class TestFilter(ArchivedFilterSet):
    __test__ = False
    test_set = VisibleModelChoiceFilter(model=TestSet)
    agent = VisibleModelChoiceFilter(model=Agent, field_name="test_set__agent")

    class Meta:
        model = Test
        fields = ["test_set", "agent", "archived"]


# ----------------------------------------------------------------------------- checks


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
    destroy=extend_schema(
        summary="Archive a check",
        description="Admins only. Its versions and every result that used them stay.",
    ),
)
class CheckViewSet(
    TeamScopedViewMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    serializer_class = CheckSerializer
    filterset_class = CheckFilter

    def get_queryset(self) -> QuerySet[Check]:
        return (
            Check.objects.visible_to(self.request.user)
            .select_related("agent", "current_version")
            .order_by("agent_id", "kind", "name", "id")
        )


    @extend_schema(
        summary="Add a check to an agent's library (version 1)",
        request=CheckCreateSerializer,
        responses={201: CheckSerializer},
    )
    def create(self, request, *args, **kwargs):
        form = CheckCreateSerializer(data=request.data, context=self.get_serializer_context())
        data = validated_or_400(form, _check_rules)
        check = services.create_check(by=request.user, **data)
        return self._show(check, status.HTTP_201_CREATED)

    @extend_schema(
        summary="Edit a check: saves version n+1",
        request=CheckEditSerializer,
        responses={200: CheckSerializer},
    )
    def partial_update(self, request, *args, **kwargs):
        check = self.get_object()
        form = CheckEditSerializer(data=request.data, context=self.get_serializer_context())
        data = validated_or_400(form, lambda fields: _check_rules(fields, current=check.current_version))
        check = services.edit_check(check=check, by=request.user, **data)
        return self._show(check)

    @extend_schema(
        summary="Replace a check's content: saves version n+1",
        request=CheckCreateSerializer,
        responses={200: CheckSerializer},
    )
    def update(self, request, *args, **kwargs):
        check = self.get_object()
        form = CheckCreateSerializer(data=request.data, context=self.get_serializer_context())
        data = validated_or_400(form, _check_rules)
        if data.pop("agent").pk != check.agent_id:
            return Response(
                {"agent": ["a check cannot move to another agent"]}, status=status.HTTP_400_BAD_REQUEST
            )
        data.setdefault("config", {})
        check = services.edit_check(check=check, by=request.user, **data)
        return self._show(check)

    def perform_destroy(self, instance: Check) -> None:
        services.archive_check(check=instance, by=self.request.user)

    @extend_schema(
        summary="A check's versions, newest first",
        responses={200: CheckVersionSerializer(many=True)},
        filters=False,
    )
    @action(detail=True, methods=["get"], serializer_class=CheckVersionSerializer, filterset_class=None)
    def versions(self, request, pk=None):
        check = self.get_object()
        versions = CheckVersion.objects.filter(parent=check).select_related("created_by").order_by("-number")
        page = self.paginate_queryset(versions)
        return self.get_paginated_response(CheckVersionSerializer(page, many=True).data)


# ----------------------------------------------------------------------------- test sets


@extend_schema_view(
    list=extend_schema(summary="List test sets"),
    retrieve=extend_schema(summary="Show a test set"),
)
class TestSetViewSet(
    TeamScopedViewMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    __test__ = False
    serializer_class = TestSetSerializer
    filterset_class = TestSetFilter

    def get_queryset(self) -> QuerySet[TestSet]:
        return (
            TestSet.objects.visible_to(self.request.user)
            .select_related("agent")
            .prefetch_related(Prefetch("tests", queryset=Test.objects.order_by("name", "id")))
            .order_by("name", "id")
        )


    @extend_schema(
        summary="Create a test set", request=TestSetCreateSerializer, responses={201: TestSetSerializer}
    )
    def create(self, request, *args, **kwargs):
        form = TestSetCreateSerializer(data=request.data, context=self.get_serializer_context())
        form.is_valid(raise_exception=True)
        test_set = services.create_test_set(by=request.user, **form.validated_data)
        return self._show(test_set, status.HTTP_201_CREATED)

    @extend_schema(
        summary="Rename a test set or change its description",
        request=TestSetEditSerializer,
        responses={200: TestSetSerializer},
    )
    def partial_update(self, request, *args, **kwargs):
        test_set = self.get_object()
        form = TestSetEditSerializer(data=request.data, context=self.get_serializer_context())
        form.is_valid(raise_exception=True)
        test_set = services.update_test_set(test_set=test_set, by=request.user, **form.validated_data)
        return self._show(test_set)

    @extend_schema(
        summary="Replace a test set's name and description",
        request=TestSetCreateSerializer,
        responses={200: TestSetSerializer},
    )
    def update(self, request, *args, **kwargs):
        test_set = self.get_object()
        form = TestSetCreateSerializer(data=request.data, context=self.get_serializer_context())
        form.is_valid(raise_exception=True)
        data = dict(form.validated_data)
        if data.pop("agent").pk != test_set.agent_id:
            return Response(
                {"agent": ["a test set cannot move to another agent"]}, status=status.HTTP_400_BAD_REQUEST
            )
        data.setdefault("description", "")
        test_set = services.update_test_set(test_set=test_set, by=request.user, **data)
        return self._show(test_set)

    @extend_schema(summary="Archive a test set", description="Admins only. Its tests' runs stay.")
    def destroy(self, request, *args, **kwargs):
        test_set = self.get_object()
        services.archive_test_set(test_set=test_set, by=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


# ----------------------------------------------------------------------------- tests


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
class TestViewSet(
    TeamScopedViewMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    __test__ = False
    serializer_class = TestSerializer
    filterset_class = TestFilter

    def get_queryset(self) -> QuerySet[Test]:
        return (
            Test.objects.visible_to(self.request.user)
            .select_related("test_set__agent", "current_version")
            .prefetch_related("current_version__attached_checks")
            .order_by("name", "id")
        )


    @extend_schema(
        summary="Create a test (version 1)", request=TestCreateSerializer, responses={201: TestSerializer}
    )
    def create(self, request, *args, **kwargs):
        form = TestCreateSerializer(data=request.data, context=self.get_serializer_context())
        data = validated_or_400(form, _test_rules)
        test = services.create_test(by=request.user, **data)
        return self._show(test, status.HTTP_201_CREATED)

    @extend_schema(
        summary="Edit a test: saves version n+1", request=TestEditSerializer, responses={200: TestSerializer}
    )
    def partial_update(self, request, *args, **kwargs):
        test = self.get_object()
        form = TestEditSerializer(data=request.data, context=self.get_serializer_context())
        data = validated_or_400(form, lambda fields: _test_rules(fields, test=test))
        test = services.edit_test(test=test, by=request.user, **data)
        return self._show(test)

    @extend_schema(
        summary="Replace a test's content: saves version n+1",
        request=TestCreateSerializer,
        responses={200: TestSerializer},
    )
    def update(self, request, *args, **kwargs):
        test = self.get_object()
        form = TestCreateSerializer(data=request.data, context=self.get_serializer_context())
        data = validated_or_400(form, _test_rules)
        if data.pop("test_set").pk != test.test_set_id:
            return Response(
                {"test_set": ["a test cannot move to another test set"]}, status=status.HTTP_400_BAD_REQUEST
            )
        data.setdefault("checks", [])
        test = services.edit_test(test=test, by=request.user, **data)
        return self._show(test)

    def perform_destroy(self, instance: Test) -> None:
        services.archive_test(test=instance, by=self.request.user)
