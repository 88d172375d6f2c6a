"""REST API v1: scenes (+ versions) in agents' libraries, over worlds.services."""

from __future__ import annotations

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema, extend_schema_view

from agents.models import Agent
from checks import api as checks_api
from checks import services as checks_services
from core.api import ArchivedFilterSet, VisibleModelChoiceFilter
from teams.api import ServiceWritesViewSet, service_writes_schema, versions_action
from worlds import services
from worlds.models import Scene, TestScene
from worlds.serializers import (
    SceneCreateSerializer,
    SceneEditSerializer,
    SceneSerializer,
    SceneTestCreateSerializer,
    SceneTestEditSerializer,
    SceneTestSerializer,
    SceneVersionSerializer,
)


class SceneFilter(ArchivedFilterSet):
    agent = VisibleModelChoiceFilter(model=Agent)

    class Meta:
        model = Scene
        fields = ["agent", "archived"]


def _scene_rules(fields: dict, obj: Scene | None = None) -> None:
    """Validate the file even when other fields did not parse, so one answer names every problem."""
    if fields.get("source") is not None:
        services.parse_scene(fields["source"])


@extend_schema_view(
    list=extend_schema(summary="List scenes", description="Active scenes of your teams' agents."),
    retrieve=extend_schema(summary="Show a scene (its current version's file)"),
    destroy=extend_schema(
        summary="Archive a scene", description="Admins only. Its versions and worlds stay."
    ),
)
@service_writes_schema(
    create_summary="Add a scene to an agent's library (version 1)",
    create_description="A scene that does not validate is a 400 listing every problem as "
    "`file:line: path: message`.",
    edit_summary="Edit a scene: saves version n+1",
    replace_summary="Replace a scene's file: saves version n+1",
)
class SceneViewSet(ServiceWritesViewSet):
    serializer_class = SceneSerializer
    filterset_class = SceneFilter
    create_serializer_class = SceneCreateSerializer
    edit_serializer_class = SceneEditSerializer
    create_service = services.create_scene
    edit_service = services.edit_scene
    archive_service = services.archive_scene
    object_kwarg = "scene"
    fixed_field = "agent"

    def get_queryset(self) -> QuerySet[Scene]:
        scenes = Scene.objects.visible_to(self.request.user).order_by("agent_id", "name", "id")
        if self.action == "list":  # what SceneSerializer reads: no agent row, the version's source only
            listed = scenes.select_related("current_version")
            return listed.only(*checks_api.LISTED_COLUMNS, "current_version__source")
        return scenes.select_related("agent", "current_version")

    def rules(self, fields: dict, obj: Scene | None = None) -> None:
        _scene_rules(fields, obj)

    versions = versions_action(SceneVersionSerializer, summary="A scene's versions, newest first")


# ----------------------------------------------------------------------------- tests that play scenes


def _create_test(*, by, scenes=None, **fields):
    if scenes is not None:
        return services.create_scene_test(by=by, scenes=scenes, **fields)
    return checks_services.create_test(by=by, **fields)


@service_writes_schema(
    create_summary=checks_api.TEST_CREATE_SUMMARY,
    create_description="With `scenarios`, or with `scenes` (library scene ids or scene files): each "
    "sample of a scene plays in a fresh world.",
    edit_summary=checks_api.TEST_EDIT_SUMMARY,
    replace_summary=checks_api.TEST_REPLACE_SUMMARY,
)
class TestViewSet(checks_api.TestViewSet):
    """The tests API with scenes: the checks floor's viewset, plus `scenes` (worlds sit above checks)."""

    serializer_class = SceneTestSerializer
    create_serializer_class = SceneTestCreateSerializer
    edit_serializer_class = SceneTestEditSerializer
    create_service = _create_test
    edit_service = services.edit_scene_test

    def get_queryset(self):
        if self.action == "list":
            return super().get_queryset()  # read as tuples (checks.serializers.TEST_ROW_COLUMNS)
        return super().get_queryset().prefetch_related("current_version__attached_scenes__scene")

    def listed(self, page):
        # Each version's scenes with the scene's name joined, after the fields of the checks floor.
        rows = super().listed(page)
        scenes = self.attached(page, TestScene.objects.all(), ("scene_id", "scene__name"))
        for row in rows:
            if row.get("version_id") is not None:  # else drawn by the serializer: scenes left out
                row["scenes"] = [{"scene": scene, "name": name} for scene, name in scenes[row["version_id"]]]
        return rows

    def rules(self, fields: dict, obj=None) -> None:
        scenes = fields.pop("scenes", None)
        if scenes is None:
            return super().rules(fields, obj)
        test_set = obj.test_set if obj is not None else fields.get("test_set")
        if test_set is None:
            return None
        services.validate_scene_items(test_set.agent, scenes)
        placeholder = [{"input": "scene"}] * len(scenes) if isinstance(scenes, list) else scenes
        return super().rules({**fields, "scenarios": placeholder}, obj)
