"""What the run page shows of a sample's world: the scene's checks with their evidence linked to
trace entries, the trace (every call the agent really made), the timeline of the events (messages
and whom they reached, facts, decisions, faults, with simulated times), and the world's changes
(each tool's state before the first call → after the last, as a line diff)."""

from __future__ import annotations

import difflib
import json
from typing import Any

from worlds.engine.timeline import timeline
from worlds.models import World

MAX_CHANGE_LINES = 400


def _pretty(value: Any) -> str:
    if value is None or value == "":
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


def changes(seed: dict[str, Any], final: dict[str, Any]) -> list[dict[str, Any]]:
    """Per tool, the lines of its state that changed (``-`` before, ``+`` after), with context."""
    out = []
    for tool in sorted(set(seed) | set(final)):
        before = _pretty(seed.get(tool, {})).splitlines()
        after = _pretty(final.get(tool, {})).splitlines()
        lines = list(difflib.unified_diff(before, after, "before", "after", n=2, lineterm=""))[2:]
        if not lines:
            continue
        cut = len(lines) > MAX_CHANGE_LINES
        rows = [
            {"sign": line[:1] if line[:1] in "+-@" else " ", "text": line[1:] if line[:1] in "+- " else line}
            for line in lines[:MAX_CHANGE_LINES]
        ]
        out.append(
            {
                "tool": tool,
                "lines": rows,
                "cut": cut,
                "added": sum(r["sign"] == "+" for r in rows),
                "removed": sum(r["sign"] == "-" for r in rows),
            }
        )
    return out


def sample_world(world: World | None, world_checks: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The world section of a sample (None for a sample without a world)."""
    if world is None:
        return None
    trace = [
        {
            **entry,
            "request_text": _pretty(entry.get("request")),
            "response_text": _pretty(entry.get("response")),
        }
        for entry in world.stored_trace()
        if isinstance(entry, dict)
    ]
    events = timeline(e for e in world.stored_events() if isinstance(e, dict) and e.get("type") != "call")
    return {
        "id": world.id,
        "scene": world.scene_version.name,
        "scene_version": world.scene_version.number,
        "scene_id": world.scene_version.parent_id,
        "ended": world.end_reason or "live",
        "calls": world.calls,
        "checks": [c for c in world_checks if isinstance(c, dict)],
        "trace": trace,
        "events": events,
        "changes": changes(world.seed or {}, world.stored_states()),
    }
