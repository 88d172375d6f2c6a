"""evalconsole worlds: scenes played in simulated tools. The pure engine is worlds.engine."""
