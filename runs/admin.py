from __future__ import annotations

from django.contrib import admin

from evalconsole.admin_scope import TeamScopedAdmin
from runs.models import CheckResult, Evaluation, Monitor, Run, RunCheck, Sample


class ReadOnlyMixin:
    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class RunCheckInline(ReadOnlyMixin, admin.TabularInline):
    model = RunCheck
    fields = ["check_version", "required", "additional"]
    readonly_fields = fields
    extra = 0


@admin.register(Run)
class RunAdmin(ReadOnlyMixin, TeamScopedAdmin):
    team_path = "agent__team"
    list_display = ["id", "test_version", "agent", "status", "result", "done_samples", "total_samples", "created_at"]
    list_filter = ["status", "result", "agent__team", "agent"]
    search_fields = ["test__name", "agent__name"]
    list_select_related = ["test_version", "agent"]
    date_hierarchy = "created_at"
    inlines = [RunCheckInline]


@admin.register(Sample)
class SampleAdmin(ReadOnlyMixin, TeamScopedAdmin):
    team_path = "run__agent__team"
    list_display = ["id", "run", "scenario_index", "sample_index", "status", "outcome", "latency_ms"]
    list_filter = ["status", "outcome"]
    search_fields = ["output", "error"]
    list_select_related = ["run"]


@admin.register(CheckResult)
class CheckResultAdmin(ReadOnlyMixin, TeamScopedAdmin):
    team_path = "check_version__parent__agent__team"
    list_display = ["id", "check_version", "outcome", "sample", "task", "monitor", "evaluation", "created_at"]
    list_filter = ["outcome", "check_version__kind"]
    search_fields = ["explanation", "check_version__name"]
    list_select_related = ["check_version", "sample", "task", "monitor", "evaluation"]


@admin.register(Monitor)
class MonitorAdmin(TeamScopedAdmin):
    team_path = "agent__team"
    list_display = ["name", "agent", "sample_rate", "active", "created_at"]
    list_filter = ["active", "agent__team"]
    search_fields = ["name", "agent__name"]
    list_select_related = ["agent"]
    filter_horizontal = ["checks"]


@admin.register(Evaluation)
class EvaluationAdmin(ReadOnlyMixin, TeamScopedAdmin):
    team_path = "agent__team"
    list_display = ["id", "name", "agent", "status", "created_at", "finished_at"]
    list_filter = ["status", "agent__team"]
    search_fields = ["name"]
    list_select_related = ["agent"]
