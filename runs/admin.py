from __future__ import annotations

from django import forms
from django.contrib import admin

from evalconsole.admin_scope import TeamScopedAdmin, actor
from evalconsole.errors import DomainError
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


class MonitorAdminForm(forms.ModelForm):
    class Meta:
        model = Monitor
        fields = ["agent", "name", "checks", "sample_rate", "active"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk and "agent" in self.fields:
            self.fields["agent"].disabled = True  # its results and checks belong to this agent

    def clean(self):
        # The service's rules as form errors: checks of this agent only, a rate of 0-100 %.
        from runs import monitoring

        data = super().clean()
        agent = data.get("agent") or (self.instance.agent if self.instance.pk else None)
        try:
            if data.get("sample_rate") is not None:
                monitoring._clean_rate(data["sample_rate"])
            if agent is not None and data.get("checks") is not None:
                monitoring._resolve_monitor_checks(agent, [c.pk for c in data["checks"]])
        except DomainError as exc:
            for key, message in exc.errors.items():
                field = key.partition(".")[0]
                self.add_error(field if field in self.fields else None, message)
        return data


@admin.register(Monitor)
class MonitorAdmin(TeamScopedAdmin):
    team_path = "agent__team"
    form = MonitorAdminForm
    list_display = ["name", "agent", "sample_rate", "active", "created_at"]
    list_filter = ["active", "agent__team"]
    search_fields = ["name", "agent__name"]
    list_select_related = ["agent"]
    filter_horizontal = ["checks"]

    def save_model(self, request, obj, form, change):
        from runs import monitoring

        data = form.cleaned_data
        values = {k: data[k] for k in ("name", "sample_rate", "active")}
        checks = [c.pk for c in data.get("checks", [])]
        if change:
            monitoring.update_monitor(monitor=obj, by=actor(request), checks=checks, **values)
        else:
            created = monitoring.create_monitor(
                agent=data["agent"], by=actor(request), checks=checks, **values
            )
            obj.pk = created.pk
            obj._state.adding = False

    def save_related(self, request, form, formsets, change):
        pass  # the service set the checks

    def delete_model(self, request, obj):
        from runs import monitoring

        monitoring.delete_monitor(monitor=obj, by=actor(request))


@admin.register(Evaluation)
class EvaluationAdmin(ReadOnlyMixin, TeamScopedAdmin):
    team_path = "agent__team"
    list_display = ["id", "name", "agent", "status", "created_at", "finished_at"]
    list_filter = ["status", "agent__team"]
    search_fields = ["name"]
    list_select_related = ["agent"]
