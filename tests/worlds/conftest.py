"""Every world test checks that a call its tool counts as a read (``Simulator.reads``) leaves the
tool's state as it found it: the console skips comparing a tool's state after such a call."""

import pytest

from worlds.engine.world import World


@pytest.fixture(autouse=True)
def _reads_are_checked(monkeypatch):
    monkeypatch.setattr(World, "check_reads", True)
