"""Django admin for staff who are not superusers: only the teams they administer.

A superuser acts as the system (`by=None` in services). Any other staff user sees, picks and changes
only objects of teams where they hold the admin role, and services check their role again
(`by=request.user`), so the admin can never do what that user could not do on the pages or the API.
"""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.utils import get_fields_from_path

from teams import access
from teams.models import Team, TeamScopedQuerySet


def team_path_of(model) -> str | None:
    """How `model` reaches its team ("" for Team), from its team-scoped QuerySet; None if it has none."""
    if model is Team:
        return ""
    queryset = model._default_manager.all()
    return queryset.team_path if isinstance(queryset, TeamScopedQuerySet) else None


def actor(request):
    """The `by=` for a service call from the admin: None (the system) for a superuser, else the user."""
    return None if request.user.is_superuser else request.user


def administered(queryset, user, team_path: str):
    """`queryset` narrowed to the teams where `user` is an admin (may archive, in the permission rule)."""
    teams = access.teams_with_role(user, access.ARCHIVE)
    return queryset.filter(**{f"{team_path}__in" if team_path else "pk__in": teams})


def _choices_in_scope(db_field, request, kwargs: dict) -> dict:
    """A relation field's form kwargs, its choices narrowed to the user's administered teams when the
    related model belongs to a team (a superuser's choices are every row)."""
    path = None if request.user.is_superuser else team_path_of(db_field.related_model)
    if path is not None:
        kwargs["queryset"] = administered(db_field.related_model._default_manager.all(), request.user, path)
    return kwargs


class TeamScopedAdmin(admin.ModelAdmin):
    """`team_path` leads from the model to its Team ("" for Team itself)."""

    team_path = "team"

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        return queryset if request.user.is_superuser else administered(queryset, request.user, self.team_path)

    def get_list_filter(self, request):
        filters = super().get_list_filter(request)
        if request.user.is_superuser:
            return filters
        # A related-object filter would list every team's names; offer only those in scope.
        scoped = []
        for entry in filters:
            if isinstance(entry, str) and get_fields_from_path(self.model, entry)[-1].is_relation:
                entry = (entry, admin.RelatedOnlyFieldListFilter)
            scoped.append(entry)
        return scoped

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        kwargs = _choices_in_scope(db_field, request, kwargs)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def formfield_for_manytomany(self, db_field, request, **kwargs):
        kwargs = _choices_in_scope(db_field, request, kwargs)
        return super().formfield_for_manytomany(db_field, request, **kwargs)


class ReadOnlyMixin:
    """For an admin or an inline: its rows are shown, never added or changed here."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class ReadOnlyAdmin(ReadOnlyMixin, TeamScopedAdmin):
    """Admins can look, never add, change or delete."""

    def has_delete_permission(self, request, obj=None):
        return False
