"""The world engine: scenes, refs, durations, the clock, the trace, the event log, credentials, the
call budget and the simulated tools. Pure Python: no Django imports anywhere in this package."""

from __future__ import annotations

from .problems import Problem, SceneInvalid
from .scene import Scene, load_scene

__all__ = ["Problem", "Scene", "SceneInvalid", "load_scene"]
