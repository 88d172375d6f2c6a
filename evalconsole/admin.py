from __future__ import annotations

from django.contrib import admin

from evalconsole import services
from evalconsole.admin_scope import TeamScopedAdmin, actor
from evalconsole.models import ApiToken, JudgeUsage


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["name", "user", "display", "can_write", "expires_at", "last_used_at", "revoked_at"]
    list_filter = ["can_write", ("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["name", "user__username", "key_id"]
    list_select_related = ["user"]
    # A token stays its user's, and a revoked token stays revoked (revoking is the action below).
    readonly_fields = ["user", "key_id", "revoked_at", "last_used_at", "created_at"]
    actions = ["revoke"]

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        return queryset if request.user.is_superuser else queryset.filter(user=request.user)

    def has_add_permission(self, request):
        return False  # secrets are issued on the Tokens page or with `manage.py create_api_token`

    @admin.action(description="Revoke selected tokens")
    def revoke(self, request, queryset):
        for token in queryset:
            services.revoke_token(token=token, by=actor(request))


@admin.register(JudgeUsage)
class JudgeUsageAdmin(TeamScopedAdmin):
    list_display = ["team", "month", "tokens_in", "tokens_out", "calls", "updated_at"]
    list_filter = ["month"]
    search_fields = ["team__name", "team__slug"]
    list_select_related = ["team"]
    readonly_fields = ["team", "month", "tokens_in", "tokens_out", "calls", "updated_at"]

    def has_add_permission(self, request):
        return False  # rows are written by the judge client as it spends
