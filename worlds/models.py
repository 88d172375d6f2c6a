"""Scenes in an agent's library (Scene + immutable SceneVersion, as checks are versioned), the scenes
a test version refers to (TestScene), and live worlds (World): one row per trial, so any web process
serves ``/worlds/<id>/...`` and any worker runs the trial."""

from __future__ import annotations

from typing import Any

from django.db import models

from agents.models import Agent
from checks.models import TestVersion
from core.immutable import ImmutableModel, ImmutableVersion, Versioned, VersionedQuerySet, current_version_of
from teams.models import Team, TeamScopedQuerySet
from worlds import pieces
from worlds.fields import TextJSONField


class SceneQuerySet(TeamScopedQuerySet, VersionedQuerySet):
    team_path = "agent__team"


class Scene(Versioned):
    """A stable identity in an agent's library; the scene file lives in versions."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="scenes")
    # Denormalised from the current version (its `scene:` name) for lists; the service keeps it.
    name = models.CharField(max_length=100)
    current_version = current_version_of("SceneVersion")
    detail_route = "worlds:scene-detail"

    objects = SceneQuerySet.as_manager()

    class Meta:
        ordering = ["name", "id"]
        indexes = [models.Index(fields=["agent", "name"], name="scene_agent_name")]


class SceneVersion(ImmutableVersion):
    """The scene file as it was saved (YAML or JSON text), frozen."""

    parent = models.ForeignKey(Scene, on_delete=models.CASCADE, related_name="versions")
    name = models.CharField(max_length=100)
    source = models.TextField()
    filename = models.CharField(max_length=100, default="scene.yaml")

    def in_use(self) -> bool:
        return self.worlds.exists()


class TestScene(ImmutableModel):
    """A scene identity a test version refers to; a run pins the scene's version at launch."""

    test_version = models.ForeignKey(TestVersion, on_delete=models.CASCADE, related_name="attached_scenes")
    scene = models.ForeignKey(Scene, on_delete=models.PROTECT, related_name="test_attachments")
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["test_version", "position"]
        constraints = [
            models.UniqueConstraint(fields=["test_version", "scene"], name="testscene_unique_scene")
        ]

    def in_use(self) -> bool:
        return self.test_version.in_use()


class WorldQuerySet(TeamScopedQuerySet):
    team_path = "team"


class World(models.Model):
    """One trial's world, stored in parts so a call writes only what it changed:

    - ``state``: the engine's small head (counters, the end reason; no credentials), every call;
    - ``ids``: refs → the ids the tools gave the records, rewritten only when a call changed them;
    - ``seed``: each tool's state before the first call, written once when the world starts;
    - ``tool_states``: each simulated tool's state in pieces (worlds.pieces: a row per record of a
      large collection, keyed by its path), a call writing only the pieces it changed;
    - ``entries``: the trace and the events, one row each, appended (never rewritten).

    ``secrets`` holds the credentials, encrypted. The URL answers while ``ended_at`` is empty, 410 after."""

    id = models.CharField(primary_key=True, max_length=40)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="worlds")
    scene_version = models.ForeignKey(SceneVersion, on_delete=models.PROTECT, related_name="worlds")
    state = models.JSONField(default=dict)
    ids = models.JSONField(default=dict)
    seed = models.JSONField(default=dict)
    secrets = models.TextField(blank=True)
    calls = models.PositiveIntegerField(default=0)
    # A random number the latest call stored on the fast path wrote with it: the call's other
    # statements are conditional on it, and a call whose connection broke finds out by it whether it
    # was stored (worlds.callstore).
    stamp = models.BigIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    end_reason = models.CharField(max_length=20, blank=True)

    objects = WorldQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "id"]

    def __str__(self) -> str:
        return f"world {self.id} ({self.scene_version})"

    @property
    def live(self) -> bool:
        return self.ended_at is None

    # Reading the parts (each uses a prefetch of ``entries`` / ``tool_states`` when there is one).
    def stored_entries(self, kind: str) -> list[dict]:
        rows = [e for e in self.entries.all() if e.kind == kind]
        rows.sort(key=lambda e: e.seq)
        return [e.data for e in rows]

    def stored_trace(self) -> list[dict]:
        return self.stored_entries(WorldEntry.TRACE)

    def stored_events(self) -> list[dict]:
        return self.stored_entries(WorldEntry.EVENT)

    def stored_states(self) -> dict[str, dict]:
        rows: dict[str, list[tuple[str, str, Any]]] = {}
        for s in self.tool_states.all():
            rows.setdefault(s.tool, []).append((s.path, s.shape, s.data))
        return {tool: pieces.assemble(tool_rows)[0] for tool, tool_rows in rows.items()}


class WorldToolState(models.Model):
    """A piece of one simulated tool's state in a world as of the world's latest call (worlds.pieces):
    the value at ``path`` whole (``shape`` empty; ``[]`` is the whole state), or the skeleton of a
    container stored split (``d``: a dict's keys in order, ``l``: a list's length)."""

    # No index of its own: the unique (world, tool, path) index serves every lookup by world.
    world = models.ForeignKey(World, on_delete=models.CASCADE, related_name="tool_states", db_index=False)
    tool = models.CharField(max_length=40)
    path = models.TextField(default=pieces.ROOT)
    shape = models.CharField(max_length=1, blank=True, default=pieces.LEAF)
    data = TextJSONField(default=dict)  # PostgreSQL json: written whole, read whole

    class Meta:
        ordering = ["world", "tool", "path"]
        constraints = [
            models.UniqueConstraint(fields=["world", "tool", "path"], name="worldtoolstate_unique_path")
        ]


class WorldEntry(models.Model):
    """One trace entry (``seq``) or event (``n``) of a world, appended once and never changed."""

    TRACE = "trace"
    EVENT = "event"
    KINDS = [(TRACE, "trace entry"), (EVENT, "event")]

    # No index of its own: the unique (world, kind, seq) index serves every lookup by world.
    world = models.ForeignKey(World, on_delete=models.CASCADE, related_name="entries", db_index=False)
    kind = models.CharField(max_length=5, choices=KINDS)
    seq = models.PositiveIntegerField()
    data = TextJSONField(default=dict)  # PostgreSQL json: written whole, read whole

    class Meta:
        ordering = ["world", "kind", "seq"]
        constraints = [models.UniqueConstraint(fields=["world", "kind", "seq"], name="worldentry_unique_seq")]
