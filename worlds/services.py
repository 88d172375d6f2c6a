"""Every write about scenes and worlds: the scene library (create, edit → a new version, archive) and
worlds (start one for a trial, answer a call to it, end it, read it). Pages, the API, the admin, the
worker and the CLI all come here."""

from __future__ import annotations

import json
import logging
import marshal
import os
import random
import secrets
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, transaction
from django.utils import timezone

from agents.models import Agent
from checks import services as checks_services
from checks.evaluation import make_context
from checks.judge import judge_configured, judge_for_team
from checks.models import Check, Test
from core.crypto import decrypt_json, encrypt_json
from core.errors import ValidationFailed
from teams import access
from teams.models import Team
from worlds import callstore, pieces
from worlds.engine import SceneInvalid, load_scene
from worlds.engine import scene as engine_scene
from worlds.engine.evaluate import evaluate, kind_judge
from worlds.engine.events import Event
from worlds.engine.http import Request, Response
from worlds.engine.voice import voice_from_client
from worlds.engine.world import World as EngineWorld
from worlds.engine.world import WorldEnded, new_world_id, process_in_scene, state_in_scene
from worlds.models import Scene, SceneVersion, TestScene, World, WorldEntry, WorldToolState

__all__ = [
    "MAX_SOURCE_BYTES",
    "SceneRejected",
    "WorldGone",
    "WorldMissing",
    "archive_scene",
    "call_world",
    "create_scene",
    "edit_scene",
    "end_world",
    "engine_scene_of",
    "forget_live_worlds",
    "load_world",
    "parse_scene",
    "scene_source",
    "start_world",
    "worlds_root",
]

MAX_SOURCE_BYTES = 512 * 1024

log = logging.getLogger(__name__)


class SceneRejected(ValidationFailed):
    """A scene file that does not validate: ``problems`` holds every one, ``file:line: path: message``."""

    def __init__(self, problems: list[str], *, field: str = "source") -> None:
        self.problems = problems
        super().__init__({field: problems})


class WorldMissing(Exception):
    """No such world (or not this team's): 404."""


class WorldGone(Exception):
    """The world's trial has ended: 410."""


# ----------------------------------------------------------------------------- scenes


def scene_source(value: Any) -> tuple[str, str]:
    """A scene as the API or a page gives it (YAML/JSON text, or an object) → (text, filename)."""
    if isinstance(value, Mapping):
        return json.dumps(value, indent=2, ensure_ascii=False), "scene.json"
    if not isinstance(value, str):
        raise ValidationFailed("give the scene as YAML or JSON text, or as an object", field="source")
    text = value
    return text, "scene.json" if text.lstrip().startswith("{") else "scene.yaml"


def parse_scene(source: Any, *, filename: str | None = None, field: str = "source") -> engine_scene.Scene:
    """The validated scene, or SceneRejected listing every problem on its line."""
    text, guessed = scene_source(source)
    if not text.strip():
        raise SceneRejected([f"{filename or guessed}:1: the scene is empty"], field=field)
    if len(text.encode()) > MAX_SOURCE_BYTES:
        raise SceneRejected(
            [f"{filename or guessed}:1: the scene is over {MAX_SOURCE_BYTES // 1024} KB"], field=field
        )
    if "\x00" in text:
        raise SceneRejected([f"{filename or guessed}:1: the scene contains a NUL character"], field=field)
    try:
        return load_scene(text, filename or guessed)
    except SceneInvalid as exc:
        raise SceneRejected(exc.lines(), field=field) from None


def create_scene(*, agent: Agent, by, source: Any) -> Scene:
    """Add a scene to an agent's library with version 1 (its name is the file's ``scene:``)."""
    access.require(by, access.CREATE, Scene, team=agent.team)
    text, filename = scene_source(source)
    parsed = parse_scene(text, filename=filename)
    with transaction.atomic():
        scene = Scene.objects.create(agent=agent, name=parsed.name, created_by=by, version=1)
        version = SceneVersion.objects.create(
            parent=scene, number=1, name=parsed.name, source=text, filename=filename, created_by=by
        )
        Scene.objects.filter(pk=scene.pk).update(current_version=version)
        scene.current_version = version
    return scene


def edit_scene(*, scene: Scene, by, source: Any) -> Scene:
    """Save version n+1 when the text changed; an identical text makes no version."""
    access.require(by, access.CHANGE, scene, team=scene.agent.team)
    if scene.archived_at is not None:
        raise ValidationFailed("this scene is archived; restore it before editing", field="__all__")
    text, filename = scene_source(source)
    parsed = parse_scene(text, filename=filename)
    with transaction.atomic():
        locked = (
            Scene.objects.select_for_update(of=("self",)).select_related("current_version").get(pk=scene.pk)
        )
        if locked.current_version is not None and locked.current_version.source == text:
            return locked
        number = locked.version + 1
        version = SceneVersion.objects.create(
            parent=locked, number=number, name=parsed.name, source=text, filename=filename, created_by=by
        )
        locked.current_version, locked.version, locked.name = version, number, parsed.name
        locked.save(update_fields=["current_version", "version", "name", "updated_at"])
    return locked


def archive_scene(*, scene: Scene, by, archived: bool = True) -> Scene:
    """Hide a scene from pickers; its versions, worlds and runs stay."""
    access.require(by, access.ARCHIVE, scene, team=scene.agent.team)
    scene.archived_at = timezone.now() if archived else None
    scene.save(update_fields=["archived_at", "updated_at"])
    return scene


@lru_cache(maxsize=256)
def _parsed(version_id: int, source: str, filename: str) -> engine_scene.Scene:
    return load_scene(source, filename)


def engine_scene_of(version: SceneVersion) -> engine_scene.Scene:
    """The parsed scene of a version (versions are immutable, so parsing once per process is enough)."""
    return _parsed(version.pk, version.source, version.filename)


def parsed_scene(version_id: int, source: str, filename: str) -> engine_scene.Scene:
    """engine_scene_of() for a version read as columns (its id, source and filename): a list's rows."""
    return _parsed(version_id, source, filename)


# ----------------------------------------------------------------------------- worlds


def worlds_root() -> str:
    """The console's address as agents see it; world tools' base URLs start with it."""
    return settings.EVALCONSOLE_WORLDS_URL.rstrip("/")


# A world is stored in parts (worlds.models.World): a call appends its trace entries and events,
# writes the pieces of tool state it changed (worlds.pieces: the records, not the whole state) and the
# small head, and nothing else. Each process keeps
# the engine worlds it served last (``_LIVE``), each with the ``calls`` counter it reflects: under the
# row lock a call reads only the row's small columns and reuses the kept world when the counters
# match (no other process advanced it since), else restores it from the database. The database stays
# the truth: a kept world is taken out while a call uses it and put back only once the call committed.

_IDS = ""  # the ids' fingerprint in _Live.prints


@dataclass
class _Live:
    world: EngineWorld
    calls: int  # World.calls the engine world reflects
    trace_len: int  # how many of the trace entries and events the world holds are stored
    events_len: int
    prints: dict[str, bytes]  # _IDS -> the fingerprint of the ids as stored
    # tool -> its state's pieces as stored (worlds.pieces: each leaf's fingerprint), what a call's
    # state is compared with
    trees: dict[str, Any] = field(default_factory=dict)


_LIVE: OrderedDict[str, _Live] = OrderedDict()
# A call's stamp only tells its own write from another's: unguessable is not needed, and the secrets
# module reads /dev/urandom (a system call) every time. Seeded afresh in a forked child, so that two
# workers forked from one process do not draw the same stamps.
_STAMPS = random.Random(secrets.randbits(64))
os.register_at_fork(after_in_child=lambda: _STAMPS.seed(secrets.randbits(64)))
_LIVE_LOCK = threading.Lock()


def _live_limit() -> int:
    return int(settings.EVALCONSOLE_LIVE_WORLDS)


def _take_live(world_id: str) -> _Live | None:
    with _LIVE_LOCK:
        return _LIVE.pop(world_id, None)


def _keep_live(world_id: str, live: _Live) -> None:
    limit = _live_limit()
    if limit <= 0 or live.world.ended:
        return
    with _LIVE_LOCK:
        _LIVE[world_id] = live
        _LIVE.move_to_end(world_id)
        while len(_LIVE) > limit:
            _LIVE.popitem(last=False)


def forget_live_worlds() -> None:
    """Drop every engine world this process keeps (as a fresh process would start)."""
    with _LIVE_LOCK:
        _LIVE.clear()


def _prints(world: EngineWorld) -> dict[str, bytes]:
    """The fingerprint of a world's ids as stored."""
    return {_IDS: _print(world.ids)}


def _copy_states(states: dict[str, Any]) -> dict[str, Any]:
    return marshal.loads(marshal.dumps(states))


_print = pieces.fingerprint  # a cheap fingerprint of a tool's state or the ids


def _stored_states(world_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Each tool's state as stored in pieces, and the pieces' trees (worlds.pieces)."""
    states: dict[str, Any] = {}
    trees: dict[str, Any] = {}
    for tool, tool_rows in callstore.states(world_id).items():
        states[tool], trees[tool] = pieces.assemble(tool_rows)
    return states, trees


def _changed_pieces(
    world: EngineWorld, live: _Live, tools
) -> tuple[dict[str, Any], list[tuple[str, str, str, Any]], list[tuple[str, str]]]:
    """For the tools among ``tools`` whose state differs from what ``live`` stored (compared piece by
    piece: one fingerprint per stored leaf, no whole-state fingerprint first): their new trees, the
    pieces to write (tool, path, shape, data) and the paths to delete."""
    trees: dict[str, Any] = {}
    puts: list[tuple[str, str, str, Any]] = []
    gone: list[tuple[str, str]] = []
    for tool in tools:
        state = world.states.get(tool)
        if state is None:  # a declared other tool: no state
            continue
        tool_puts: list = []
        tool_gone: list = []
        tree = pieces.diff(state, live.trees.get(tool), (), tool_puts, tool_gone)
        if tool_puts or tool_gone:
            trees[tool] = tree
            puts += [(tool, pieces.path_text(path), shape, data) for path, shape, data in tool_puts]
            gone += [(tool, pieces.path_text(path)) for path in tool_gone]
    return trees, puts, gone


def _entries(world_id: str, live: _Live) -> list[WorldEntry]:
    world = live.world
    rows = [
        WorldEntry(world_id=world_id, kind=WorldEntry.TRACE, seq=e.seq, data=e.to_dict(copy=False))
        for e in world.trace.entries[live.trace_len :]
    ]
    rows += [
        WorldEntry(world_id=world_id, kind=WorldEntry.EVENT, seq=e.n, data=e.to_dict())
        for e in world.events.events[live.events_len :]
    ]
    return rows


def _head(world: EngineWorld) -> dict[str, Any]:
    head = world.head()
    head.pop("ids")
    return head


def _changes(world: EngineWorld, live: _Live | None = None, *, ended_at_was=None) -> dict[str, Any]:
    """The row's columns to write: the head and counters always, the ids when they changed."""
    changes: dict[str, Any] = {"state": _head(world), "calls": world.clock.calls}
    if live is None or _print(world.ids) != live.prints.get(_IDS):
        changes["ids"] = world.ids
        if live is not None:
            live.prints[_IDS] = _print(world.ids)
    if world.ended and ended_at_was is None:
        changes.update(ended_at=timezone.now(), end_reason=world.ended)
    return changes


def _save_parts(world_id: str, live: _Live) -> None:
    """Append the new trace entries and events, write the pieces of tool state that changed."""
    world = live.world
    WorldEntry.objects.bulk_create(_entries(world_id, live))
    live.trace_len, live.events_len = len(world.trace.entries), len(world.events.events)
    trees, puts, gone = _changed_pieces(world, live, list(world.states))
    for tool in {t for t, _ in gone}:
        paths = [p for t, p in gone if t == tool]
        WorldToolState.objects.filter(world_id=world_id, tool=tool, path__in=paths).delete()
    WorldToolState.objects.bulk_create(
        [WorldToolState(world_id=world_id, tool=t, path=p, shape=sh, data=d) for t, p, sh, d in puts],
        update_conflicts=True,
        unique_fields=["world", "tool", "path"],
        update_fields=["shape", "data"],
    )
    live.trees.update(trees)
    world.touched.clear()


def _save(world_id: str, live: _Live, *, ended_at_was=None) -> None:
    """Write what the calls since ``live`` was stored changed (under the row lock); ``live`` then
    reflects the row."""
    _save_parts(world_id, live)
    World.objects.filter(pk=world_id).update(**_changes(live.world, live, ended_at_was=ended_at_was))
    live.calls = live.world.clock.calls


def _restore(row: World, *, seed: bool = True) -> _Live:
    """The engine world stored in ``row`` (every part read from the database; without the seed, an
    empty one, when ``seed`` is false)."""
    head = {"ids": row.ids, **(row.state or {})}  # a whole (old) state holds its own ids
    whole = "trace" in head
    if whole:  # a world stored whole, before the parts (see migration 0002)
        trace, events, states = head.pop("trace"), head.pop("events"), head.pop("states")
        seed = head.pop("seed") if seed else {}
    else:
        entries = list(
            WorldEntry.objects.filter(world_id=row.pk).order_by("kind", "seq").values_list("kind", "data")
        )
        trace = [d for k, d in entries if k == WorldEntry.TRACE]
        events = [d for k, d in entries if k == WorldEntry.EVENT]
        states, trees = _stored_states(row.pk)
        seed = row.seed if seed else {}
    snapshot = {
        **head,
        "calls": row.calls,
        "credentials": decrypt_json(row.secrets, default={}),
        "states": states,
        "seed": seed,
        "trace": trace,
        "events": events,
    }
    world = _voiced(EngineWorld.restore(engine_scene_of(row.scene_version), snapshot), row.team_id)
    if whole:  # nothing of it is stored in parts yet: the next save writes every part
        return _Live(world, row.calls, 0, 0, {})
    return _Live(world, row.calls, len(trace), len(events), _prints(world), trees)


def _restore_to_answer(row: World) -> _Live:
    """The engine world of ``row`` for answering calls only: its head, credentials and tool states,
    the trace and events carrying on after the stored ones without loading them (a partial history:
    load_world and end_world read everything), no seed. Costs the tools' states, not the trace."""
    if "trace" in (row.state or {}):
        return _restore(row, seed=False)
    last_seq = (
        WorldEntry.objects.filter(world_id=row.pk, kind=WorldEntry.TRACE)
        .order_by("-seq")
        .values_list("seq", flat=True)
        .first()
    )
    last_event = (
        WorldEntry.objects.filter(world_id=row.pk, kind=WorldEntry.EVENT)
        .order_by("-seq")
        .values_list("seq", "data")
        .first()
    )
    states, trees = _stored_states(row.pk)
    snapshot = {
        **row.state,
        "ids": row.ids,
        "calls": row.calls,
        "credentials": decrypt_json(row.secrets, default={}),
        "states": states,
        "seed": {},
        "trace": [],
        "events": [],
    }
    world = _voiced(EngineWorld.restore(engine_scene_of(row.scene_version), snapshot), row.team_id)
    world.trace.continue_from(last_seq or 0)
    if last_event is not None:
        world.events.continue_from(last_event[0], Event.from_dict(last_event[1]).at)
    return _Live(world, row.calls, 0, 0, _prints(world), trees)


def _voiced(world: EngineWorld, team_id: int | None) -> EngineWorld:
    """The world with a voice for its people with ``voice: llm`` when a judge is configured: the team's
    budgeted judge client words their replies (worlds.engine.voice); otherwise they say ``says``."""
    if world.voice is None and any(p.voice == "llm" for p in world.scene.people.values()):
        client = judge_for_team(team_id)
        if client is not None:
            world.voice = voice_from_client(
                client, world.scene.judge_model or settings.EVALCONSOLE_JUDGE_MODEL
            )
    return world


def _forget_history(live: _Live) -> None:
    """A kept world holds no trace or events (they are stored): its memory is its tools' states."""
    live.world.trace.forget()
    live.world.events.forget()
    live.trace_len = live.events_len = 0


def start_world(*, version: SceneVersion, team=None, shared: bool = False) -> tuple[World, EngineWorld]:
    """A fresh world for one trial, stored so any process can serve it. With ``shared`` the world
    returned is the one this process keeps for the calls (no copy): the caller only reads it."""
    world = EngineWorld.build(engine_scene_of(version), new_world_id())
    row = World(
        id=world.id,
        team_id=team.pk if team is not None else version.parent.agent.team_id,
        scene_version=version,
        secrets=encrypt_json(world.credentials),
        state=_head(world),
        ids=world.ids,
        seed=world.seed,
    )
    fresh = _Live(world, 0, 0, 0, {})
    with transaction.atomic():
        row.save(force_insert=True)
        WorldToolState.objects.bulk_create(
            [WorldToolState(world_id=world.id, tool=tool, data=state) for tool, state in world.states.items()]
        )
        WorldEntry.objects.bulk_create(_entries(world.id, fresh))  # anything the build logged
    if shared:  # the history and the seed are stored: the kept world holds its tools' states only
        kept = world
        kept.seed = {}
        kept.trace.forget()
        kept.events.forget()
    else:  # this process keeps a world of its own for the calls (the caller may change the one it gets)
        kept = EngineWorld.restore(
            world.scene,
            {**world.snapshot(), "states": _copy_states(world.states), "seed": {}, "trace": [], "events": []},
        )
        kept.trace.continue_from(len(world.trace))
        kept.events.continue_from(
            len(world.events), world.events.events[-1].at if world.events.events else None
        )
    _voiced(kept, row.team_id)
    roots = {t: _print(state) for t, state in kept.states.items()}  # each tool stored whole, at its root
    _keep_live(world.id, _Live(kept, 0, 0, 0, _prints(kept), roots))
    return row, world


def load_world(world_id: str) -> EngineWorld:
    try:
        row = World.objects.select_related("scene_version").get(pk=world_id)
    except World.DoesNotExist:
        raise WorldMissing(world_id) from None
    return _restore(row).world


def _locked(world_id: str, *fields: str) -> World | None:
    return World.objects.select_for_update(of=("self",)).only("id", *fields).filter(pk=world_id).first()


def call_world(world_id: str, tool: str, request: Request) -> Response:
    """Answer one agent call to a stored world: on the world this process keeps when the row says no
    other process advanced it, else restored under the row lock."""
    live = _take_live(world_id)
    if live is not None:
        response = _call_kept(world_id, tool, request, live)
        if response is not None:
            return response
    return _call_locked(world_id, tool, request)


def _call_kept(world_id: str, tool: str, request: Request, live: _Live) -> Response | None:
    """Answer on the kept world, then store the call only if the row is still at the calls counter
    the kept world started from and not ended (worlds.callstore: one conditional statement or
    transaction), so of two calls racing on one world only one is stored and the other is answered
    again by _call_locked. None (the kept world dropped) when the call is not this path's to answer."""
    world = live.world
    if not world.has_tool(tool):
        _keep_live(world_id, live)
        return None
    before = live.calls
    try:
        response = world.call(tool, request)
    except WorldEnded:
        return None
    if not _parts_stored(live):  # a world stored whole, not yet in parts: the ORM writes every part
        with transaction.atomic():
            won = World.objects.filter(pk=world_id, calls=before, ended_at__isnull=True).update(
                **_changes(world, live)
            )
            if not won:
                return None
            _save_parts(world_id, live)
    elif not _store_call(world_id, live, before):
        return None
    live.calls = world.clock.calls
    _forget_history(live)
    _keep_live(world_id, live)
    return response


def _parts_stored(live: _Live) -> bool:
    return all(tool in live.trees for tool in live.world.states)


def _store_call(world_id: str, live: _Live, before: int) -> bool:
    """Store what the call just answered on ``live`` changed (worlds.callstore): True when stored,
    False when the row had moved on (nothing stored). ``live``'s fingerprints then reflect the row."""
    write, marks = _call_write(world_id, live, before)
    try:
        won = callstore.store(write)
    except (OperationalError, InterfaceError):
        # The connection broke (a restarted database, a dropped idle connection): whether the call
        # was stored before it did is in the row's stamp, read on a fresh connection.
        if connection.in_atomic_block:
            raise
        connection.close()
        won = callstore.stored(world_id, write.stamp)
        log.warning("worlds: the connection broke while storing a call to %s (stored: %s)", world_id, won)
    if won:
        _mark_stored(live, marks)
    return won


def _call_write(world_id: str, live: _Live, before: int) -> tuple[callstore.CallWrite, tuple[dict, dict]]:
    """What the calls since ``live`` was stored changed: the pieces of the tools among those the world
    handed a simulator out for whose fingerprint moved, the ids if they did, the head and the new
    entries; and the fingerprints and trees to keep once it is stored."""
    world = live.world
    trees, puts, gone = _changed_pieces(world, live, world.touched)
    marks = {_IDS: _print(world.ids)}
    write = callstore.CallWrite(
        world_id=world_id,
        before=before,
        calls=world.clock.calls,
        stamp=_STAMPS.getrandbits(63) or 1,
        head=_head(world),
        entries=_entry_data(live),
        pieces=puts,
        gone=gone,
        ids=world.ids if marks[_IDS] != live.prints.get(_IDS) else None,
        ended_at=timezone.now() if world.ended else None,
        end_reason=world.ended or "",
    )
    return write, (marks, trees)


def _mark_stored(live: _Live, marks: tuple[dict, dict]) -> None:
    world = live.world
    live.prints.update(marks[0])
    live.trees.update(marks[1])
    live.trace_len, live.events_len = len(world.trace.entries), len(world.events.events)
    world.touched.clear()


def _entry_data(live: _Live) -> list[tuple[str, int, dict]]:
    """The trace entries and events appended since ``live`` was stored: (kind, seq, data)."""
    world = live.world
    rows = [(WorldEntry.TRACE, e.seq, e.to_dict(copy=False)) for e in world.trace.entries[live.trace_len :]]
    rows += [(WorldEntry.EVENT, e.n, e.to_dict()) for e in world.events.events[live.events_len :]]
    return rows


def _call_locked(world_id: str, tool: str, request: Request) -> Response:
    live = _take_live(world_id)
    with transaction.atomic():
        row = _locked(world_id, "calls", "ended_at")
        if row is None:
            raise WorldMissing(world_id)
        if row.ended_at is not None:
            raise WorldGone(world_id)
        if live is None or live.calls != row.calls:
            full = World.objects.select_related("scene_version").defer("seed").get(pk=world_id)
            live = _restore_to_answer(full)
        world = live.world
        if not world.has_tool(tool):
            _keep_live(world_id, live)
            raise WorldMissing(f"{world_id}/{tool}")
        try:
            response = world.call(tool, request)
        except WorldEnded:
            raise WorldGone(world_id) from None
        _save(world_id, live)
    _forget_history(live)
    _keep_live(world_id, live)
    return response


def end_world(world_id: str, reason: str = "reply") -> EngineWorld:
    """Freeze a world (the agent replied, timed out, or the run stopped) and return it for judging."""
    _take_live(world_id)
    with transaction.atomic():
        row = World.objects.select_for_update(of=("self",)).select_related("scene_version").get(pk=world_id)
        live = _restore(row)
        live.world.end(reason)
        _save(world_id, live, ended_at_was=row.ended_at)
    return live.world


# ----------------------------------------------------------------------------- scene tests

SCENE_KEY = "scene"  # scenario metadata: the library scene a scenario plays


def validate_scene_items(agent: Agent, scenes: Any) -> list[Scene | None]:
    """Check the scenes a test would play, saving nothing: each library scene found (None for a
    file, which validated). Raises ValidationFailed naming every bad ``scenes.<i>`` at once."""
    if not isinstance(scenes, list | tuple) or not scenes:
        raise ValidationFailed(
            "give a list of at least one scene (an id from the library, or a file)", field="scenes"
        )
    limit = int(settings.EVALCONSOLE_MAX_SCENARIOS)
    if len(scenes) > limit:
        raise ValidationFailed(f"{len(scenes)} scenes is over the limit of {limit} per test", field="scenes")
    errors: dict[str, Any] = {}
    found: list[Scene | None] = []
    library = {
        s.pk: s for s in Scene.objects.filter(agent=agent, pk__in=[i for i in scenes if type(i) is int])
    }
    for index, item in enumerate(scenes):
        where = f"scenes.{index}"
        if type(item) is int:
            scene = library.get(item)
            if scene is None:
                errors[where] = f"scene {item} is not in {agent.name}'s library"
            elif scene.archived_at is not None:
                errors[where] = f"scene {scene.name!r} is archived; restore it first"
            found.append(scene)
            continue
        try:
            parse_scene(item, field=where)
        except SceneRejected as exc:
            errors[where] = exc.problems
        except ValidationFailed as exc:
            errors[where] = next(iter(exc.errors.values()))
        found.append(None)
    if errors:
        raise ValidationFailed(errors)
    ids = [s.pk for s in found if s is not None]
    if len(set(ids)) != len(ids):
        raise ValidationFailed("a scene appears twice; list each once", field="scenes")
    return found


def _scene_items(agent: Agent, scenes: Any, by) -> list[Scene]:
    """The scenes a test plays, in order: ids of the agent's library scenes, or files (YAML/JSON text
    or objects) saved to the library now."""
    found = validate_scene_items(agent, scenes)
    out = []
    for item, scene in zip(scenes, found, strict=True):
        out.append(scene if scene is not None else create_scene(agent=agent, by=by, source=item))
    return out


def _scenarios_of(scenes: list[Scene]) -> list[dict]:
    scenarios = []
    for scene in scenes:
        parsed = engine_scene_of(scene.current_version)
        scenarios.append({"name": scene.name, "input": parsed.task, "metadata": {SCENE_KEY: scene.pk}})
    return scenarios


def _attach(test, scenes: list[Scene]) -> None:
    version = test.current_version
    if TestScene.objects.filter(test_version=version).exists():
        return
    TestScene.objects.bulk_create(
        [TestScene(test_version=version, scene=scene, position=i) for i, scene in enumerate(scenes)]
    )


def scenes_of(test_version) -> list[Scene]:
    """The scenes a test version plays, in scenario order ([] for a test of plain scenarios)."""
    return [ts.scene for ts in TestScene.objects.filter(test_version=test_version).select_related("scene")]


def _checks_fit_scenes(agent: Agent, scenes: list[Scene], checks) -> None:
    """Library state and process checks attached to a scene test must name refs (people, facts,
    decisions) every scene has (WORLDS.md "In the console"); the problems are reported on
    ``checks.<i>``, naming the scene."""
    wanted = []
    for item in checks or ():
        pk = item.get("check") if isinstance(item, Mapping) else item
        wanted.append(getattr(pk, "pk", pk))
    found = {
        c.pk: c
        for c in Check.objects.filter(
            agent=agent, pk__in=[p for p in wanted if type(p) is int], kind__in=("state", "process")
        ).select_related("current_version")
    }
    errors: dict[str, str] = {}
    for index, pk in enumerate(wanted):
        check = found.get(pk)
        if check is None or check.current_version is None:
            continue
        fits = state_in_scene if check.kind == "state" else process_in_scene
        for scene in scenes:
            _, problems = fits(engine_scene_of(scene.current_version), check.current_version.config)
            if problems:
                errors[f"checks.{index}"] = (
                    f"check {check.name!r} does not fit scene {scene.name!r}: {problems[0]}"
                )
                break
    if errors:
        raise ValidationFailed(errors)


def create_scene_test(*, test_set, by, name: str, scenes, checks=(), **thresholds):
    """A test that plays scenes: one scenario per scene (its task as the input), each sample in a
    fresh world. Files given inline are saved to the agent's library first, in the same transaction."""
    access.require(by, access.CREATE, Test, team=test_set.agent.team)
    with transaction.atomic():
        picked = _scene_items(test_set.agent, scenes, by)
        _checks_fit_scenes(test_set.agent, picked, checks)
        test = checks_services.create_test(
            test_set=test_set, by=by, name=name, scenarios=_scenarios_of(picked), checks=checks, **thresholds
        )
        _attach(test, picked)
    return test


def edit_scene_test(*, test, by, scenes=None, **changes):
    """Edit a test; ``scenes`` replaces the scenes it plays (a test of plain scenarios takes none)."""
    current = scenes_of(test.current_version)
    if scenes is None and not current:
        return checks_services.edit_test(test=test, by=by, **changes)
    if "scenarios" in changes:
        raise ValidationFailed("a test holds either scenes or plain scenarios, not both", field="scenarios")
    with transaction.atomic():
        picked = _scene_items(test.test_set.agent, scenes, by) if scenes is not None else current
        if "checks" in changes or scenes is not None:
            attached = changes.get("checks")
            if attached is None:
                attached = [
                    {"check": tc.library_check_id} for tc in test.current_version.attached_checks.all()
                ]
            _checks_fit_scenes(test.test_set.agent, picked, attached)
        edited = checks_services.edit_test(test=test, by=by, scenarios=_scenarios_of(picked), **changes)
        _attach(edited, picked)
    return edited


# ----------------------------------------------------------------------------- trials in the console


def begin_trial(*, version_id: int, team_id: int) -> tuple[str, dict[str, Any], str]:
    """A fresh world for one sample: (world id, the scenario's ``world`` object, the scene's task)."""
    version = SceneVersion.objects.select_related("parent").get(pk=version_id)
    row, world = start_world(version=version, team=Team(pk=team_id), shared=True)
    return row.id, world.for_agent(worlds_root()), world.scene.task


def finish_trial(
    *, world_id: str, reason: str = "reply", team_id: int | None = None
) -> tuple[EngineWorld, dict[str, Any]]:
    """End the sample's world and judge the scene's own checks on it: (the frozen world, checks.json)."""
    world = end_world(world_id, reason)
    return world, judge_trial(world, team_id=team_id)


def judge_trial(world: EngineWorld, *, team_id: int | None) -> dict[str, Any]:
    """The scene's own checks on a frozen world (checks.json); judge checks use the console's judge."""
    return evaluate(
        world, judge=scene_judge(team_id=team_id, model=world.scene.judge_model, task=world.scene.task)
    )


def scene_judge(*, team_id: int | None, model: str | None, task: str):
    """A judge for a scene's ``judge`` checks: the console's judge settings and the team's budget,
    through the ai_judge check kind (worlds.engine.evaluate.kind_judge, as ``scene run`` on a machine).
    None without a judge key: those checks are skipped."""
    if not judge_configured():
        return None
    ctx = make_context(team_id=team_id)
    return kind_judge(ctx.judge, model=model, task=task, settings=ctx.settings, cache=ctx.cache)
