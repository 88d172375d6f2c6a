"""Worlds: scenes played in simulated tools (WORLDS.md). engine/ is pure Python; the app comes next."""
