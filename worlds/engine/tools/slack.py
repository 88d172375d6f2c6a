"""Slack: users, channels and seed messages; the ``slack.message`` state check; message effects. The
simulator (the Web API the official clients call, the check and the effect) is
:class:`~worlds.engine.tools._slack_web.SlackSimulator`, in its own module for length."""

from __future__ import annotations

from typing import Any

from ..schema import Field, RecordKind, StateCheck, Tool, Validator, register
from ._slack_web import SlackSimulator


def _one_place(record: dict[str, Any], path: str, v: Validator, raw: dict[str, Any]) -> None:
    if ("channel" in record) == ("dm" in record):
        v.add(path, "give exactly one of channel or dm")


USER = {
    "name": Field("str", required=True, nonempty=True),
    "real_name": Field("str"),
    "email": Field("str"),
    "title": Field("str"),
    "bot": Field("bool"),
}
CHANNEL = {
    "name": Field("str", required=True, nonempty=True),
    "members": Field("refs", kinds=("slack.user",)),
    "private": Field("bool"),
    "topic": Field("str"),
    "purpose": Field("str"),
}
MESSAGE = {
    "channel": Field("ref", kinds=("slack.channel",)),
    "dm": Field("ref", kinds=("slack.user",)),
    "from": Field("ref", required=True, kinds=("slack.user",)),
    "at": Field("signed_duration"),
    "text": Field("str", required=True),
    "in_thread_of": Field("ref", kinds=("slack.message",)),
}

MESSAGE_CHECK = {
    "channel": Field("ref", required=True, kinds=("slack.channel",)),
    "from": Field("ref", kinds=("slack.user",)),
    "text_contains": Field("str"),
    "in_thread_of": Field("ref", kinds=("slack.message",)),
    "count_gte": Field("int", minimum=1, maximum=10_000),
}
MESSAGE_EFFECT = {
    "channel": Field("ref", kinds=("slack.channel",)),
    "dm": Field("ref", kinds=("slack.user",)),
    "from": Field("ref", required=True, kinds=("slack.user",)),
    "text": Field("str", required=True),
}


TOOL = register(
    Tool(
        name="slack",
        records=(
            RecordKind("user", "users", USER),
            RecordKind("channel", "channels", CHANNEL),
            RecordKind("message", "messages", MESSAGE, cleaner=_one_place),
        ),
        state_checks={"message": StateCheck(MESSAGE_CHECK)},
        has_bot=True,
        effects={"message": MESSAGE_EFFECT},
        simulator=SlackSimulator,
    )
)
