from __future__ import annotations

from django.contrib import admin

from teams import services
from teams.admin_scope import TeamScopedAdmin, actor
from teams.models import ApiToken, JudgeUsage, Membership, Team


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


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Team)
class TeamAdmin(TeamScopedAdmin):
    team_path = ""
    list_display = ["name", "slug", "judge_monthly_token_budget", "created_at"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [MembershipInline]

    def has_add_permission(self, request):
        return request.user.is_superuser and super().has_add_permission(request)


@admin.register(Membership)
class MembershipAdmin(TeamScopedAdmin):
    list_display = ["user", "team", "role", "created_at"]
    list_filter = ["role", "team"]
    search_fields = ["user__username", "team__name"]
    list_select_related = ["user", "team"]
