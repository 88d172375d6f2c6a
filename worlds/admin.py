"""Django admin: scenes and their versions, and worlds with their traces — all read-only here (scenes
are written through the pages and the API, which validate the file; worlds only by trials)."""

from __future__ import annotations

import json

from django.contrib import admin
from django.utils.html import format_html

from teams.admin_scope import ReadOnlyAdmin
from worlds.models import Scene, SceneVersion, World


class SceneVersionInline(admin.TabularInline):
    model = SceneVersion
    fields = ["number", "name", "filename", "created_by", "created_at"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Scene)
class SceneAdmin(ReadOnlyAdmin):
    team_path = "agent__team"
    list_display = ["name", "agent", "version", "updated_at", "archived_at"]
    list_select_related = ["agent"]
    search_fields = ["name"]
    readonly_fields = ["agent", "name", "version", "created_by", "created_at", "updated_at", "archived_at"]
    fields = readonly_fields
    inlines = [SceneVersionInline]


@admin.register(SceneVersion)
class SceneVersionAdmin(ReadOnlyAdmin):
    team_path = "parent__agent__team"
    list_display = ["name", "number", "parent", "created_at"]
    list_select_related = ["parent"]
    fields = ["parent", "number", "name", "filename", "source", "created_by", "created_at"]
    readonly_fields = fields


@admin.register(World)
class WorldAdmin(ReadOnlyAdmin):
    list_display = ["id", "scene_version", "team", "calls", "created_at", "ended_at", "end_reason"]
    list_select_related = ["scene_version", "team"]
    list_filter = ["end_reason"]
    fields = [
        "id",
        "team",
        "scene_version",
        "calls",
        "created_at",
        "ended_at",
        "end_reason",
        "trace",
        "events",
    ]
    readonly_fields = fields

    @admin.display(description="trace")
    def trace(self, world: World):
        return _pre(world.stored_trace())

    @admin.display(description="events")
    def events(self, world: World):
        return _pre(world.stored_events())


def _pre(value) -> str:
    return format_html("<pre style='max-height:30em;overflow:auto'>{}</pre>", json.dumps(value, indent=2))
