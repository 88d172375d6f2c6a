"""What the world tests share: a module's `scene` (its own fixture) built into a fresh world and served;
and a check on every call that a call its tool counts as a read (``Simulator.reads``) leaves the tool's
state as it found it (the console skips comparing a tool's state after such a call)."""

from __future__ import annotations

import pytest

from tests.support.served_world import served_world
from worlds.engine.world import World


@pytest.fixture(autouse=True)
def _reads_are_checked(monkeypatch):
    monkeypatch.setattr(World, "check_reads", True)


@pytest.fixture
def served(scene):
    """`(server, world)`: the module's loaded `scene` built into a fresh world, served on loopback."""
    with served_world(scene) as (server, world):
        yield server, world
