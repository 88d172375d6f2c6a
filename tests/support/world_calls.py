"""A stored world for tests of the console's world storage, and the Slack calls they make to it."""

from __future__ import annotations

import json

from tests import factories
from worlds import services
from worlds.engine.http import Request


def stored_world(source: str):
    """(the World row, its engine world) of the scene ``source``, started for a new team's agent."""
    team = factories.team()
    admin = factories.member_of(team, "admin")
    scene = services.create_scene(agent=factories.agent(team, admin), by=admin, source=source)
    return services.start_world(version=scene.current_version)


def slack_post(engine, text: str, channel: str = "slack_support") -> Request:
    """``chat.postMessage`` of ``text`` to the channel of ref ``channel``, with the world's bot token."""
    return Request.make(
        "POST",
        "/api/chat.postMessage",
        "",
        {
            "Authorization": f"Bearer {engine.credentials['slack']['token']}",
            "Content-Type": "application/json",
        },
        json.dumps({"channel": engine.ids[channel], "text": text}).encode(),
    )


def slack_history(engine, channel: str = "slack_support") -> Request:
    """``conversations.history`` of the channel of ref ``channel``, with the world's bot token."""
    return Request.make(
        "GET",
        "/api/conversations.history",
        f"channel={engine.ids[channel]}",
        {"Authorization": f"Bearer {engine.credentials['slack']['token']}"},
        b"",
    )
