"""The team side of the REST API: the role permission every team-scoped viewset uses, and tokens."""

from __future__ import annotations

import copy

from django.db.models import QuerySet
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api import (
    PAGE_PARAMETERS,
    ApiPagination,
    ListFilterSet,
    SafeJSONParser,
    list_rows,
    validated_or_400,
)
from core.errors import ValidationFailed
from teams import access, services
from teams.models import ApiToken, Team

# ----------------------------------------------------------------------------- permissions

# A viewset action is one of the rule's operations (teams.access); custom POST actions (ping, cancel,
# launching a test set) act on an object without changing it.
ACTION_OPERATIONS = {
    "list": access.READ, "retrieve": access.READ, "create": access.CREATE, "update": access.CHANGE,
    "partial_update": access.CHANGE, "destroy": access.ARCHIVE,
}


def default_team(user) -> Team:
    """The team a create request without ``team`` means: the user's only team (else a 400 on ``team``)."""
    teams = list(Team.objects.visible_to(user)[:2])
    if len(teams) != 1:
        raise ValidationFailed(
            "required when you belong to several teams" if teams else "you are not a member of any team",
            field="team",
        )
    return teams[0]


def operation_of(request, view) -> access.Operation:
    if request.method in SAFE_METHODS:
        return access.READ
    return ACTION_OPERATIONS.get(getattr(view, "action", None) or "", access.USE)


class HasTeamRole(BasePermission):
    """Asks the permission rule (teams.access) before a body is validated, so a viewer's write is a 403.

    Before the object is known: the user needs the role in at least one team; for object actions, in
    the object's team. Services ask the same rule again.
    """

    message = "Your role in this team does not allow this."

    def has_permission(self, request, view) -> bool:
        operation = operation_of(request, view)
        if operation == access.READ or not request.user.is_authenticated:
            return True  # reads are scoped by visible_to(); IsAuthenticated answers the anonymous case
        model = view.get_queryset().model
        if access.teams_with_role(request.user, operation, model).exists():
            return True
        role = access.role_needed(operation, model)
        self.message = f"Your role does not allow this (needs {role.label.lower()} in a team)."
        return False

    def has_object_permission(self, request, view, obj) -> bool:
        operation = operation_of(request, view)
        if operation == access.READ or access.allows(request.user, operation, obj):
            return True
        role = access.role_needed(operation, obj)
        self.message = f"Your role in this team does not allow this (needs {role.label.lower()})."
        return False


# ----------------------------------------------------------------------------- viewsets


# For viewsets over team-scoped models: role checks on writes, filters on lists only, `_show()`.
# (A comment, not a docstring: drf-spectacular would publish a docstring as every endpoint's description.)
class TeamScopedViewMixin:

    permission_classes = [*APIView.permission_classes, HasTeamRole]
    parser_classes = [SafeJSONParser]
    pagination_class = ApiPagination

    def filter_queryset(self, queryset):
        # Filters (and the "active only" default) shape lists; a detail URL finds archived objects too.
        if self.action != "list":
            return queryset
        filterset = getattr(self, "filterset_class", None)
        if (
            self.request.query_params.keys() <= PAGE_PARAMETERS
            and isinstance(filterset, type)
            and issubclass(filterset, ListFilterSet)
            and list(self.filter_backends) == [DjangoFilterBackend]
        ):
            return filterset.unfiltered(queryset)  # no filter named: the FilterSet's default, no form
        return super().filter_queryset(queryset)

    def _body(self, serializer_class, *args, **kwargs) -> dict:
        """The request body as `serializer_class(*args, data=, **kwargs)` validates it, or a 400."""
        context = self.get_serializer_context()
        form = serializer_class(*args, data=self.request.data, context=context, **kwargs)
        form.is_valid(raise_exception=True)
        return dict(form.validated_data)

    def _show(self, obj, code: int = status.HTTP_200_OK) -> Response:
        """The object re-read through get_queryset() (so related rows are loaded), serialized."""
        fresh = self.get_queryset().get(pk=obj.pk)
        return Response(self.get_serializer(fresh).data, status=code)


# POST, PUT, PATCH and DELETE of a team-scoped viewset, each one call of the app's services.
#
# A viewset names its bodies (`create_serializer_class` for POST and PUT, `edit_serializer_class` for
# PATCH), its services (`create_service(by=, **data)`, `edit_service(<object_kwarg>=, by=, **data)`,
# `archive_service(<object_kwarg>=, by=)`), the parent a PUT may not change (`fixed_field`) with the
# defaults a PUT fills in (`put_defaults`), and may add the service's own rules (`rules(fields, obj)`)
# so that one 400 names every bad field (core.api.validated_or_400). DELETE archives.
#
# (A comment, not a docstring: drf-spectacular would publish a docstring as every endpoint's description.)
class ServiceWritesMixin:

    create_serializer_class: type | None = None
    edit_serializer_class: type | None = None
    object_kwarg = ""
    fixed_field = ""
    put_defaults: dict = {}

    def rules(self, fields: dict, obj=None) -> None:
        """The service's validation of `fields` (PATCH of `obj`, else POST or PUT); raises DomainError."""

    def _validated(self, serializer_class, obj=None) -> dict:
        form = serializer_class(data=self.request.data, context=self.get_serializer_context())
        return validated_or_400(form, lambda fields: self.rules(fields, obj))

    def create(self, request, *args, **kwargs):
        data = self._validated(self.create_serializer_class)
        return self._show(type(self).create_service(by=request.user, **data), status.HTTP_201_CREATED)

    def partial_update(self, request, *args, **kwargs):
        obj = self.get_object()
        data = self._validated(self.edit_serializer_class, obj)
        return self._show(type(self).edit_service(**{self.object_kwarg: obj}, by=request.user, **data))

    def update(self, request, *args, **kwargs):
        obj = self.get_object()
        data = self._validated(self.create_serializer_class)
        if self.fixed_field and data.pop(self.fixed_field).pk != getattr(obj, f"{self.fixed_field}_id"):
            noun, parent = obj._meta.verbose_name, self.fixed_field.replace("_", " ")
            message = f"a {noun} cannot move to another {parent}"
            return Response({self.fixed_field: [message]}, status=status.HTTP_400_BAD_REQUEST)
        for key, value in self.put_defaults.items():
            data.setdefault(key, copy.deepcopy(value))
        return self._show(type(self).edit_service(**{self.object_kwarg: obj}, by=request.user, **data))

    def perform_destroy(self, instance) -> None:
        type(self).archive_service(**{self.object_kwarg: instance}, by=self.request.user)


# A team-scoped model's list and detail; the viewset adds what else it does.
# (A comment, not a docstring: drf-spectacular would publish a docstring as every endpoint's description.)
# ListModelMixin with the rows drawn by core.api.list_rows: the same JSON, less DRF per field.
# (A comment, not a docstring: drf-spectacular would publish a docstring as every endpoint's description.)
class ListRowsMixin(mixins.ListModelMixin):
    # Fields a list reads from another attribute path (core.api.row_function), e.g. what its list
    # queryset prefetched into a plain list: {"checks": "listed_checks"}.
    row_sources: dict[str, str] | None = None

    def with_related(self, rows):
        """The list's rows with what their list reads besides (e.g. core.api.attach_rows); by default as
        they are."""
        return rows

    def list(self, request, *args, **kwargs):
        queryset = self.filter_queryset(self.get_queryset())
        page = self.paginate_queryset(queryset)
        rows = self.with_related(queryset if page is None else page)
        data = list_rows(self.get_serializer_class(), rows, self.get_serializer_context(), self.row_sources)
        return Response(data) if page is None else self.get_paginated_response(data)


class TeamScopedReadViewSet(
    TeamScopedViewMixin, ListRowsMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    pass


# A team-scoped model's list, detail and archive (DELETE); the viewset adds its writes.
class TeamScopedViewSet(
    TeamScopedViewMixin,
    ListRowsMixin,
    mixins.RetrieveModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    pass


# A team-scoped model written through its app's services (see ServiceWritesMixin).
class ServiceWritesViewSet(ServiceWritesMixin, TeamScopedViewSet):
    pass


def service_writes_schema(
    *, create_summary: str, edit_summary: str, replace_summary: str, create_description: str | None = None
):
    """Class decorator for a ServiceWritesViewSet: the schema of its POST (`create_serializer_class` body),
    PATCH (`edit_serializer_class` body) and PUT (`create_serializer_class` body), each answering with
    `serializer_class`."""

    def decorate(viewset):
        serializer, create = viewset.serializer_class, viewset.create_serializer_class
        return extend_schema_view(
            create=extend_schema(
                summary=create_summary, description=create_description, request=create,
                responses={201: serializer},
            ),
            partial_update=extend_schema(
                summary=edit_summary, request=viewset.edit_serializer_class, responses={200: serializer}
            ),
            update=extend_schema(summary=replace_summary, request=create, responses={200: serializer}),
        )(viewset)

    return decorate


def versions_action(version_serializer, *, summary: str):
    """A viewset's `GET {id}/versions/`: the object's versions (`version_serializer`'s model, whose
    `parent` is the object), newest first, paginated."""
    version_model = version_serializer.Meta.model

    @extend_schema(summary=summary, responses={200: version_serializer(many=True)}, filters=False)
    @action(detail=True, methods=["get"], serializer_class=version_serializer, filterset_class=None)
    def versions(self, request, pk=None):
        rows = version_model.objects.filter(parent=self.get_object())
        page = self.paginate_queryset(rows.select_related("created_by").order_by("-number"))
        return self.get_paginated_response(list_rows(version_serializer, page, {}))

    return versions


# ----------------------------------------------------------------------------- tokens


class TokenSerializer(serializers.ModelSerializer):
    prefix = serializers.CharField(
        source="display", read_only=True, help_text="ect_<key_id>_… (not the secret)."
    )
    active = serializers.BooleanField(source="is_active", read_only=True)

    class Meta:
        model = ApiToken
        fields = [
            "id",
            "name",
            "prefix",
            "can_write",
            "active",
            "expires_at",
            "last_used_at",
            "revoked_at",
            "created_at",
        ]
        read_only_fields = fields


class TokenCreatedSerializer(TokenSerializer):
    token = serializers.CharField(
        read_only=True, help_text="The secret: `Authorization: Bearer <token>`. Shown in this response only."
    )

    class Meta(TokenSerializer.Meta):
        fields = [*TokenSerializer.Meta.fields, "token"]
        read_only_fields = fields


class TokenCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    can_write = serializers.BooleanField(default=True, help_text="false: a read-only token.")
    expires_in_days = serializers.IntegerField(
        min_value=1,
        max_value=3650,
        required=False,
        allow_null=True,
        help_text="Leave out for a token that does not expire.",
    )


@extend_schema_view(
    list=extend_schema(summary="List your tokens", description="Yours only; revoked ones stay listed."),
    retrieve=extend_schema(summary="Show one of your tokens (never its secret)"),
    destroy=extend_schema(summary="Revoke a token", description="It stops working at once; it stays listed."),
)
class TokenViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.DestroyModelMixin, viewsets.GenericViewSet
):
    """A token acts as its user, so it can manage that user's tokens and no one else's."""

    serializer_class = TokenSerializer
    pagination_class = ApiPagination
    parser_classes = [SafeJSONParser]
    filter_backends = []

    def get_queryset(self) -> QuerySet[ApiToken]:
        return ApiToken.objects.visible_to(self.request.user).order_by("-created_at", "-id")

    @extend_schema(
        summary="Create a token", request=TokenCreateSerializer, responses={201: TokenCreatedSerializer}
    )
    def create(self, request, *args, **kwargs):
        form = TokenCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        issued = services.issue_token(user=request.user, **form.validated_data)
        body = TokenCreatedSerializer(issued.token).data
        body["token"] = issued.secret
        return Response(body, status=status.HTTP_201_CREATED)

    def perform_destroy(self, instance: ApiToken) -> None:
        services.revoke_token(token=instance, by=self.request.user)
