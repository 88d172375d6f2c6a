from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.db.models import Count
from django.shortcuts import redirect

from checks import kinds, services
from checks.forms import StorableJSONFormField
from checks.models import Check, CheckVersion, Test, TestCheck, TestSet, TestVersion
from core.errors import DomainError
from teams.admin_scope import ReadOnlyAdmin, TeamScopedAdmin, actor


class UsageFilter(admin.SimpleListFilter):
    title = "where used"
    parameter_name = "used"

    def lookups(self, request, model_admin):
        return [("in_tests", "In tests"), ("in_monitors", "In dashboard"), ("unused", "Unused")]

    def queryset(self, request, queryset):
        return queryset.used(self.value()) if self.value() else queryset


class CheckAdminForm(forms.ModelForm):
    kind = forms.ChoiceField(choices=kinds.kind_choices)
    config = StorableJSONFormField(initial=dict, required=False, help_text="The kind's settings as JSON.")

    class Meta:
        model = Check
        fields = ["agent", "name", "kind"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk and self.instance.current_version_id:
            self.fields["config"].initial = self.instance.current_version.config
            self.fields["agent"].disabled = True

    def clean(self):
        # The service's own rules, reported on the form: a bad config is a field error, not a 500.
        data = super().clean()
        if self.instance.pk and self.instance.archived_at is not None:
            raise forms.ValidationError("This check is archived; restore it before editing.")
        if self.errors:
            return data
        try:
            services.validate_check(
                name=data.get("name"), kind=data.get("kind"), config=data.get("config") or {}
            )
        except DomainError as exc:
            for key, message in exc.errors.items():
                field = key.partition(".")[0]
                self.add_error(field if field in self.fields else None, f"{key}: {message}")
        return data


class CheckVersionInline(admin.TabularInline):
    model = CheckVersion
    fields = ["number", "name", "kind", "config", "created_by", "created_at"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    ordering = ["-number"]

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Check)
class CheckAdmin(TeamScopedAdmin):
    team_path = "agent__team"
    form = CheckAdminForm
    list_display = ["name", "kind", "agent", "version", "n_tests", "n_monitors", "archived_at", "updated_at"]
    list_filter = ["kind", UsageFilter, ("archived_at", admin.EmptyFieldListFilter), "agent__team", "agent"]
    search_fields = ["name", "agent__name"]
    list_select_related = ["agent"]
    inlines = [CheckVersionInline]
    actions = ["archive", "restore"]

    def get_queryset(self, request):
        return (
            super().get_queryset(request)
            .annotate(
                n_tests=Count("test_attachments", distinct=True), n_monitors=Count("monitors", distinct=True)
            )
        )

    @admin.display(ordering="n_tests", description="test versions")
    def n_tests(self, obj):
        return obj.n_tests

    @admin.display(ordering="n_monitors", description="monitors")
    def n_monitors(self, obj):
        return obj.n_monitors

    def save_model(self, request, obj, form, change):
        # Every write goes through the service: an edit becomes version n+1.
        data = form.cleaned_data
        try:
            if change:
                saved = services.edit_check(check=obj, by=actor(request), name=data["name"],
                                            kind=data["kind"], config=data.get("config") or {})
            else:
                saved = services.create_check(agent=data["agent"], by=actor(request), name=data["name"],
                                              kind=data["kind"], config=data.get("config") or {})
        except DomainError as exc:
            self.message_user(request, f"Not saved: {exc}", level=messages.ERROR)
            raise
        obj.pk = saved.pk
        obj._state.adding = False
        obj.refresh_from_db()  # the saved name, version and current version, for the messages and the log

    def save_related(self, request, form, formsets, change):
        pass  # versions are created by the service, never through the inline

    def construct_change_message(self, request, form, formsets, add=False):
        # The versions inline is read-only and was never saved, so it has nothing to report.
        return super().construct_change_message(request, form, [], add)

    def has_delete_permission(self, request, obj=None):
        return False  # hides the delete button and bulk action; delete_view says why

    def delete_view(self, request, object_id, extra_context=None):
        self.message_user(
            request,
            "Checks are archived, not deleted: runs, their results and tests keep the check versions they "
            "used. Select the check in the list and use “Archive selected checks” to hide it.",
            level=messages.WARNING,
        )
        return redirect("admin:checks_check_change", object_id)

    @admin.action(description="Archive selected checks")
    def archive(self, request, queryset):
        for check in queryset:
            users = [t.name for t in Test.objects.using_check(check).order_by("name", "pk")[:50]]
            services.archive_check(check=check, by=actor(request), confirm=True)  # selected on purpose
            if users:
                self.message_user(
                    request,
                    f"{check.name} is still used by {len(users)} test{'s' if len(users) != 1 else ''}: "
                    f"{services.names_list(users)}. Archived, it keeps running its last version "
                    f"(v{check.version}) in them until a test is edited; saving one then asks to remove "
                    "it or to restore the check.",
                    level=messages.WARNING,
                )

    @admin.action(description="Restore selected checks")
    def restore(self, request, queryset):
        for check in queryset:
            services.archive_check(check=check, by=actor(request), archived=False)


@admin.register(CheckVersion)
class CheckVersionAdmin(ReadOnlyAdmin):
    team_path = "parent__agent__team"
    list_display = ["name", "number", "kind", "parent", "created_by", "created_at"]
    list_filter = ["kind", "parent__agent__team"]
    search_fields = ["name", "parent__name"]
    list_select_related = ["parent", "created_by"]
    fields = ["parent", "number", "name", "kind", "config", "created_by"]


@admin.register(TestSet)
class TestSetAdmin(TeamScopedAdmin):
    team_path = "agent__team"
    list_display = ["name", "agent", "created_at", "archived_at"]
    list_filter = ["agent__team", "agent"]
    search_fields = ["name", "agent__name"]
    list_select_related = ["agent"]
    readonly_fields = ["archived_at"]  # archive and restore are the actions (checks.services)
    actions = ["archive", "restore"]

    def get_readonly_fields(self, request, obj=None):
        fields = list(super().get_readonly_fields(request, obj))
        return [*fields, "agent"] if obj is not None else fields  # its tests use this agent's checks

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        if change:
            services.update_test_set(
                test_set=obj, by=actor(request), name=data["name"], description=data.get("description", "")
            )
        else:
            created = services.create_test_set(
                agent=data["agent"], by=actor(request), name=data["name"],
                description=data.get("description", ""),
            )
            obj.pk = created.pk
            obj._state.adding = False

    @admin.action(description="Archive selected test sets")
    def archive(self, request, queryset):
        for test_set in queryset:
            services.archive_test_set(test_set=test_set, by=actor(request))

    @admin.action(description="Restore selected test sets")
    def restore(self, request, queryset):
        for test_set in queryset:
            services.archive_test_set(test_set=test_set, by=actor(request), archived=False)


class TestCheckInline(admin.TabularInline):
    model = TestCheck
    fields = ["library_check", "required", "position"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


class TestAdminForm(forms.ModelForm):
    def clean(self):
        # edit_test's own rules on the new name plus the current content (an archived check, a limit
        # lowered since): a form error, not a 500 from save_model.
        data = super().clean()
        version = self.instance.current_version if self.instance.pk else None
        if version is None or self.errors:
            return data
        fields = {**services.current_test_fields(version), "name": data.get("name")}
        try:
            services.validate_test(agent=self.instance.test_set.agent, **fields)
        except DomainError as exc:
            for key, message in exc.errors.items():
                self.add_error("name" if key == "name" else None, f"{key}: {message}")
        return data


@admin.register(Test)
class TestAdmin(TeamScopedAdmin):
    team_path = "test_set__agent__team"
    list_display = ["name", "test_set", "version", "updated_at", "archived_at"]
    list_filter = ["test_set__agent__team", "test_set"]
    search_fields = ["name", "test_set__name"]
    list_select_related = ["test_set"]
    # Only the name is saved here (checks.services.edit_test); the rest would be silently dropped.
    readonly_fields = ["test_set", "current_version", "version", "created_by", "archived_at"]

    def has_add_permission(self, request):
        return False  # tests are built in the test builder or over the API (scenarios, checks, limits)

    def get_form(self, request, obj=None, change=False, **kwargs):
        kwargs.setdefault("form", TestAdminForm)
        return super().get_form(request, obj, change, **kwargs)

    def save_model(self, request, obj, form, change):
        services.edit_test(test=obj, by=actor(request), name=form.cleaned_data["name"])


@admin.register(TestVersion)
class TestVersionAdmin(ReadOnlyAdmin):
    team_path = "test__test_set__agent__team"
    list_display = ["name", "number", "test", "samples_per_scenario", "required_pass_rate", "created_at"]
    list_filter = ["test__test_set__agent__team"]
    search_fields = ["name", "test__name"]
    list_select_related = ["test"]
    fields = [
        "test", "number", "name", "scenarios", "samples_per_scenario", "min_valid_per_scenario",
        "required_pass_rate", "created_by",
    ]
    inlines = [TestCheckInline]
