"""Shared pieces of the REST API v1 viewsets: role permission, pagination, safe fields and parser.

Viewsets stay thin: they read through ``visible_to(user)`` querysets (another team's object is a 404),
validate shapes with serializers and hand every write to a service. The helpers here make the edge
cases uniform: a viewer's write is a 403 before any body validation, a reference to an object the user
cannot see is a 400 "does not exist" (never a leak), and odd input (NUL bytes, lone surrogates, deep
nesting, huge ids) is a 400, never a 500.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import django_filters
from rest_framework import exceptions, pagination, serializers, status
from rest_framework.parsers import JSONParser
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from agents.models import ROLE_RANK, Membership, Role
from evalconsole.errors import DomainError

MAX_ID = 2**63 - 1  # BigAutoField
MAX_JSON_DEPTH = 32
NON_FIELD_ERRORS = api_settings.NON_FIELD_ERRORS_KEY


def roles_at_least(role: str) -> list[str]:
    return [r.value for r, rank in ROLE_RANK.items() if rank >= ROLE_RANK[Role(role)]]


# ----------------------------------------------------------------------------- permissions


class HasTeamRole(BasePermission):
    """Writes need a role: in at least one team to start, and in the object's team for object actions.

    The view declares ``write_roles = {"create": "member", "destroy": "admin", ...}`` ("*" is the
    default for unlisted unsafe actions, "member" when absent) and ``team_id_of(obj)``. Services check
    the same roles again; this class makes a viewer's write a 403 before its body is validated.
    """

    message = "Your role in this team does not allow this."

    def _role(self, request, view) -> str | None:
        if request.method in SAFE_METHODS:
            return None
        roles: Mapping[str, str | None] = getattr(view, "write_roles", {})
        return roles.get(getattr(view, "action", None) or "", roles.get("*", Role.MEMBER))

    def has_permission(self, request, view) -> bool:
        role = self._role(request, view)
        if role is None or not request.user.is_authenticated:
            return True  # IsAuthenticated answers the anonymous case
        if Membership.objects.filter(user=request.user, role__in=roles_at_least(role)).exists():
            return True
        self.message = f"Your role does not allow this (needs {Role(role).label.lower()} in a team)."
        return False

    def has_object_permission(self, request, view, obj) -> bool:
        role = self._role(request, view)
        if role is None:
            return True
        team_id = view.team_id_of(obj)
        allowed = Membership.objects.filter(
            user=request.user, team_id=team_id, role__in=roles_at_least(role)
        ).exists()
        if not allowed:
            self.message = f"Your role in this team does not allow this (needs {Role(role).label.lower()})."
        return allowed


# ----------------------------------------------------------------------------- pagination


class ApiPagination(pagination.PageNumberPagination):
    """`?page=N&page_size=M` (M up to 200); every list endpoint uses it with a stable ordering."""

    page_size_query_param = "page_size"
    max_page_size = 200

    def get_page_size(self, request):
        # A page_size that is not a positive whole number falls back to the default (DRF behaviour),
        # including huge or non-ASCII digit strings.
        raw = request.query_params.get(self.page_size_query_param, "")
        if raw and not (raw.isascii() and raw.isdigit() and len(raw) < 10):
            return self.page_size
        return super().get_page_size(request)

    def get_page_number(self, request, paginator):
        raw = request.query_params.get(self.page_query_param) or 1
        if isinstance(raw, str) and not (raw.isascii() and raw.isdigit() and len(raw) < 10) and raw != "last":
            raise exceptions.NotFound("Invalid page: expected a whole number.")
        return raw


# ----------------------------------------------------------------------------- parsing and fields


class SafeJSONParser(JSONParser):
    """JSON bodies; pathologically nested documents are a 400 (json raises RecursionError)."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise exceptions.ParseError("JSON parse error - the document is nested too deeply.") from None


def json_text_problem(value: Any, depth: int = 0) -> str | None:
    """Why a JSON value cannot be stored (a NUL byte, a lone surrogate, too deep), or None."""
    if depth > MAX_JSON_DEPTH:
        return f"is nested more than {MAX_JSON_DEPTH} levels deep"
    if isinstance(value, str):
        if "\x00" in value:
            return "must not contain NUL characters (\\u0000)"
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "must not contain lone surrogate characters"
        return None
    if isinstance(value, Mapping):
        for key, item in value.items():
            problem = json_text_problem(str(key), depth + 1) or json_text_problem(item, depth + 1)
            if problem:
                return problem
        return None
    if isinstance(value, list | tuple):
        for item in value:
            problem = json_text_problem(item, depth + 1)
            if problem:
                return problem
        return None
    if isinstance(value, float) and value != value:  # NaN never comes from strict JSON, but be sure
        return "must not contain NaN"
    return None


class StorableJSONField(serializers.JSONField):
    """A JSON value that every supported database can store."""

    def to_internal_value(self, data):
        data = super().to_internal_value(data)
        problem = json_text_problem(data)
        if problem:
            raise serializers.ValidationError(problem)
        return data


class StorableDictField(StorableJSONField):
    """A JSON object (typed as such in the schema)."""

    def to_internal_value(self, data):
        if not isinstance(data, Mapping):
            raise serializers.ValidationError("must be a JSON object")
        return super().to_internal_value(data)


class VisibleRelatedField(serializers.PrimaryKeyRelatedField):
    """An id of an object the requesting user can see; anything else "does not exist" (400, no leak).

    ``model`` must have a ``visible_to(user)`` queryset method. ``extra_filter`` narrows further (e.g.
    active objects only) with the same message.
    """

    default_error_messages = {
        "required": "This field is required.",
        "does_not_exist": "{noun} {pk_value} does not exist.",
        "incorrect_type": "must be an id (a whole number), not {data_type}.",
    }

    def __init__(
        self, model, *, noun: str | None = None, extra_filter: Mapping[str, Any] | None = None, **kwargs
    ):
        self.model = model
        self.noun = noun or model._meta.verbose_name.capitalize()
        self.extra_filter = dict(extra_filter or {})
        if not kwargs.get("read_only"):
            kwargs.setdefault("queryset", model.objects.none())
        super().__init__(**kwargs)

    def get_queryset(self):
        request = self.context.get("request")
        user = getattr(request, "user", None)
        return self.model.objects.visible_to(user).filter(**self.extra_filter)

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int | str):
            self.fail("incorrect_type", data_type=type(data).__name__)
        if isinstance(data, str):
            if not (data.isascii() and data.strip().isdigit()):
                self.fail("incorrect_type", data_type="str")
            data = int(data)
        if not 1 <= data <= MAX_ID:
            self.fail("does_not_exist", noun=self.noun, pk_value=data)
        try:
            return self.get_queryset().get(pk=data)
        except self.model.DoesNotExist:
            self.fail("does_not_exist", noun=self.noun, pk_value=data)

    def fail(self, key, **kwargs):
        kwargs.setdefault("noun", self.noun)
        super().fail(key, **kwargs)


def validated_or_400(form: serializers.Serializer, rules: Callable[[dict], object] | None = None) -> dict:
    """`form.validated_data`, or a 400 naming every bad field once.

    The serializer checks shapes and `rules(fields)` (a service's validator, raising DomainError) the
    values. When some fields do not parse, the others still go through `rules`, with None for the ones
    that failed, so one response names every problem; those keep the serializer's message only.
    """
    if form.is_valid():
        return dict(form.validated_data)
    errors = dict(form.errors)
    data = form.initial_data
    if rules is not None and isinstance(data, Mapping) and NON_FIELD_ERRORS not in errors:
        parsed = type(form)(
            data={k: v for k, v in data.items() if k not in errors}, partial=True, context=form.context
        )
        if parsed.is_valid():
            try:
                rules({**dict.fromkeys(errors), **parsed.validated_data})
            except DomainError as exc:
                for key, message in exc.errors.items():
                    if key.split(".")[0] not in errors:
                        errors[NON_FIELD_ERRORS if key == "__all__" else key] = [message]
    raise exceptions.ValidationError(errors)


# ----------------------------------------------------------------------------- filters


class VisibleModelChoiceFilter(django_filters.ModelChoiceFilter):
    """`?agent=ID` among what the user can see (another team's id is a 400, like an unknown one)."""

    def __init__(self, *args, model=None, **kwargs):
        self._model = model
        super().__init__(*args, queryset=self._visible, **kwargs)

    def _visible(self, request):
        return self._model.objects.visible_to(getattr(request, "user", None))


class ArchivedFilterSet(django_filters.FilterSet):
    """Lists show active objects unless `?archived=true`."""

    archived = django_filters.BooleanFilter(
        method="filter_archived", help_text="true: only archived ones; false (the default): only active ones."
    )

    def filter_queryset(self, queryset):
        if self.form.cleaned_data.get("archived") is None:
            queryset = queryset.filter(archived_at__isnull=True)
        return super().filter_queryset(queryset)

    def filter_archived(self, queryset, name, value):
        return queryset.filter(archived_at__isnull=not value)


# ----------------------------------------------------------------------------- viewsets


class TeamScopedViewMixin:
    """For viewsets over team-scoped models: role checks on writes, filters on lists only, `_show()`."""

    permission_classes = [*APIView.permission_classes, HasTeamRole]
    parser_classes = [SafeJSONParser]
    pagination_class = ApiPagination

    def filter_queryset(self, queryset):
        # Filters (and the "active only" default) shape lists; a detail URL finds archived objects too.
        return super().filter_queryset(queryset) if self.action == "list" else queryset

    def _show(self, obj, code: int = status.HTTP_200_OK) -> Response:
        """The object re-read through get_queryset() (so related rows are loaded), serialized."""
        fresh = self.get_queryset().get(pk=obj.pk)
        return Response(self.get_serializer(fresh).data, status=code)
