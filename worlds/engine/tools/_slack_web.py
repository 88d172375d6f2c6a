"""Slack's Web API as the official clients call it (``/api/<method>``): the simulator behind
:mod:`worlds.engine.tools.slack`, kept apart only for length. Answers are Slack's: HTTP 200 with
``ok: false`` + ``error`` for every error, a 404 ``unknown_method`` for a method not simulated (a
coverage gap); form, JSON and query arguments; cursor pagination; mentions as ``<@U…>``.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from ..credentials import matches
from ..http import BadBody, Request, Response
from ..ids import slack_id
from ..results import StateResult
from ..simulator import BuildContext, Simulator

__all__ = ["SlackError", "SlackSimulator"]
# -- the simulator ------------------------------------------------------------------------------------
# Slack answers every Web API method at ``/api/<method>``, over GET or POST, with HTTP 200 and
# ``ok: false`` + ``error`` for its errors; only an unknown method is a 404.

MENTION = re.compile(r"<@([UW][A-Z0-9]+)(?:\|[^>]*)?>")
AT_NAME = re.compile(r"(?<![\w<@])@([a-z0-9][a-z0-9._-]*)", re.IGNORECASE)
AT_SPECIAL = {"here": "<!here>", "channel": "<!channel>", "everyone": "<!everyone>"}
PAGE_DEFAULT, PAGE_MAX = 100, 1000


class SlackError(Exception):
    """An ``ok: false`` answer: ``raise SlackError("channel_not_found")`` in a handler."""

    def __init__(self, error: str, **extra: Any) -> None:
        super().__init__(error)
        self.error = error
        self.extra = extra


def _ok(**body: Any) -> Response:
    return Response(200, {"ok": True, **body})


def _fail(error: str, **extra: Any) -> Response:
    return Response(200, {"ok": False, "error": error, **extra})


def _flag(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in ("1", "true", "yes")


def _ts_key(ts: str) -> tuple[int, int]:
    seconds, _, micro = str(ts).partition(".")
    try:
        return int(seconds), int((micro or "0").ljust(6, "0")[:6])
    except ValueError:
        return (-1, -1)


def _encode_cursor(offset: int) -> str:
    return base64.b64encode(f"next:{offset}".encode()).decode()


def _decode_cursor(cursor: str | None) -> int:
    if not cursor:
        return 0
    try:
        kind, _, offset = base64.b64decode(str(cursor).encode(), validate=True).decode().partition(":")
        if kind == "next" and offset.isdigit():
            return int(offset)
    except (ValueError, UnicodeDecodeError):
        pass
    raise SlackError("invalid_cursor")


def _page(items: list[Any], args: dict[str, Any], default: int = PAGE_DEFAULT) -> tuple[list[Any], str]:
    """One page of ``items`` by ``cursor``/``limit`` and the next cursor ("" on the last page)."""
    try:
        limit = int(args.get("limit") or default)
    except (TypeError, ValueError):
        raise SlackError("invalid_limit") from None
    limit = max(1, min(limit, PAGE_MAX)) if limit > 0 else default
    start = _decode_cursor(args.get("cursor"))
    chunk = items[start : start + limit]
    more = start + limit < len(items)
    return chunk, _encode_cursor(start + limit) if more else ""


class SlackSimulator(Simulator):
    """A Slack workspace as the agent's bot user sees it.

    State (plain JSON): ``team``; ``bot`` (the bot's user id); ``users`` and ``channels`` by id, in
    scene order (direct conversations are channels with ``is_im``); ``messages`` in the order they
    were written, each with ``versions`` (every text it had; the last is current), ``deleted``,
    ``seed``, ``seq`` (the trace seq of the agent call that wrote it) and ``event`` (its message
    event's ``n``).
    """

    tool = "slack"
    sdk_path = "api/"
    # The Web API methods that only read; a call to one leaves the state as it was (Simulator.reads).
    _READ_METHODS = (
        "auth.test",
        "conversations.list",
        "conversations.info",
        "conversations.history",
        "conversations.replies",
        "conversations.members",
        "users.list",
        "users.info",
        "users.lookupByEmail",
    )
    _WRITE_METHODS = (
        "conversations.open",
        "conversations.join",
        "chat.postMessage",
        "chat.update",
        "chat.delete",
        "reactions.add",
    )
    routes = tuple(
        ("*", f"/api/{method}", "_" + method.replace(".", "_")) for method in _READ_METHODS + _WRITE_METHODS
    )
    reads = frozenset("_" + method.replace(".", "_") for method in _READ_METHODS)

    # -- building -----------------------------------------------------------------------------------
    @classmethod
    def build(cls, ctx: BuildContext) -> dict[str, Any]:
        scene, world = ctx.scene.name, ctx.world
        created = int(ctx.scene.start.timestamp())
        state: dict[str, Any] = {
            "team": {"id": slack_id(scene, "team", "team"), "name": scene, "domain": scene},
            "bot": None,
            "users": {},
            "channels": {},
            "messages": [],
        }
        for ref, record in ctx.records.get("users", {}).items():
            f = record.fields
            uid = slack_id(scene, ref, "user")
            user = {
                "id": uid,
                "ref": ref,
                "name": f["name"],
                "real_name": f.get("real_name") or f["name"],
                "email": f.get("email"),
                "title": f.get("title") or "",
                "is_bot": bool(f.get("bot")),
                "bot_id": slack_id(scene, ref, "bot") if f.get("bot") else None,
            }
            state["users"][uid] = user
            world.ids[ref] = uid
            if user["is_bot"]:
                state["bot"] = uid
        for ref, record in ctx.records.get("channels", {}).items():
            f = record.fields
            private = bool(f.get("private"))
            cid = slack_id(scene, ref, "private" if private else "channel")
            state["channels"][cid] = {
                "id": cid,
                "ref": ref,
                "name": f["name"],
                "is_private": private,
                "is_im": False,
                "is_mpim": False,
                "user": None,
                "members": [world.ids[m] for m in f.get("members") or ()],
                "topic": f.get("topic") or "",
                "purpose": f.get("purpose") or "",
                "created": created,
            }
            world.ids[ref] = cid
        sim = cls(world, state)
        seeds = sorted(
            ctx.records.get("messages", {}).values(), key=lambda r: r.fields.get("at") or timedelta()
        )
        for record in seeds:
            f = record.fields
            at = ctx.scene.start + (f.get("at") or timedelta())
            if f.get("channel"):
                channel = world.ids[f["channel"]]
            else:
                channel = sim._dm_for(world.ids[f["dm"]], world.ids[f["from"]], created=created)["id"]
            ts = world.clock.slack_ts(at)
            world.ids[record.ref] = ts
            state["messages"].append(
                sim._new_message(ts, channel, world.ids[f["from"]], f["text"], seed=True, ref=record.ref)
            )
        by_ref = {record.ref: record for record in seeds}
        for record in seeds:  # threads once every seed message has its ts; a reply's reply joins the root
            root, seen = record.fields.get("in_thread_of"), {record.ref}
            while root in by_ref and by_ref[root].fields.get("in_thread_of") and root not in seen:
                seen.add(root)
                root = by_ref[root].fields["in_thread_of"]
            if root:
                sim._find(world.ids[record.ref])["thread_ts"] = world.ids[root]
        return state

    @staticmethod
    def _new_message(
        ts: str, channel: str, user: str, text: str, *, seed: bool = False, ref: str | None = None
    ) -> dict[str, Any]:
        return {
            "ts": ts,
            "channel": channel,
            "user": user,
            "versions": [text],
            "thread_ts": None,
            "broadcast": False,
            "deleted": False,
            "edited": None,
            "reactions": {},
            "seed": seed,
            "ref": ref,
            "seq": None,
            "event": None,
        }

    # -- lookups --------------------------------------------------------------------------------------
    @property
    def bot(self) -> str:
        return self.state["bot"]

    def _user(self, uid: str | None) -> dict[str, Any] | None:
        return self.state["users"].get(uid) if uid else None

    def _find(self, ts: str, channel: str | None = None) -> dict[str, Any] | None:
        for message in self.state["messages"]:
            if message["ts"] == ts and (channel is None or message["channel"] == channel):
                return message
        return None

    @staticmethod
    def _thread_root(message: dict[str, Any]) -> str:
        return message["thread_ts"] or message["ts"]

    def _channel(self, value: Any) -> dict[str, Any] | None:
        """A conversation by id, or a channel by name with or without ``#``."""
        if not isinstance(value, str) or not value.strip():
            return None
        value = value.strip()
        channels = self.state["channels"]
        if value in channels:
            return channels[value]
        name = value.removeprefix("#").lower()
        for channel in channels.values():
            if not channel["is_im"] and not channel["is_mpim"] and channel["name"].lower() == name:
                return channel
        return None

    def _visible(self, value: Any, *, user_means_dm: bool = False) -> dict[str, Any]:
        """A conversation the bot can see: public channels, and private ones and DMs it is in. With
        ``user_means_dm`` (chat.postMessage), a user id stands for the bot's DM with them, as in Slack."""
        channel = self._channel(value)
        if channel is None and user_means_dm and isinstance(value, str) and value in self.state["users"]:
            channel = self._dm_with(value)
        if channel is None or (channel["is_private"] and self.bot not in channel["members"]):
            raise SlackError("channel_not_found")
        return channel

    def _member_of(self, value: Any, *, user_means_dm: bool = False) -> dict[str, Any]:
        channel = self._visible(value, user_means_dm=user_means_dm)
        if self.bot not in channel["members"]:
            raise SlackError("not_in_channel")
        return channel

    def _dm_with(self, uid: str, *, created: int | None = None) -> dict[str, Any]:
        for channel in self.state["channels"].values():
            if channel["is_im"] and channel["user"] == uid:
                return channel
        user = self.state["users"][uid]
        did = slack_id(self.world.scene.name, f"dm:{user['ref']}", "dm")
        channel = {
            "id": did,
            "ref": None,
            "name": user["name"],
            "is_private": True,
            "is_im": True,
            "is_mpim": False,
            "user": uid,
            "members": [self.bot, uid] if uid != self.bot else [uid],
            "topic": "",
            "purpose": "",
            "created": created if created is not None else int(self.world.clock.now.timestamp()),
        }
        self.state["channels"][did] = channel
        return channel

    def _dm_for(self, to: str, author: str, *, created: int | None = None) -> dict[str, Any]:
        """The DM a ``dm:`` message goes to: the bot's with ``to``, or with the author when ``to`` is
        the bot (a person writing to the agent)."""
        return self._dm_with(author if to == self.bot else to, created=created)

    def _mpim_with(self, uids: list[str]) -> dict[str, Any]:
        members = [self.bot, *sorted(set(uids) - {self.bot})]
        for channel in self.state["channels"].values():
            if channel["is_mpim"] and sorted(channel["members"]) == sorted(members):
                return channel
        names = [self.state["users"][u]["name"] for u in members]
        gid = slack_id(self.world.scene.name, "mpim:" + ",".join(sorted(members)), "private")
        channel = {
            "id": gid,
            "ref": None,
            "name": "mpdm-" + "--".join(names) + "-1",
            "is_private": True,
            "is_im": False,
            "is_mpim": True,
            "user": None,
            "members": members,
            "topic": "",
            "purpose": "",
            "created": int(self.world.clock.now.timestamp()),
        }
        self.state["channels"][gid] = channel
        return channel

    def _current(self, channel: str) -> list[dict[str, Any]]:
        return sorted(
            (m for m in self.state["messages"] if m["channel"] == channel and not m["deleted"]),
            key=lambda m: _ts_key(m["ts"]),
        )

    def _who(self, uid: str | None) -> str:
        user = self._user(uid)
        return (user["ref"] or user["name"]) if user else (uid or "someone")

    # -- wire shapes --------------------------------------------------------------------------------
    def _user_json(self, user: dict[str, Any]) -> dict[str, Any]:
        profile = {
            "real_name": user["real_name"],
            "display_name": user["name"],
            "real_name_normalized": user["real_name"],
            "display_name_normalized": user["name"],
            "title": user["title"],
            "team": self.state["team"]["id"],
        }
        if user["email"]:
            profile["email"] = user["email"]
        if user["bot_id"]:
            profile["bot_id"] = user["bot_id"]
        return {
            "id": user["id"],
            "team_id": self.state["team"]["id"],
            "name": user["name"],
            "deleted": False,
            "real_name": user["real_name"],
            "tz": "Etc/UTC",
            "tz_label": "Coordinated Universal Time",
            "tz_offset": 0,
            "profile": profile,
            "is_admin": False,
            "is_owner": False,
            "is_bot": user["is_bot"],
            "is_app_user": False,
            "updated": int(self.world.scene.start.timestamp()),
        }

    def _channel_json(self, channel: dict[str, Any]) -> dict[str, Any]:
        if channel["is_im"]:
            return {
                "id": channel["id"],
                "created": channel["created"],
                "is_im": True,
                "is_org_shared": False,
                "user": channel["user"],
                "is_user_deleted": False,
                "priority": 0,
            }
        text = {"creator": "", "last_set": 0}
        return {
            "id": channel["id"],
            "name": channel["name"],
            "is_channel": not channel["is_private"],
            "is_group": channel["is_private"] and not channel["is_mpim"],
            "is_im": False,
            "is_mpim": channel["is_mpim"],
            "is_private": channel["is_private"],
            "created": channel["created"],
            "is_archived": False,
            "is_general": False,
            "unlinked": 0,
            "name_normalized": channel["name"],
            "is_shared": False,
            "is_ext_shared": False,
            "is_org_shared": False,
            "is_member": self.bot in channel["members"],
            "creator": "",
            "topic": {"value": channel["topic"], **text},
            "purpose": {"value": channel["purpose"], **text},
            "num_members": len(channel["members"]),
        }

    def _message_json(
        self, message: dict[str, Any], threads: dict[str, list[dict[str, Any]]] | None = None
    ) -> dict[str, Any]:
        """``threads``: the channel's replies by thread (``_threads``), when a caller renders many."""
        user = self._user(message["user"])
        out: dict[str, Any] = {"type": "message", "user": message["user"], "text": message["versions"][-1]}
        if user and user["bot_id"]:
            out["bot_id"] = user["bot_id"]
        out["ts"] = message["ts"]
        out["team"] = self.state["team"]["id"]
        if message["thread_ts"]:
            out["thread_ts"] = message["thread_ts"]
            root = self._find(message["thread_ts"], message["channel"])
            out["parent_user_id"] = root["user"] if root else message["user"]
            if message["broadcast"]:
                out["subtype"] = "thread_broadcast"
        else:
            replies = self._replies(message) if threads is None else threads.get(message["ts"], [])
            if replies:
                out["thread_ts"] = message["ts"]
                out["reply_count"] = len(replies)
                out["reply_users_count"] = len({r["user"] for r in replies})
                out["reply_users"] = list(dict.fromkeys(r["user"] for r in replies))
                out["latest_reply"] = replies[-1]["ts"]
        if message["edited"]:
            out["edited"] = dict(message["edited"])
        if message["reactions"]:
            out["reactions"] = [
                {"name": name, "users": list(users), "count": len(users)}
                for name, users in message["reactions"].items()
            ]
        return out

    def _replies(self, root: dict[str, Any]) -> list[dict[str, Any]]:
        return self._threads(self._current(root["channel"])).get(root["ts"], [])

    @staticmethod
    def _threads(current: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
        """A channel's current messages (``_current``, in order) → each thread's replies, in order."""
        out: dict[str, list[dict[str, Any]]] = {}
        for m in current:
            if m["thread_ts"] and m["ts"] != m["thread_ts"]:
                out.setdefault(m["thread_ts"], []).append(m)
        return out

    # -- answering ----------------------------------------------------------------------------------
    def _args(self, request: Request) -> dict[str, Any]:
        """Query parameters, then the form or JSON body (the body wins); raises BadBody."""
        args: dict[str, Any] = {k: v[-1] for k, v in request.query.items() if v}
        if not request.body.strip():
            return args
        kind = request.content_type
        if kind == "application/json":
            body = request.json()
            if not isinstance(body, dict):
                raise BadBody("the JSON body must be an object")
            args.update(body)
        elif kind in ("application/x-www-form-urlencoded", ""):
            args.update(request.form())
        return args

    def authenticate(self, request: Request) -> Response | None:
        header = request.header("authorization") or ""
        token: Any = header[7:].strip() if header[:7].lower() == "bearer " else None
        if token is None:
            try:
                token = self._args(request).get("token")
            except BadBody as exc:
                return self.bad_body(request, str(exc))
        if not token:
            return _fail("not_authed")
        if not isinstance(token, str) or not matches(token, self.credential.get("token", "")):
            return _fail("invalid_auth")
        if self.bot is None:  # a scene whose Slack has no users: the token belongs to nobody
            return _fail("account_inactive")
        return None

    def call(self, request: Request) -> Response:
        if not any(route.pattern.match(request.path) for route in self._compiled):
            return self.gap(request)  # Slack answers an unknown method before it looks at the token
        try:
            return super().call(request)
        except SlackError as exc:
            return _fail(exc.error, **exc.extra)

    def gap(self, request: Request) -> Response:
        method = request.path.removeprefix("/api/").strip("/")
        return Response(
            404, {"ok": False, "error": "unknown_method", "req_method": method}, coverage_gap=True
        )

    def bad_body(self, request: Request, message: str) -> Response:
        if request.content_type == "application/json":
            return _fail("invalid_json", response_metadata={"messages": [f"[ERROR] {message}"]})
        return _fail("invalid_form_data", response_metadata={"messages": [f"[ERROR] {message}"]})

    @staticmethod
    def _need(args: dict[str, Any], *names: str) -> list[Any]:
        missing = [n for n in names if args.get(n) in (None, "")]
        if missing:
            raise SlackError(
                "invalid_arguments",
                response_metadata={"messages": [f"[ERROR] missing required field: {n}" for n in missing]},
            )
        return [args[n] for n in names]

    # auth -------------------------------------------------------------------------------------------
    def _auth_test(self, request: Request) -> Response:
        bot, team = self.state["users"][self.bot], self.state["team"]
        return _ok(
            url=f"https://{team['domain']}.slack.com/",
            team=team["name"],
            user=bot["name"],
            team_id=team["id"],
            user_id=bot["id"],
            bot_id=bot["bot_id"],
            is_enterprise_install=False,
        )

    # conversations ----------------------------------------------------------------------------------
    def _conversations_list(self, request: Request) -> Response:
        args = self._args(request)
        raw = args.get("types") or "public_channel"
        types = {str(t).strip() for t in (raw if isinstance(raw, list) else str(raw).split(","))} - {""}
        unknown = types - {"public_channel", "private_channel", "mpim", "im"}
        if unknown:
            raise SlackError("invalid_types")
        found = []
        for channel in self.state["channels"].values():
            kind = (
                "im"
                if channel["is_im"]
                else "mpim"
                if channel["is_mpim"]
                else "private_channel"
                if channel["is_private"]
                else "public_channel"
            )
            if kind not in types or (kind != "public_channel" and self.bot not in channel["members"]):
                continue
            found.append(self._channel_json(channel))
        page, cursor = _page(found, args)
        return _ok(channels=page, response_metadata={"next_cursor": cursor})

    def _conversations_info(self, request: Request) -> Response:
        (channel,) = self._need(self._args(request), "channel")
        return _ok(channel=self._channel_json(self._visible(channel)))

    def _conversations_members(self, request: Request) -> Response:
        args = self._args(request)
        (channel,) = self._need(args, "channel")
        page, cursor = _page(list(self._visible(channel)["members"]), args)
        return _ok(members=page, response_metadata={"next_cursor": cursor})

    def _window(self, messages: list[dict[str, Any]], args: dict[str, Any]) -> list[dict[str, Any]]:
        """``oldest``/``latest`` bounds (exclusive unless ``inclusive``)."""
        inclusive = _flag(args.get("inclusive", False))
        out = messages
        for name, keep in (("oldest", lambda a, b: a > b), ("latest", lambda a, b: a < b)):
            bound = args.get(name)
            if bound in (None, ""):
                continue
            limit = _ts_key(str(bound))
            if limit == (-1, -1):
                raise SlackError("invalid_ts_" + name)
            out = [
                m for m in out if (inclusive and _ts_key(m["ts"]) == limit) or keep(_ts_key(m["ts"]), limit)
            ]
        return out

    def _conversations_history(self, request: Request) -> Response:
        args = self._args(request)
        (value,) = self._need(args, "channel")
        channel = self._member_of(value)
        current = self._current(channel["id"])
        threads = self._threads(current)  # once, not once per message rendered
        top = [m for m in current if not m["thread_ts"] or m["broadcast"]]
        newest_first = list(reversed(self._window(top, args)))
        page, cursor = _page(newest_first, args)
        return _ok(
            messages=[self._message_json(m, threads) for m in page],
            has_more=bool(cursor),
            pin_count=0,
            channel_actions_ts=None,
            channel_actions_count=0,
            response_metadata={"next_cursor": cursor},
        )

    def _conversations_replies(self, request: Request) -> Response:
        args = self._args(request)
        value, ts = self._need(args, "channel", "ts")
        channel = self._member_of(value)
        message = self._find(str(ts), channel["id"])
        if message is None or message["deleted"]:
            raise SlackError("thread_not_found")
        root = self._find(self._thread_root(message), channel["id"])
        threads = self._threads(self._current(channel["id"]))
        replies = threads.get(root["ts"], [])
        thread = [root, *replies] if root and not root["deleted"] else replies
        page, cursor = _page(self._window(thread, args), args, default=1000)
        return _ok(
            messages=[self._message_json(m, threads) for m in page],
            has_more=bool(cursor),
            response_metadata={"next_cursor": cursor},
        )

    def _conversations_open(self, request: Request) -> Response:
        args = self._args(request)
        if args.get("channel"):
            channel = self._visible(args["channel"])
            return _ok(no_op=True, already_open=True, channel=self._open_json(channel, args))
        raw = args.get("users")
        if not raw:
            raise SlackError("users_list_not_supplied")
        ids = [str(u).strip() for u in (raw if isinstance(raw, list) else str(raw).split(","))]
        ids = [u for u in ids if u]
        if any(u not in self.state["users"] for u in ids):
            raise SlackError("user_not_found")
        others = [u for u in dict.fromkeys(ids) if u != self.bot]
        if len(others) > 7:
            raise SlackError("too_many_users")
        if not others:
            raise SlackError("cannot_dm_bot")
        existing = len(self.state["channels"])
        channel = self._dm_with(others[0]) if len(others) == 1 else self._mpim_with(others)
        opened = len(self.state["channels"]) == existing
        return _ok(no_op=opened, already_open=opened, channel=self._open_json(channel, args))

    def _open_json(self, channel: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
        return self._channel_json(channel) if _flag(args.get("return_im", False)) else {"id": channel["id"]}

    def _conversations_join(self, request: Request) -> Response:
        (value,) = self._need(self._args(request), "channel")
        channel = self._visible(value)
        if channel["is_im"] or channel["is_mpim"] or channel["is_private"]:
            raise SlackError("method_not_supported_for_channel_type")
        extra: dict[str, Any] = {}
        if self.bot in channel["members"]:
            extra = {
                "warning": "already_in_channel",
                "response_metadata": {"warnings": ["already_in_channel"]},
            }
        else:
            channel["members"].append(self.bot)
        return _ok(channel=self._channel_json(channel), **extra)

    # users --------------------------------------------------------------------------------------------
    def _users_list(self, request: Request) -> Response:
        args = self._args(request)
        page, cursor = _page([self._user_json(u) for u in self.state["users"].values()], args)
        return _ok(
            members=page,
            cache_ts=int(self.world.clock.now.timestamp()),
            response_metadata={"next_cursor": cursor},
        )

    def _users_info(self, request: Request) -> Response:
        (uid,) = self._need(self._args(request), "user")
        user = self._user(str(uid))
        if user is None:
            raise SlackError("user_not_found")
        return _ok(user=self._user_json(user))

    def _users_lookupByEmail(self, request: Request) -> Response:  # noqa: N802 - Slack's method name
        (email,) = self._need(self._args(request), "email")
        for user in self.state["users"].values():
            if user["email"] and user["email"].casefold() == str(email).strip().casefold():
                return _ok(user=self._user_json(user))
        raise SlackError("users_not_found")

    # chat ------------------------------------------------------------------------------------------------
    @staticmethod
    def _text(args: dict[str, Any]) -> str:
        """The message text; with only ``blocks`` or ``attachments``, their text, as Slack's fallback."""
        text = args.get("text")
        if isinstance(text, str) and text:
            return text
        parts: list[str] = []
        for name in ("blocks", "attachments"):
            value = args.get(name)
            if isinstance(value, str):
                try:
                    value = json.loads(value)
                except ValueError:
                    raise SlackError(f"invalid_{name}") from None
            for item in value if isinstance(value, list) else ():
                if not isinstance(item, dict):
                    continue
                inner = item.get("text")
                if isinstance(inner, dict):
                    inner = inner.get("text")
                inner = inner or item.get("fallback")
                if isinstance(inner, str) and inner:
                    parts.append(inner)
        if not parts:
            raise SlackError("no_text")
        return "\n".join(parts)

    def _link_names(self, text: str, channel: dict[str, Any]) -> str:
        """``@name`` → ``<@U…>`` for members of the conversation (and ``@here`` and friends)."""
        by_name = {
            self.state["users"][u]["name"].lower(): u for u in channel["members"] if u in self.state["users"]
        }

        def replace(match: re.Match[str]) -> str:
            name = match.group(1).lower()
            if name in AT_SPECIAL:
                return AT_SPECIAL[name]
            # Names may end in a dot or dash that belongs to the sentence ("@ben.").
            for cut in range(len(name), 0, -1):
                if name[:cut] in by_name:
                    return f"<@{by_name[name[:cut]]}>" + match.group(1)[cut:]
            return match.group(0)

        return AT_NAME.sub(replace, text)

    def _chat_postMessage(self, request: Request) -> Response:  # noqa: N802 - Slack's method name
        args = self._args(request)
        if not args.get("channel"):
            raise SlackError("channel_not_found")
        channel = self._member_of(args["channel"], user_means_dm=True)
        text = self._text(args)
        if _flag(args.get("link_names", False)):
            text = self._link_names(text, channel)
        thread_ts = args.get("thread_ts")
        if thread_ts not in (None, ""):
            parent = self._find(str(thread_ts), channel["id"])
            if parent is None or parent["deleted"]:
                raise SlackError("thread_not_found")
            thread_ts = self._thread_root(parent)
        message = self.post(
            channel["id"],
            self.bot,
            text,
            thread_ts=thread_ts or None,
            broadcast=bool(thread_ts) and _flag(args.get("reply_broadcast", False)),
            seq=self.world.current_seq,
        )
        return _ok(channel=channel["id"], ts=message["ts"], message=self._message_json(message))

    def _own_message(self, args: dict[str, Any], refusal: str) -> tuple[dict[str, Any], dict[str, Any]]:
        value, ts = self._need(args, "channel", "ts")
        channel = self._visible(value)
        message = self._find(str(ts), channel["id"])
        if message is None or message["deleted"]:
            raise SlackError("message_not_found")
        if message["user"] != self.bot:
            raise SlackError(refusal)
        return channel, message

    def _chat_update(self, request: Request) -> Response:
        args = self._args(request)
        channel, message = self._own_message(args, "cant_update_message")
        text = self._text(args)
        if _flag(args.get("link_names", False)):
            text = self._link_names(text, channel)
        at = self.world.clock.now
        message["versions"].append(text)
        message["edited"] = {"user": self.bot, "ts": self.world.clock.slack_ts(at)}
        self.world.events.add(
            "message_edited",
            at,
            **self._event_fields(message),
            version=len(message["versions"]),
            seq=self.world.current_seq,
        )
        return _ok(channel=channel["id"], ts=message["ts"], text=text, message=self._message_json(message))

    def _chat_delete(self, request: Request) -> Response:
        args = self._args(request)
        channel, message = self._own_message(args, "cant_delete_message")
        message["deleted"] = True
        self.world.events.add(
            "message_deleted", self.world.clock.now, **self._event_fields(message), seq=self.world.current_seq
        )
        return _ok(channel=channel["id"], ts=message["ts"])

    def _reactions_add(self, request: Request) -> Response:
        args = self._args(request)
        value, ts, name = self._need(args, "channel", "timestamp", "name")
        channel = self._visible(value)
        message = self._find(str(ts), channel["id"])
        if message is None or message["deleted"]:
            raise SlackError("message_not_found")
        name = str(name).strip(":")
        if not re.fullmatch(r"[a-z0-9_+'-]+(::skin-tone-[2-6])?", name):
            raise SlackError("invalid_name")
        users = message["reactions"].setdefault(name, [])
        if self.bot in users:
            raise SlackError("already_reacted")
        users.append(self.bot)
        return _ok()

    # -- writing messages (the agent, people and faults) -------------------------------------------------
    def post(
        self,
        channel: str,
        user: str,
        text: str,
        *,
        thread_ts: str | None = None,
        broadcast: bool = False,
        seq: int | None = None,
        at: datetime | None = None,
        canonical: str | None = None,
    ) -> dict[str, Any]:
        """Write a message now (or at ``at``) and record its ``message`` event (with ``canonical``: the
        text a person's voiced message stands for, which is what people learn from)."""
        at = at or self.world.clock.now
        message = self._new_message(self.world.clock.slack_ts(at), channel, user, text)
        message.update(thread_ts=thread_ts, broadcast=broadcast, seq=seq)
        self.state["messages"].append(message)
        extra = {"canonical": canonical} if canonical else {}
        event = self.world.events.add("message", at, **self._event_fields(message), **extra, seq=seq)
        message["event"] = event.n
        return message

    def _event_fields(self, message: dict[str, Any]) -> dict[str, Any]:
        text = message["versions"][-1]
        channel = self.state["channels"].get(message["channel"]) or {}
        if channel.get("is_im"):
            where = f"DM with {(self._user(channel.get('user')) or {}).get('name', channel.get('user'))}"
        else:
            where = f"#{channel.get('name', message['channel'])}"
        return {
            "tool": "slack",
            "ts": message["ts"],
            "channel": message["channel"],
            "conversation": where,
            "thread_ts": message["thread_ts"],
            "from": self._who(message["user"]),
            "user": message["user"],
            "text": text,
            "mentions": list(dict.fromkeys(MENTION.findall(text))),
        }

    def apply_effect(self, name: str, spec: Mapping[str, Any]) -> dict[str, Any]:
        """``slack.message``: ``{channel | dm, from, text}`` (refs), optionally ``in_thread_of`` (a
        message ref) or ``thread_ts``, and ``at`` (a datetime). A ``dm`` goes to the bot's direct
        conversation with that user. Returns the message written."""
        if name != "message":
            return super().apply_effect(name, spec)
        ids = self.world.ids
        user = ids.get(spec["from"], spec["from"])
        if spec.get("channel"):
            channel = self._channel(ids.get(spec["channel"], spec["channel"]))
            if channel is None:
                raise KeyError(f"no Slack channel {spec['channel']!r}")
        else:
            channel = self._dm_for(ids.get(spec["dm"], spec["dm"]), user)
        thread_ts = spec.get("thread_ts")
        if spec.get("in_thread_of"):
            parent = self._find(ids[spec["in_thread_of"]])
            thread_ts = self._thread_root(parent) if parent else None
        return self.post(channel["id"], user, spec["text"], thread_ts=thread_ts, at=spec.get("at"))

    # -- judging ------------------------------------------------------------------------------------------
    def state_check(self, name: str, spec: Mapping[str, Any]) -> StateResult:
        if name != "message":
            return super().state_check(name, spec)
        return self._message_check(spec)

    def _message_check(self, spec: Mapping[str, Any]) -> StateResult:
        """``slack.message``: current messages (not deleted, final text) in the channel, thread replies
        included, meeting every condition; passes at ``count_gte`` (default 1). Evidence: the trace
        seqs (and message events) of the matching messages, and of the closest miss when it fails."""
        need = int(spec.get("count_gte") or 1)
        expected = f"at least {need} message{'s' if need != 1 else ''} " + self._describe(spec)
        channel = self._channel(self.world.ids.get(spec["channel"], ""))
        if channel is None:
            return StateResult.of(False, expected, f"no channel {spec['channel']} in this world")
        conditions = self._conditions(spec)
        matched: list[dict[str, Any]] = []
        # The closest miss meets the most conditions; on a tie, the one meeting the earlier ones (the
        # author before the thread before the text), then the latest.
        closest: tuple[tuple[int, tuple[bool, ...]], dict[str, Any], str] | None = None
        for message in self._current(channel["id"]):
            met = tuple(test(message) for test, _ in conditions)
            if all(met):
                matched.append(message)
                continue
            rank = (sum(met), met)
            if closest is None or rank >= closest[0]:
                closest = (rank, message, conditions[met.index(False)][1])
        passed = len(matched) >= need
        actual = f"{len(matched)} matching message{'s' if len(matched) != 1 else ''}"
        cited = matched
        if not passed:
            if closest is not None:
                _, message, why = closest
                actual += f"; closest: {self._quote(message)}, which {why}"
                cited = [*matched, message]
            elif not matched:
                actual += f"; #{channel['name']} has no messages"
        evidence = tuple(m["seq"] for m in cited if m["seq"] is not None)
        events = tuple(m["event"] for m in cited if m["event"] is not None)
        return StateResult.of(passed, expected, actual, evidence=evidence, events=events)

    def _describe(self, spec: Mapping[str, Any]) -> str:
        channel = self._channel(self.world.ids.get(spec["channel"], ""))
        words = [f"in #{channel['name'] if channel else spec['channel']}"]
        if spec.get("from"):
            words.append(f"from {spec['from']}")
        if spec.get("in_thread_of"):
            words.append(f"in the thread of {spec['in_thread_of']}")
        if spec.get("text_contains"):
            words.append(f"containing {spec['text_contains']!r}")
        return " ".join(words)

    def _conditions(self, spec: Mapping[str, Any]) -> list[tuple[Any, str]]:
        ids = self.world.ids
        conditions: list[tuple[Any, str]] = []
        if spec.get("from"):
            author = ids.get(spec["from"])
            conditions.append((lambda m: m["user"] == author, f"is not from {spec['from']}"))
        if spec.get("in_thread_of"):
            # A reply in the thread the message is in (its own, or its root's when it is a reply).
            parent = ids.get(spec["in_thread_of"])
            found = self._find(parent) if isinstance(parent, str) else None
            root = self._thread_root(found) if found else parent
            conditions.append(
                (
                    lambda m: m["thread_ts"] == root and m["ts"] not in (root, parent),
                    f"is not a reply in the thread of {spec['in_thread_of']}",
                )
            )
        if spec.get("text_contains"):
            needle = str(spec["text_contains"]).casefold()
            conditions.append(
                (
                    lambda m: needle in m["versions"][-1].casefold(),
                    f"does not contain {spec['text_contains']!r}",
                )
            )
        return conditions

    def _quote(self, message: dict[str, Any]) -> str:
        text = message["versions"][-1]
        short = text if len(text) <= 60 else text[:57] + "..."
        where = (
            "thread reply"
            if message["thread_ts"] and message["thread_ts"] != message["ts"]
            else "top-level message"
        )
        return f'{self._who(message["user"])}\'s {where} "{short}" (ts {message["ts"]})'

    def final_state(self) -> dict[str, Any]:
        """Channels by name (direct conversations as ``dm:<user>``) with their messages, oldest first."""
        users = self.state["users"]
        channels: dict[str, Any] = {}
        for channel in self.state["channels"].values():
            label = f"dm:{users[channel['user']]['name']}" if channel["is_im"] else channel["name"]
            channels[label] = {
                "id": channel["id"],
                "private": channel["is_private"],
                "members": [users[u]["name"] for u in channel["members"] if u in users],
                "messages": [
                    {
                        "ts": m["ts"],
                        "from": users[m["user"]]["name"] if m["user"] in users else m["user"],
                        "text": m["versions"][-1],
                        **({"thread_ts": m["thread_ts"]} if m["thread_ts"] else {}),
                        **({"versions": list(m["versions"])} if len(m["versions"]) > 1 else {}),
                        **({"deleted": True} if m["deleted"] else {}),
                        **({"seed": True} if m["seed"] else {}),
                        **(
                            {"reactions": {k: len(v) for k, v in m["reactions"].items()}}
                            if m["reactions"]
                            else {}
                        ),
                    }
                    for m in sorted(
                        (m for m in self.state["messages"] if m["channel"] == channel["id"]),
                        key=lambda m: _ts_key(m["ts"]),
                    )
                ],
            }
        return {"team": dict(self.state["team"]), "channels": channels}
