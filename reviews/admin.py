"""Django admin of review queues and labels, scoped to the teams a staff user administers (teams.admin_scope).

A queue is created through reviews.services (name rules, permission); items and labels are only shown:
items are sent from runs, monitors and the task list, labels are made on the review page or the API.
"""

from __future__ import annotations

from django.contrib import admin
from django.core.exceptions import ValidationError

from core.errors import DomainError
from reviews import services
from reviews.models import Label, ReviewItem, ReviewQueue
from teams.admin_scope import ReadOnlyAdmin, ReadOnlyMixin, TeamScopedAdmin, actor


class ReviewItemInline(ReadOnlyMixin, admin.TabularInline):
    model = ReviewItem
    fields = ("position", "sample", "task", "added_by", "added_at")
    readonly_fields = fields
    extra = 0
    can_delete = False


@admin.register(ReviewQueue)
class ReviewQueueAdmin(TeamScopedAdmin):
    list_display = ("name", "team", "created_by", "created_at")
    list_filter = ("team",)
    search_fields = ("name", "description")
    list_select_related = ("team", "created_by")
    fields = ("team", "name", "description", "created_by", "created_at")
    inlines = [ReviewItemInline]

    def get_readonly_fields(self, request, obj=None):
        return self.fields if obj is not None else ("created_by", "created_at")

    def get_form(self, request, obj=None, **kwargs):
        form = super().get_form(request, obj, **kwargs)

        def clean(this):
            data = super(form, this).clean()
            if obj is None and not this.errors:
                try:  # the service's rules (a unique name per team) as form errors, before save_model
                    services.validate_new_queue(
                        team=data["team"], name=data.get("name", ""), description=data.get("description", "")
                    )
                except DomainError as exc:
                    raise ValidationError(str(exc)) from exc
            return data

        form.clean = clean
        return form

    def save_model(self, request, obj, form, change):
        if change:
            return
        saved = services.create_queue(
            team=form.cleaned_data["team"],
            by=actor(request),
            name=form.cleaned_data["name"],
            description=form.cleaned_data["description"],
        )
        obj.pk = saved.pk
        obj.refresh_from_db()


@admin.register(Label)
class LabelAdmin(ReadOnlyAdmin):
    team_path = "item__queue__team"
    list_display = ("item", "check_version", "reviewer", "verdict", "updated_at")
    list_filter = ("verdict", "item__queue")
    search_fields = ("note", "reviewer__username", "check_version__name")
    list_select_related = ("item__queue", "check_version", "reviewer")
