"""REST API v1: personal API tokens. The secret is shown once (create response); only its hash is kept."""

from __future__ import annotations

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.response import Response

from evalconsole import services
from evalconsole.api_common import ApiPagination, SafeJSONParser
from evalconsole.models import ApiToken


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
