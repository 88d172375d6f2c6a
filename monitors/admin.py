from __future__ import annotations

from django import forms
from django.contrib import admin

from core.errors import DomainError
from monitors.models import Evaluation, Monitor, Task
from teams.admin_scope import ReadOnlyMixin, TeamScopedAdmin, actor


@admin.register(Task)
class TaskAdmin(ReadOnlyMixin, TeamScopedAdmin):
    # Ingested evidence (monitors.services.ingest_tasks): results were computed on it, so it is not edited.
    team_path = "agent__team"
    list_display = ["external_id", "agent", "completed_at", "sampled", "has_failures"]
    list_filter = ["sampled", "has_failures", "agent__team", "agent"]
    search_fields = ["external_id", "output"]
    list_select_related = ["agent"]
    date_hierarchy = "completed_at"
    readonly_fields = ["ingested_at"]


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
        from monitors import services as monitoring

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
        from monitors import services as monitoring

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
        from monitors import services as monitoring

        monitoring.delete_monitor(monitor=obj, by=actor(request))


@admin.register(Evaluation)
class EvaluationAdmin(ReadOnlyMixin, TeamScopedAdmin):
    team_path = "agent__team"
    list_display = ["id", "name", "agent", "status", "created_at", "finished_at"]
    list_filter = ["status", "agent__team"]
    search_fields = ["name"]
    list_select_related = ["agent"]
