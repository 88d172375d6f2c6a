"""What the world tests share: a module's `scene` (its own fixture) built into a fresh world and served."""

from __future__ import annotations

import pytest

from tests.support.served_world import served_world


@pytest.fixture
def served(scene):
    """`(server, world)`: the module's loaded `scene` built into a fresh world, served on loopback."""
    with served_world(scene) as (server, world):
        yield server, world
