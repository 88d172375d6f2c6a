"""The test builder's scenes: a test holds plain scenarios or scenes (WORLDS.md "In the console").

The builder is this floor's page, but scenes, their files and the tests that play them live a floor up
(``worlds``), which this floor may not import. So the builder asks for them through this one slot,
which ``worlds`` fills when it starts (``WorldsConfig.ready``): the builder stays one page with one
URL, and the scenes' rules stay in ``worlds.services``. Without a provider the builder offers
scenarios only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

__all__ = ["SceneMode", "provider", "register"]


class SceneMode(Protocol):
    """What the builder needs from the floor that owns scenes."""

    template: str  # the builder's scenes section (a template of that floor)

    def library(self, agent, *, keep: Sequence[int] = ()) -> list[Any]:
        """The agent's active scenes (plus the archived ones in ``keep``), each with ``pk``, ``name``,
        ``version``, ``archived_at`` and ``summary`` (tools, checks). A fixed number of queries."""

    def scenes_of(self, test_version) -> list[int]:
        """The ids of the scenes a test version plays, in order ([] for plain scenarios)."""

    def read_upload(self, upload) -> str:
        """An uploaded scene file's text; ValidationFailed on ``upload`` when it is too big or not text."""

    def validation(self, source: str) -> dict[str, Any]:
        """The validation partial's context for ``source`` (every problem on its line)."""

    def resolve_file(self, agent, source: str) -> int | str:
        """A pasted file as a test takes it: the id of the library scene it already is (same name,
        same text), or the text. ValidationFailed on ``source`` when it does not validate, or when a
        different scene of that name is in the library."""

    def add_to_library(self, *, agent, by, source: str) -> Any:
        """Save a pasted file to the agent's library (or find it there, see resolve_file)."""

    def check_test(self, *, agent, name, scenes: list, checks, **thresholds) -> None:
        """Raise ValidationFailed naming every bad field at once, saving nothing."""

    def create_test(self, *, test_set, by, name, scenes: list, checks, **thresholds):
        """Create a test that plays ``scenes`` (ids, or files saved to the library in the same
        transaction)."""

    def edit_test(self, *, test, by, scenes: list, **changes):
        """Save version n+1 of a scene test."""


_provider: SceneMode | None = None


def register(mode: SceneMode) -> None:
    global _provider
    _provider = mode


def provider() -> SceneMode | None:
    return _provider
