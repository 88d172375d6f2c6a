"""The scenes of the test builder (checks/scene_mode.py): the builder is the checks floor's page; this
floor fills its scene slot when the app starts, over worlds.services, so a scene test built on the
page follows the same rules as one posted to the API."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from checks import services as checks_services
from core.errors import ValidationFailed
from worlds import services
from worlds.models import Scene, TestScene
from worlds.views import numbered, problems_by_line, summary_of

MAX_LIBRARY = 500  # scenes offered in the picker (an agent's library is far smaller)


class WorldsSceneMode:
    template = "worlds/_builder_scenes.html"

    def library(self, agent, *, keep: Sequence[int] = ()) -> list[Scene]:
        from django.db.models import Q

        scenes = list(
            Scene.objects.filter(Q(archived_at__isnull=True) | Q(pk__in=list(keep)), agent=agent)
            .select_related("current_version")
            .order_by("name", "pk")[:MAX_LIBRARY]
        )
        for scene in scenes:
            scene.summary = summary_of(scene.current_version)
        return scenes

    def scenes_of(self, test_version) -> list[int]:
        return list(
            TestScene.objects.filter(test_version=test_version)
            .order_by("position")
            .values_list("scene_id", flat=True)
        )

    def read_upload(self, upload) -> str:
        if upload.size > services.MAX_SOURCE_BYTES:
            raise ValidationFailed(f"the file is over {services.MAX_SOURCE_BYTES // 1024} KB", field="upload")
        try:
            return upload.read().decode("utf-8")
        except UnicodeDecodeError:
            raise ValidationFailed("the file is not UTF-8 text", field="upload") from None

    def validation(self, source: str) -> dict[str, Any]:
        problems: list[str] = []
        parsed = None
        if source.strip():
            try:
                parsed = services.parse_scene(source)
            except ValidationFailed as exc:
                problems = getattr(exc, "problems", None) or [str(v) for v in exc.errors.values()]
        pairs, bad = problems_by_line(problems)
        return {
            "problems": pairs,
            "lines": numbered(source, bad) if source.strip() else [],
            "parsed": parsed,
            "validated": bool(source.strip()),
        }

    def resolve_file(self, agent, source: str) -> int | str:
        parsed = services.parse_scene(source)
        same = (
            Scene.objects.filter(agent=agent, name=parsed.name, archived_at__isnull=True)
            .select_related("current_version")
            .order_by("pk")
            .first()
        )
        if same is None:
            return source
        if same.current_version is not None and same.current_version.source == source:
            return same.pk
        raise ValidationFailed(
            f"{agent.name}'s library already has a scene called {parsed.name!r} (version {same.version}): "
            "tick it under Library scenes, or give this file another `scene:` name",
            field="source",
        )

    def add_to_library(self, *, agent, by, source: str) -> Scene:
        found = self.resolve_file(agent, source)
        if isinstance(found, int):
            return Scene.objects.select_related("current_version").get(pk=found)
        return services.create_scene(agent=agent, by=by, source=source)

    def check_test(self, *, agent, name, scenes: list, checks, **thresholds) -> None:
        errors: dict[str, Any] = {}
        try:
            services.validate_scene_items(agent, scenes)
        except ValidationFailed as exc:
            errors.update(exc.errors)
        count = len(scenes) if isinstance(scenes, list) else 0
        try:
            checks_services.validate_test(
                agent=agent, name=name, scenarios=[{"input": "scene"}] * max(count, 1), checks=checks,
                **thresholds,
            )
        except ValidationFailed as exc:
            errors.update({k: v for k, v in exc.errors.items() if not k.startswith("scenarios")})
        if errors:
            raise ValidationFailed(errors)

    def create_test(self, *, test_set, by, name, scenes: list, checks, **thresholds):
        return services.create_scene_test(test_set=test_set, by=by, name=name, scenes=scenes, checks=checks,
                                          **thresholds)

    def edit_test(self, *, test, by, scenes: list, **changes):
        return services.edit_scene_test(test=test, by=by, scenes=scenes, **changes)
