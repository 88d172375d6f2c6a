from __future__ import annotations

from django.contrib import admin

from runs.models import CheckResult, Run, RunCheck, Sample
from teams.admin_scope import ReadOnlyMixin, TeamScopedAdmin


class RunCheckInline(ReadOnlyMixin, admin.TabularInline):
    model = RunCheck
    fields = ["check_version", "required", "additional"]
    readonly_fields = fields
    extra = 0


@admin.register(Run)
class RunAdmin(ReadOnlyMixin, TeamScopedAdmin):
    team_path = "agent__team"
    list_display = [
        "id", "test_version", "agent", "status", "result", "done_samples", "total_samples", "created_at"
    ]
    list_filter = ["status", "result", "agent__team", "agent"]
    search_fields = ["test__name", "agent__name"]
    list_select_related = ["test_version", "agent"]
    date_hierarchy = "created_at"
    inlines = [RunCheckInline]


@admin.register(Sample)
class SampleAdmin(ReadOnlyMixin, TeamScopedAdmin):
    team_path = "run__agent__team"

    def has_delete_permission(self, request, obj=None):
        return False  # a run's counts and result are computed from its samples: delete the run instead
    list_display = ["id", "run", "scenario_index", "sample_index", "status", "outcome", "latency_ms"]
    list_filter = ["status", "outcome"]
    search_fields = ["output", "error"]
    list_select_related = ["run"]


@admin.register(CheckResult)
class CheckResultAdmin(ReadOnlyMixin, TeamScopedAdmin):
    team_path = "check_version__parent__agent__team"

    def has_delete_permission(self, request, obj=None):
        return False  # results are the evidence behind runs, monitors and evaluations
    list_display = ["id", "check_version", "outcome", "sample", "task", "monitor", "evaluation", "created_at"]
    list_filter = ["outcome", "check_version__kind"]
    search_fields = ["explanation", "check_version__name"]
    list_select_related = ["check_version", "sample", "task", "monitor", "evaluation"]
