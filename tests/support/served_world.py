"""A scene's world served on loopback, for tests that call it as the agent's SDKs would."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from worlds.engine.serve import WorldServer
from worlds.engine.world import World


@contextlib.contextmanager
def served_world(scene) -> Iterator[tuple[WorldServer, World]]:
    """``(server, world)``: a world built from the loaded ``scene``, served until the block ends."""
    world = World.build(scene)
    with WorldServer() as server:
        server.add(world)
        yield server, world
