"""API shapes of scenes and their versions."""

from __future__ import annotations

from rest_framework import serializers

from agents.models import Agent
from core.api import VisibleRelatedField
from worlds.models import Scene, SceneVersion


class SceneSourceField(serializers.JSONField):
    """The scene file: YAML or JSON text, or the same object in JSON."""

    def to_internal_value(self, data):
        if not isinstance(data, str | dict):
            raise serializers.ValidationError("give the scene as YAML or JSON text, or as an object")
        return data


class SceneSerializer(serializers.ModelSerializer):
    """A library scene: its identity plus the file of its current version."""

    agent = serializers.IntegerField(source="agent_id", read_only=True)
    version = serializers.IntegerField(read_only=True, help_text="The current version number.")
    version_id = serializers.IntegerField(source="current_version_id", read_only=True, allow_null=True)
    source = serializers.CharField(source="current_version.source", read_only=True)

    class Meta:
        model = Scene
        fields = [
            "id",
            "agent",
            "name",
            "version",
            "version_id",
            "source",
            "created_at",
            "updated_at",
            "archived_at",
        ]


class SceneCreateSerializer(serializers.Serializer):
    agent = VisibleRelatedField(Agent, noun="Agent")
    source = SceneSourceField(help_text="The scene file (WORLDS.md): YAML or JSON text, or an object.")


class SceneEditSerializer(serializers.Serializer):
    """A changed file saves version n+1 (its name follows the file's `scene:`)."""

    source = SceneSourceField()


class SceneVersionSerializer(serializers.ModelSerializer):
    scene_id = serializers.IntegerField(source="parent_id", read_only=True)
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)

    class Meta:
        model = SceneVersion
        fields = ["id", "scene_id", "number", "name", "filename", "source", "created_by", "created_at"]
        read_only_fields = fields


# ----------------------------------------------------------------------------- scene tests


class SceneItemField(serializers.JSONField):
    """A scene a test plays: the id of a library scene, or a scene file (text or object) to add."""

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int | str | dict):
            raise serializers.ValidationError("a scene id, or a scene file as text or an object")
        return data


class AttachedSceneOutSerializer(serializers.Serializer):
    scene = serializers.IntegerField(source="scene_id")
    name = serializers.CharField(source="scene.name")


def _scene_serializers():
    """The tests API's shapes with ``scenes`` added (the tests viewset of this floor uses them)."""
    from checks.serializers import (
        ScenarioSerializer,
        TestCreateSerializer,
        TestEditSerializer,
        TestSerializer,
    )

    class SceneTestSerializer(TestSerializer):
        scenes = AttachedSceneOutSerializer(
            source="current_version.attached_scenes.all",
            many=True,
            read_only=True,
            help_text="The scenes the test plays, one scenario each ([] for plain scenarios).",
        )

        class Meta(TestSerializer.Meta):
            fields = [*TestSerializer.Meta.fields, "scenes"]

    class SceneTestEditSerializer(TestEditSerializer):
        scenes = serializers.ListField(
            child=SceneItemField(),
            required=False,
            max_length=1000,
            help_text="Scenes to play instead of scenarios: library scene ids, or scene files to add.",
        )

    class SceneTestCreateSerializer(TestCreateSerializer):
        scenarios = ScenarioSerializer(many=True, max_length=1000, required=False)
        scenes = serializers.ListField(
            child=SceneItemField(),
            required=False,
            max_length=1000,
            help_text="Scenes to play instead of scenarios: library scene ids, or scene files to add.",
        )

        def validate(self, attrs):
            if "scenes" in attrs and attrs.get("scenarios"):
                raise serializers.ValidationError(
                    {"scenes": ["a test holds either scenes or plain scenarios, not both"]}
                )
            if "scenes" not in attrs and "scenarios" not in attrs:
                raise serializers.ValidationError({"scenarios": ["give scenarios, or scenes to play"]})
            return attrs

    return SceneTestSerializer, SceneTestCreateSerializer, SceneTestEditSerializer


SceneTestSerializer, SceneTestCreateSerializer, SceneTestEditSerializer = _scene_serializers()
