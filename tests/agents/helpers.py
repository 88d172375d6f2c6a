"""Helpers for the agent-protocol tests."""

from __future__ import annotations

from typing import Any


class FakeSleep:
    """Records the delays asked for instead of sleeping; usable as the sync or the async sleep."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def sync(self, seconds: float) -> None:
        self.calls.append(seconds)

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


def scenario(text: str = "Where is my order EC-1042?", **fake: Any) -> dict[str, Any]:
    """A scenario whose metadata tells the fake agent how to behave."""
    return {"name": "s", "input": text, "metadata": {"fake": fake} if fake else {}}
