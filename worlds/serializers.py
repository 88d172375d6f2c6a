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
