"""A trial's files as WORLDS.md "Results" names them, read from a stored world: ``trace.json``,
``events.json`` and ``world.json`` (the final state). The same engine functions write them for
``evalconsole scene run`` on this machine, so a run on the console downloads the same shapes."""

from __future__ import annotations

from typing import Any

from worlds import services

__all__ = ["MAX_ENTRIES", "trial_files"]

# A world holds at most 501 agent calls (the call budget) and the events they caused; this bound
# only keeps an answer finite if that ever changes.
MAX_ENTRIES = 20_000


def trial_files(world_id: str) -> dict[str, Any]:
    """``{"world", "scene", "ended", "trace", "events", "final_state", "truncated"}`` of a stored
    world (no credentials: the trace never stores them and the state holds none). Raises
    services.WorldMissing."""
    world = services.load_world(world_id)
    trace = world.trace.to_list()
    events = world.events.to_list()
    return {
        "world": world.id,
        "scene": world.scene.name,
        "ended": world.ended or "",
        "trace": trace[:MAX_ENTRIES],
        "events": events[:MAX_ENTRIES],
        "final_state": world.final_state(),
        "truncated": len(trace) > MAX_ENTRIES or len(events) > MAX_ENTRIES,
    }
