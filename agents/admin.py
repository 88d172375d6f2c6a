from __future__ import annotations

from django import forms
from django.contrib import admin

from agents.models import Agent, Node
from teams.admin_scope import ReadOnlyAdmin, ReadOnlyMixin, TeamScopedAdmin, actor


class NodeInline(ReadOnlyMixin, admin.TabularInline):
    """Shown, not edited here: nodes are written with their agent (agents.services, pages and API)."""

    model = Node
    extra = 0
    fields = readonly_fields = ["name", "kind"]
    can_delete = False


class AgentAdminForm(forms.ModelForm):
    # Checked by agents.services (the URL policy), not by Django's URLValidator, so that admin gives the
    # same reasons as the pages and the API.
    endpoint_url = forms.CharField(label="Endpoint URL", max_length=500)

    class Meta:
        model = Agent
        fields = "__all__"

    def clean(self):
        # The service's rules (URL scheme, timeout and retry ranges...) as field errors, not a 500.
        from agents import services

        data = super().clean()
        names = ("name", "endpoint_url", "timeout_s", "retries", "max_concurrency")
        checked = {f: data[f] for f in names if f in data}
        for field, message in services._validate_fields(checked).items():
            self.add_error(field if field in self.fields else None, message)
        return data


@admin.register(Agent)
class AgentAdmin(TeamScopedAdmin):
    form = AgentAdminForm
    list_display = ["name", "team", "kind", "protocol", "endpoint_url", "max_concurrency", "archived_at"]
    list_filter = ["team", "kind", "protocol"]
    search_fields = ["name", "endpoint_url", "team__name"]
    list_select_related = ["team"]
    # Archiving goes through the action (agents.services.archive_agent); an agent never changes team.
    readonly_fields = ["header_names", "archived_at", "created_at", "updated_at"]
    inlines = [NodeInline]
    actions = ["archive"]

    def get_readonly_fields(self, request, obj=None):
        fields = list(super().get_readonly_fields(request, obj))
        return [*fields, "team"] if obj is not None else fields

    @admin.action(description="Archive selected agents")
    def archive(self, request, queryset):
        from agents import services

        for agent in queryset:
            services.archive_agent(agent=agent, by=actor(request))

    def save_model(self, request, obj, form, change):
        from agents import services

        fields = {f: form.cleaned_data[f] for f in form.changed_data if f in form.cleaned_data}
        if change:
            changes = {k: v for k, v in fields.items() if k != "team"}
            services.update_agent(agent=obj, by=actor(request), **changes)
        else:
            created = services.create_agent(
                team=obj.team, by=actor(request), name=obj.name, endpoint_url=obj.endpoint_url, kind=obj.kind,
                protocol=obj.protocol, timeout_s=obj.timeout_s, retries=obj.retries,
                max_concurrency=obj.max_concurrency, model_name=obj.model_name, description=obj.description,
            )
            obj.pk = created.pk
            obj._state.adding = False


@admin.register(Node)
class NodeAdmin(ReadOnlyAdmin):
    # Read-only: a workforce's nodes are replaced as a list by agents.services.update_agent.
    team_path = "agent__team"
    list_display = ["name", "agent", "kind"]
    list_filter = ["kind", "agent__team"]
    search_fields = ["name", "agent__name"]
    list_select_related = ["agent"]
