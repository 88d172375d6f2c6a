"""Datadog's HTTP API as the official client (``datadog-api-client``) calls it: the simulator behind
:mod:`worlds.engine.tools.datadog`, kept apart only for length.

Answers are Datadog's: JSON bodies, ``{"errors": [...]}`` with the real status for every error (403
``Forbidden`` for a wrong or missing key, 404 for an unknown id, 400 for a bad body or enum value), v1
monitors, one set of downtime records seen through both the v1 and the v2 downtime APIs, v1 events,
v1 dashboards and the v2 logs search. Every time is simulated.
"""

from __future__ import annotations

import base64
import fnmatch
import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any

from ..clock import iso
from ..credentials import matches
from ..http import Request, Response
from ..ids import digest, numeric_id
from ..results import StateResult
from ..simulator import BuildContext, Simulator

__all__ = ["MONITOR_TYPES", "DatadogError", "DatadogSimulator"]

# The monitor types the official client accepts (datadog_api_client.v1.model.monitor_type).
MONITOR_TYPES = (
    "composite",
    "event alert",
    "log alert",
    "metric alert",
    "process alert",
    "query alert",
    "rum alert",
    "service check",
    "synthetics alert",
    "trace-analytics alert",
    "slo alert",
    "event-v2 alert",
    "audit alert",
    "ci-pipelines alert",
    "ci-tests alert",
    "error-tracking alert",
    "database-monitoring alert",
    "network-performance alert",
    "cost alert",
    "data-quality alert",
    "network-path alert",
    "data-jobs alert",
    "llm-observability alert",
)
ALERT_TYPES = ("error", "warning", "info", "success", "user_update", "recommendation", "snapshot")
PRIORITIES = ("normal", "low")
NOTIFY_END_STATES = ("alert", "no data", "warn")
NOTIFY_END_TYPES = ("canceled", "expired")
ENDS = (("notify_end_states", NOTIFY_END_STATES), ("notify_end_types", NOTIFY_END_TYPES))
ALL_MONITORS = ["*"]
AUTHOR = {"email": "admin@example.com", "handle": "admin@example.com", "name": "Admin"}
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MS = timedelta(milliseconds=1)
NOW_RELATIVE = re.compile(r"now(?:\s*-\s*(\d+)\s*([smhdw]))?\Z")
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
LOG_TERM = re.compile(r'-?(?:[@\w.\-]+:)?"[^"]*"|\S+')


class DatadogError(Exception):
    """An error answer: ``raise DatadogError(404, "Monitor not found")`` in a handler."""

    def __init__(self, status: int, *errors: str, gap: bool = False) -> None:
        super().__init__(errors[0] if errors else str(status))
        self.status = status
        self.errors = list(errors)
        self.gap = gap


# -- small helpers ------------------------------------------------------------------------------------


def _ms(moment: datetime) -> int:
    return (moment - EPOCH) // MS


def _moment(ms: int) -> datetime:
    return EPOCH + ms * MS


@lru_cache(maxsize=4096)  # a world's answers repeat a few times (the start, each call's time) many times
def _iso_ms(ms: int | None) -> str | None:
    return None if ms is None else iso(_moment(ms))


def _span(delta_ms: float) -> str:
    """A length in the scene's duration style: ``9m58s``, ``1h``, ``500ms``, ``indefinite``."""
    if delta_ms == float("inf"):
        return "indefinite"
    sign, delta_ms = ("-", -delta_ms) if delta_ms < 0 else ("", delta_ms)
    seconds, ms = divmod(int(delta_ms), 1000)
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    parts = [f"{v}{u}" for v, u in ((hours, "h"), (minutes, "m"), (seconds, "s"), (ms, "ms")) if v]
    return sign + ("".join(parts) or "0s")


def _int(value: Any, name: str, *, minimum: int | None = None) -> int:
    """An integer from a query string or a JSON body (never a bool); 400 otherwise."""
    if isinstance(value, bool) or value is None:
        raise DatadogError(400, f"Invalid {name} parameter: an integer is required")
    if isinstance(value, int):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and re.fullmatch(r"-?\d{1,18}", value.strip()):
        number = int(value.strip())
    else:
        raise DatadogError(400, f"Invalid {name} parameter: {value!r} is not an integer")
    if minimum is not None and number < minimum:
        raise DatadogError(400, f"Invalid {name} parameter: must be at least {minimum}")
    return number


def _flag(value: str | None) -> bool:
    return str(value).strip().lower() in ("true", "1", "yes")


def _strs(value: Any, name: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DatadogError(400, f"Invalid {name}: a list of strings is required")
    return list(value)


def _text(value: Any, name: str, *, required: bool = False) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        raise DatadogError(400, f"Invalid {name}: a {'non-empty ' if required else ''}string is required")
    return value


def _object(value: Any, name: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise DatadogError(400, f"Invalid {name}: an object is required")
    return value


def _parse_time(value: Any, name: str) -> int:
    """An ISO 8601 time (``2026-03-02T09:00:00Z``; no zone = UTC) as epoch milliseconds; 400 otherwise."""
    if not isinstance(value, str):
        raise DatadogError(400, f"Invalid {name}: an ISO 8601 date-time is required")
    try:
        moment = datetime.fromisoformat(value.strip().replace("z", "Z"))
    except ValueError:
        raise DatadogError(400, f"Invalid {name}: {value!r} is not an ISO 8601 date-time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return _ms(moment)


def _uuid(scene: str, key: str) -> str:
    text = f"{digest(scene, key, 'datadog-v2'):064x}"[:32]
    text = text[:12] + "4" + text[13:16] + "89ab"[int(text[16], 16) % 4] + text[17:]
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def _dashboard_id(scene: str, ref: str) -> str:
    number, chars = digest(scene, ref, "datadog-dashboard"), []
    for _ in range(9):
        number, r = divmod(number, 36)
        chars.append("abcdefghijklmnopqrstuvwxyz0123456789"[r])
    text = "".join(chars)
    return f"{text[:3]}-{text[3:6]}-{text[6:]}"


def _log_id(scene: str, ref: str) -> str:
    raw = digest(scene, ref, "datadog-log").to_bytes(32, "big")[:24]
    return "AQAAA" + base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "dashboard"


def _synthesized_query(name: str) -> str:
    metric = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_") or "monitor"
    return f"avg(last_5m):sum:{metric}{{*}} > 0"


def _type_for(query: str) -> str:
    q = query.strip().lower()
    if q.startswith("logs("):
        return "log alert"
    if q.startswith("events("):
        return "event-v2 alert"
    if re.fullmatch(r"[\d\s()&|!]+", q):
        return "composite"
    return "metric alert"


def _scope_tags(query: str) -> set[str]:
    tags: set[str] = set()
    for group in re.findall(r"\{([^}]*)\}", query):
        tags.update(t.strip() for t in group.split(",") if t.strip())
    return tags


# -- the simulator ------------------------------------------------------------------------------------


class DatadogSimulator(Simulator):
    """A Datadog organisation as the agent's API and application keys see it.

    State (plain JSON; times in epoch milliseconds): ``monitors`` by id (as a string), in id order;
    ``downtimes`` in creation order (``v1`` integer id, ``id`` UUID for v2, ``monitor_id`` or
    ``monitor_tags``, ``scope``, ``start``, ``end``, ``canceled``, ``seq`` of the call that created
    it, ``seqs`` of every call that changed it); ``events`` (seed and posted), ``dashboards`` by id,
    ``logs`` in time order; ``made``: how many records the agent created (their ids hash from it).
    """

    tool = "datadog"
    routes = (
        ("GET", "/api/v1/monitor", "_list_monitors"),
        ("GET", "/api/v1/monitor/{monitor_id}", "_get_monitor"),
        ("PUT", "/api/v1/monitor/{monitor_id}", "_update_monitor"),
        ("POST", "/api/v1/monitor/{monitor_id}/mute", "_mute_monitor"),
        ("POST", "/api/v1/monitor/{monitor_id}/unmute", "_unmute_monitor"),
        ("GET", "/api/v2/downtime", "_v2_list_downtimes"),
        ("POST", "/api/v2/downtime", "_v2_create_downtime"),
        ("GET", "/api/v2/downtime/{downtime_id}", "_v2_get_downtime"),
        ("PATCH", "/api/v2/downtime/{downtime_id}", "_v2_update_downtime"),
        ("DELETE", "/api/v2/downtime/{downtime_id}", "_v2_cancel_downtime"),
        ("GET", "/api/v1/downtime", "_v1_list_downtimes"),
        ("POST", "/api/v1/downtime", "_v1_create_downtime"),
        ("GET", "/api/v1/downtime/{downtime_id}", "_v1_get_downtime"),
        ("PUT", "/api/v1/downtime/{downtime_id}", "_v1_update_downtime"),
        ("DELETE", "/api/v1/downtime/{downtime_id}", "_v1_cancel_downtime"),
        ("GET", "/api/v1/events", "_list_events"),
        ("POST", "/api/v1/events", "_create_event"),
        ("GET", "/api/v1/events/{event_id}", "_get_event"),
        ("GET", "/api/v1/dashboard", "_list_dashboards"),
        ("GET", "/api/v1/dashboard/{dashboard_id}", "_get_dashboard"),
        ("POST", "/api/v2/logs/events/search", "_search_logs"),
    )

    # -- building -----------------------------------------------------------------------------------
    @classmethod
    def build(cls, ctx: BuildContext) -> dict[str, Any]:
        scene, world = ctx.scene.name, ctx.world
        start = _ms(ctx.scene.start)
        monitors: list[dict[str, Any]] = []
        for ref, record in ctx.records.get("monitors", {}).items():
            f = record.fields
            query = f.get("query") or _synthesized_query(f["name"])
            mid = numeric_id(scene, ref, "datadog", 8)
            monitors.append(
                {
                    "id": mid,
                    "ref": ref,
                    "name": f["name"],
                    "type": f.get("type") or _type_for(query),
                    "query": query,
                    "message": f.get("message") or "",
                    "tags": list(f.get("tags") or ()),
                    "priority": None,
                    "options": {},
                    "state": f.get("state") or "OK",
                    "created": start,
                    "modified": start,
                    "state_modified": start,
                    "changed_event": None,
                    "changed_seq": None,
                    "seqs": [],
                }
            )
            world.ids[ref] = mid
        monitors.sort(key=lambda m: m["id"])
        dashboards: dict[str, Any] = {}
        for ref, record in ctx.records.get("dashboards", {}).items():
            did = _dashboard_id(scene, ref)
            dashboards[did] = {"id": did, "ref": ref, "title": record.fields["title"]}
            dashboards[did]["text"] = record.fields.get("text") or ""
            world.ids[ref] = did
        events: list[dict[str, Any]] = []
        for ref, record in ctx.records.get("events", {}).items():
            f = record.fields
            eid = numeric_id(scene, ref, "datadog", 18)
            at = start + (f.get("at") or timedelta()) // MS
            events.append(cls._new_event(eid, f["title"], f.get("text") or "", at, f.get("tags"), ref=ref))
            world.ids[ref] = eid
        events.sort(key=lambda e: e["at"])
        logs: list[dict[str, Any]] = []
        for ref, record in ctx.records.get("logs", {}).items():
            f = record.fields
            lid = _log_id(scene, ref)
            logs.append(
                {
                    "id": lid,
                    "ref": ref,
                    "at": start + (f.get("at") or timedelta()) // MS,
                    "message": f["text"],
                    "service": f.get("service"),
                    "status": f.get("status") or "info",
                    "tags": list(f.get("tags") or ()),
                }
            )
            world.ids[ref] = lid
        logs.sort(key=lambda entry: entry["at"])
        return {
            "made": 0,
            "monitors": {str(m["id"]): m for m in monitors},
            "downtimes": [],
            "events": events,
            "dashboards": dashboards,
            "logs": logs,
        }

    @staticmethod
    def _new_event(
        eid: int, title: str, text: str, at: int, tags: Any, *, ref: str | None = None, seq: int | None = None
    ) -> dict[str, Any]:
        return {
            "id": eid,
            "ref": ref,
            "title": title,
            "text": text,
            "at": at,
            "tags": list(tags or ()),
            "alert_type": "info",
            "priority": "normal",
            "host": None,
            "source": None,
            "aggregation_key": None,
            "seq": seq,
        }

    # -- answering ----------------------------------------------------------------------------------
    def call(self, request: Request) -> Response:
        """As :meth:`Simulator.call`, with Datadog's error shapes; a doubled slash after the base URL
        (an SDK given the base URL with its trailing ``/`` as its host) is read as one."""
        if request.path.startswith("//"):
            request = Request(
                request.method, "/" + request.path.lstrip("/"), request.query, request.headers, request.body
            )
        try:
            return super().call(request)
        except DatadogError as exc:
            return Response(exc.status, {"errors": exc.errors}, coverage_gap=exc.gap)

    def authenticate(self, request: Request) -> Response | None:
        """Both keys (``DD-API-KEY``, ``DD-APPLICATION-KEY``, or the ``api_key``/``application_key``
        query parameters) on every endpoint but posting an event, which takes the API key alone, as
        Datadog's does. A wrong or missing key is Datadog's 403 ``{"errors": ["Forbidden"]}``."""
        credential = self.credential
        api_key = request.header("dd-api-key") or request.arg("api_key")
        if not matches(api_key, credential.get("api_key", "")):
            return Response(403, {"errors": ["Forbidden"]})
        if request.method == "POST" and request.path.rstrip("/") == "/api/v1/events":
            return None
        app_key = request.header("dd-application-key") or request.arg("application_key")
        if not matches(app_key, credential.get("app_key", "")):
            return Response(403, {"errors": ["Forbidden"]})
        return None

    def gap(self, request: Request) -> Response:
        return Response(404, {"errors": ["Not found"]}, coverage_gap=True)

    def bad_body(self, request: Request, message: str) -> Response:
        return Response(400, {"errors": [message]})

    def _body(self, request: Request, *, required: bool = True) -> dict[str, Any]:
        body = request.json()
        if body is None and not required:
            return {}
        if not isinstance(body, dict):
            raise DatadogError(400, "Invalid JSON body: an object is required")
        return body

    @property
    def _now(self) -> int:
        return _ms(self.world.clock.now)

    def _seq(self) -> int | None:
        return self.world.current_seq

    def _next_key(self, kind: str) -> str:
        self.state["made"] += 1
        return f"+{kind}{self.state['made']}"

    # -- monitors -----------------------------------------------------------------------------------
    def _monitor(self, value: Any) -> dict[str, Any]:
        monitor = self.state["monitors"].get(str(value).strip())
        if monitor is None:
            raise DatadogError(404, "Monitor not found")
        return monitor

    def _silences(self) -> dict[int, list[dict[str, Any]]]:
        """The active downtimes on each monitor by id (one pass over the downtimes)."""
        now, found = self._now, {}
        for downtime in self.state["downtimes"]:
            if downtime["monitor_id"] is not None and self._status(downtime, now) == "active":
                found.setdefault(downtime["monitor_id"], []).append(downtime)
        return found

    def _monitor_json(
        self, monitor: dict[str, Any], silences: list[dict[str, Any]], *, with_downtimes: bool = False
    ) -> dict[str, Any]:
        options = {
            "notify_no_data": False,
            "notify_audit": False,
            "include_tags": True,
            "new_host_delay": 300,
            **monitor["options"],
            "silenced": {d["scope"]: None if d["end"] is None else d["end"] // 1000 for d in silences},
        }
        body = {
            "id": monitor["id"],
            "name": monitor["name"],
            "type": monitor["type"],
            "query": monitor["query"],
            "message": monitor["message"],
            "tags": list(monitor["tags"]),
            "options": options,
            "overall_state": monitor["state"],
            "overall_state_modified": _iso_ms(monitor["state_modified"]),
            "priority": monitor["priority"],
            "restricted_roles": None,
            "multi": False,
            "deleted": None,
            "draft_status": "published",
            "created": _iso_ms(monitor["created"]),
            "modified": _iso_ms(monitor["modified"]),
            "creator": dict(AUTHOR),
        }
        if with_downtimes:
            body["matching_downtimes"] = [
                {
                    "id": d["v1"],
                    "start": d["start"] // 1000,
                    "end": None if d["end"] is None else d["end"] // 1000,
                    "scope": self._v1_scope(d["scope"]),
                    "monitor_id": d["monitor_id"],
                    "active": True,
                }
                for d in silences
            ]
        return body

    def _list_monitors(self, request: Request) -> Response:
        name = (request.arg("name") or "").strip().casefold()
        wanted_tags = [t.strip() for t in (request.arg("monitor_tags") or "").split(",") if t.strip()]
        scope_tags = [t.strip() for t in (request.arg("tags") or "").split(",") if t.strip()]
        id_offset = _int(request.arg("id_offset"), "id_offset") if request.arg("id_offset") else None
        paged = request.arg("page") is not None
        page = _int(request.arg("page"), "page", minimum=0) if paged else 0
        size = _int(request.arg("page_size"), "page_size", minimum=1) if request.arg("page_size") else 100
        if size > 1000:
            raise DatadogError(400, "Invalid page_size parameter: must be at most 1000")
        chosen = []
        for monitor in self.state["monitors"].values():
            if name and name not in monitor["name"].casefold():
                continue
            if id_offset is not None and monitor["id"] <= id_offset:
                continue
            if wanted_tags and not all(t in monitor["tags"] for t in wanted_tags):
                continue
            if scope_tags and not set(scope_tags) <= _scope_tags(monitor["query"]):
                continue
            chosen.append(monitor)
        if paged:
            chosen = chosen[page * size : (page + 1) * size]
        silences, extra = self._silences(), _flag(request.arg("with_downtimes"))
        listed = [self._monitor_json(m, silences.get(m["id"], []), with_downtimes=extra) for m in chosen]
        return Response(200, listed)

    def _get_monitor(self, request: Request, monitor_id: str) -> Response:
        monitor = self._monitor(monitor_id)
        silences = self._silences().get(monitor["id"], [])
        return Response(
            200, self._monitor_json(monitor, silences, with_downtimes=_flag(request.arg("with_downtimes")))
        )

    def _update_monitor(self, request: Request, monitor_id: str) -> Response:
        monitor = self._monitor(monitor_id)
        body = self._body(request)
        changes: dict[str, Any] = {}
        if "name" in body:
            changes["name"] = _text(body["name"], "name", required=True)
        if "query" in body:
            changes["query"] = _text(body["query"], "query", required=True)
        if "message" in body:
            changes["message"] = _text(body["message"], "message") or ""
        if "tags" in body:
            changes["tags"] = _strs(body["tags"], "tags")
        if "type" in body:
            if body["type"] not in MONITOR_TYPES:
                raise DatadogError(400, f"Invalid monitor type: {body['type']!r}")
            changes["type"] = body["type"]
        if "priority" in body:
            priority = body["priority"]
            if priority is not None and (_int(priority, "priority") < 1 or _int(priority, "priority") > 5):
                raise DatadogError(400, "Invalid priority parameter: must be between 1 and 5")
            changes["priority"] = None if priority is None else _int(priority, "priority")
        silenced = None
        if "options" in body:
            options = dict(_object(body["options"], "options"))
            silenced = options.pop("silenced", None)
            if silenced is not None:
                silenced = _object(silenced, "options.silenced")
                for scope, end in silenced.items():
                    if end is not None:
                        _int(end, f"options.silenced.{scope}")
            changes["options"] = {**monitor["options"], **options}
        monitor.update(changes)
        monitor["modified"] = self._now
        monitor["seqs"].append(self._seq())
        if silenced is not None:  # the old way of muting: the silenced scopes are exactly these
            for downtime in self._monitor_downtimes(monitor["id"]):
                if downtime["scope"] not in silenced:
                    self._cancel(downtime)
            for scope, end in silenced.items():
                self._mute(monitor, scope, None if end is None else _int(end, "end") * 1000, None)
        silences = self._silences().get(monitor["id"], [])
        return Response(200, self._monitor_json(monitor, silences))

    def _monitor_downtimes(self, monitor_id: int) -> list[dict[str, Any]]:
        """The monitor's own downtimes (by id) that are active or scheduled."""
        now = self._now
        return [
            d
            for d in self.state["downtimes"]
            if d["monitor_id"] == monitor_id and self._status(d, now) in ("active", "scheduled")
        ]

    def _mute_args(self, request: Request) -> dict[str, Any]:
        body = self._body(request, required=False)
        args = {k: request.arg(k) for k in ("scope", "end", "all_scopes") if request.arg(k) is not None}
        return {**args, **body}

    def _mute_monitor(self, request: Request, monitor_id: str) -> Response:
        monitor = self._monitor(monitor_id)
        args = self._mute_args(request)
        scope = _text(args.get("scope"), "scope") or "*"
        end = args.get("end")
        end_ms = None if end is None else _int(end, "end") * 1000
        if end_ms is not None and end_ms <= self._now:
            raise DatadogError(400, "Invalid end parameter: the end of a mute must be in the future")
        message = _text(args.get("message"), "message")
        self._mute(monitor, scope, end_ms, message)
        silences = self._silences().get(monitor["id"], [])
        return Response(200, self._monitor_json(monitor, silences))

    def _mute(self, monitor: dict[str, Any], scope: str, end: int | None, message: str | None) -> None:
        """Mute ``monitor`` on ``scope`` until ``end`` (ms; None: until unmuted): its active mute on
        that scope is extended, or a downtime on the monitor is created."""
        now = self._now
        for downtime in self._monitor_downtimes(monitor["id"]):
            if downtime["scope"] == scope and downtime["start"] <= now:
                downtime.update(end=end, modified=now)
                downtime["seqs"].append(self._seq())
                return
        self._new_downtime(scope, monitor["id"], None, now, end, message)

    def _unmute_monitor(self, request: Request, monitor_id: str) -> Response:
        monitor = self._monitor(monitor_id)
        args = self._mute_args(request)
        scope = _text(args.get("scope"), "scope")
        every = args.get("all_scopes") in (True, "true", "True", "1") or scope is None
        for downtime in self._monitor_downtimes(monitor["id"]):
            if every or downtime["scope"] == scope:
                self._cancel(downtime)
        silences = self._silences().get(monitor["id"], [])
        return Response(200, self._monitor_json(monitor, silences))

    # -- downtimes (one set of records; v1 and v2 shapes) ------------------------------------------------
    @staticmethod
    def _status(downtime: dict[str, Any], now: int) -> str:
        if downtime["canceled"] is not None:
            return "canceled"
        if now < downtime["start"]:
            return "scheduled"
        if downtime["end"] is not None and now >= downtime["end"]:
            return "ended"
        return "active"

    def _new_downtime(
        self,
        scope: str,
        monitor_id: int | None,
        monitor_tags: list[str] | None,
        start: int,
        end: int | None,
        message: str | None,
        *,
        notify_end_states: list[str] | None = None,
        notify_end_types: list[str] | None = None,
    ) -> dict[str, Any]:
        scene, key = self.world.scene.name, self._next_key("downtime")
        now = self._now
        downtime = {
            "v1": numeric_id(scene, key, "datadog", 10),
            "id": _uuid(scene, key),
            "monitor_id": monitor_id,
            "monitor_tags": None if monitor_id is not None else list(monitor_tags or ALL_MONITORS),
            "scope": scope,
            "start": max(start, now),  # a start in the past means now
            "end": end,
            "message": message,
            "canceled": None,
            "created": now,
            "modified": now,
            "notify_end_states": list(NOTIFY_END_STATES if notify_end_states is None else notify_end_states),
            "notify_end_types": list(NOTIFY_END_TYPES if notify_end_types is None else notify_end_types),
            "seq": self._seq(),
            "seqs": [self._seq()],
        }
        self.state["downtimes"].append(downtime)
        return downtime

    def _cancel(self, downtime: dict[str, Any]) -> None:
        if downtime["canceled"] is None:
            downtime["canceled"] = downtime["modified"] = self._now
            downtime["seqs"].append(self._seq())

    def _downtime(self, value: str, version: str) -> dict[str, Any]:
        key, wanted = ("v1", value.strip()) if version == "v1" else ("id", value.strip().lower())
        for downtime in self.state["downtimes"]:
            if str(downtime[key]) == wanted:
                return downtime
        raise DatadogError(404, "Downtime not found")

    @staticmethod
    def _v1_scope(scope: str) -> list[str]:
        return [part.strip() for part in re.split(r"\s+AND\s+", scope) if part.strip()] or ["*"]

    def _v2_json(self, downtime: dict[str, Any], now: int) -> dict[str, Any]:
        if downtime["monitor_id"] is not None:
            identifier: dict[str, Any] = {"monitor_id": downtime["monitor_id"]}
            monitor = {"data": {"id": str(downtime["monitor_id"]), "type": "monitors"}}
        else:
            identifier, monitor = {"monitor_tags": list(downtime["monitor_tags"])}, {"data": None}
        attributes: dict[str, Any] = {
            "canceled": _iso_ms(downtime["canceled"]),
            "created": _iso_ms(downtime["created"]),
            "modified": _iso_ms(downtime["modified"]),
            "display_timezone": "UTC",
            "monitor_identifier": identifier,
            "mute_first_recovery_notification": False,
            "notify_end_states": list(downtime["notify_end_states"]),
            "notify_end_types": list(downtime["notify_end_types"]),
            "schedule": {"start": _iso_ms(downtime["start"]), "end": _iso_ms(downtime["end"])},
            "scope": downtime["scope"],
            "status": self._status(downtime, now),
        }
        if downtime["message"] is not None:
            attributes["message"] = downtime["message"]
        return {
            "type": "downtime",
            "id": downtime["id"],
            "attributes": attributes,
            "relationships": {"created_by": {"data": None}, "monitor": monitor},
        }

    def _v1_json(self, downtime: dict[str, Any], now: int) -> dict[str, Any]:
        status = self._status(downtime, now)
        return {
            "id": downtime["v1"],
            "active": status == "active",
            "canceled": None if downtime["canceled"] is None else downtime["canceled"] // 1000,
            "disabled": status == "canceled",
            "start": downtime["start"] // 1000,
            "end": None if downtime["end"] is None else downtime["end"] // 1000,
            "message": downtime["message"],
            "monitor_id": downtime["monitor_id"],
            "monitor_tags": list(downtime["monitor_tags"] or ALL_MONITORS),
            "scope": self._v1_scope(downtime["scope"]),
            "timezone": "UTC",
            "mute_first_recovery_notification": False,
            "notify_end_states": list(downtime["notify_end_states"]),
            "notify_end_types": list(downtime["notify_end_types"]),
            "parent_id": None,
            "updater_id": None,
        }

    def _current(self, request: Request) -> list[dict[str, Any]]:
        downtimes = self.state["downtimes"]
        if _flag(request.arg("current_only")):
            now = self._now
            return [d for d in downtimes if self._status(d, now) == "active"]
        return downtimes

    def _v2_list_downtimes(self, request: Request) -> Response:
        offset, limit = request.arg("page[offset]"), request.arg("page[limit]")
        offset = _int(offset, "page[offset]", minimum=0) if offset else 0
        limit = _int(limit, "page[limit]", minimum=1) if limit else 30
        if limit > 1000:
            raise DatadogError(400, "Invalid page[limit] parameter: must be at most 1000")
        chosen, now = self._current(request), self._now
        page = chosen[offset : offset + limit]
        return Response(
            200,
            {
                "data": [self._v2_json(d, now) for d in page],
                "meta": {"page": {"total_filtered_count": len(chosen)}},
            },
        )

    def _v2_get_downtime(self, request: Request, downtime_id: str) -> Response:
        return Response(200, {"data": self._v2_json(self._downtime(downtime_id, "v2"), self._now)})

    def _v2_attributes(self, body: dict[str, Any]) -> dict[str, Any]:
        data = _object(body.get("data"), "data")
        if data.get("type") != "downtime":
            raise DatadogError(400, f"Invalid data.type: {data.get('type')!r} is not one of ['downtime']")
        return _object(data.get("attributes"), "data.attributes")

    def _identifier(self, value: Any) -> tuple[int | None, list[str] | None]:
        identifier = _object(value, "monitor_identifier")
        if ("monitor_id" in identifier) == ("monitor_tags" in identifier):
            raise DatadogError(400, "Invalid monitor_identifier: give one of monitor_id or monitor_tags")
        if "monitor_id" in identifier:
            mid = _int(identifier["monitor_id"], "monitor_identifier.monitor_id")
            if str(mid) not in self.state["monitors"]:
                raise DatadogError(400, f"Invalid monitor_identifier: monitor {mid} does not exist")
            return mid, None
        tags = _strs(identifier["monitor_tags"], "monitor_identifier.monitor_tags")
        if not tags:
            raise DatadogError(400, "Invalid monitor_identifier.monitor_tags: at least one tag is required")
        return None, tags

    def _schedule(self, value: Any, start: int | None, end: int | None) -> tuple[int, int | None]:
        """A one-time schedule ``{start, end}`` over the current (start, end); recurrences are not
        simulated (a coverage gap)."""
        now = self._now
        if value is None:
            return (now if start is None else start), end
        schedule = _object(value, "schedule")
        if "recurrences" in schedule:
            raise DatadogError(501, "Recurring downtime schedules are not simulated", gap=True)
        if "start" in schedule:
            start = now if schedule["start"] is None else _parse_time(schedule["start"], "schedule.start")
        if "end" in schedule:
            end = None if schedule["end"] is None else _parse_time(schedule["end"], "schedule.end")
        start = now if start is None else start
        return start, end

    @staticmethod
    def _enums(value: Any, name: str, allowed: tuple[str, ...]) -> list[str]:
        values = _strs(value, name)
        for item in values:
            if item not in allowed:
                raise DatadogError(400, f"Invalid {name}: {item!r} is not one of {list(allowed)}")
        return values

    def _v2_create_downtime(self, request: Request) -> Response:
        attributes = self._v2_attributes(self._body(request))
        scope = _text(attributes.get("scope"), "scope", required=True)
        monitor_id, monitor_tags = self._identifier(attributes.get("monitor_identifier"))
        start, end = self._schedule(attributes.get("schedule"), None, None)
        self._check_window(start, end)
        ends = {}
        for field, allowed in ENDS:
            if field in attributes:
                ends[field] = self._enums(attributes[field], field, allowed)
        message = _text(attributes.get("message"), "message")
        downtime = self._new_downtime(scope, monitor_id, monitor_tags, start, end, message, **ends)
        return Response(200, {"data": self._v2_json(downtime, self._now)})

    def _check_window(self, start: int, end: int | None) -> None:
        if end is not None and end <= max(start, self._now):
            raise DatadogError(400, "Invalid schedule: the end must be after the start and in the future")

    def _v2_update_downtime(self, request: Request, downtime_id: str) -> Response:
        downtime = self._downtime(downtime_id, "v2")
        attributes = self._v2_attributes(self._body(request))
        if downtime["canceled"] is not None:
            raise DatadogError(400, "Cannot update a canceled downtime")
        changes: dict[str, Any] = {}
        if "scope" in attributes:
            changes["scope"] = _text(attributes["scope"], "scope", required=True)
        if "message" in attributes:
            changes["message"] = _text(attributes["message"], "message")
        if "monitor_identifier" in attributes:
            identifier = self._identifier(attributes["monitor_identifier"])
            changes["monitor_id"], changes["monitor_tags"] = identifier
        if "notify_end_states" in attributes:
            changes["notify_end_states"] = self._enums(
                attributes["notify_end_states"], "notify_end_states", NOTIFY_END_STATES
            )
        if "notify_end_types" in attributes:
            changes["notify_end_types"] = self._enums(
                attributes["notify_end_types"], "notify_end_types", NOTIFY_END_TYPES
            )
        if "schedule" in attributes:
            changes["start"], changes["end"] = self._schedule(
                attributes["schedule"], downtime["start"], downtime["end"]
            )
            self._check_window(changes["start"], changes["end"])
        downtime.update(changes, modified=self._now)
        downtime["seqs"].append(self._seq())
        return Response(200, {"data": self._v2_json(downtime, self._now)})

    def _v2_cancel_downtime(self, request: Request, downtime_id: str) -> Response:
        self._cancel(self._downtime(downtime_id, "v2"))
        return Response(204, None)

    def _v1_list_downtimes(self, request: Request) -> Response:
        now = self._now
        return Response(200, [self._v1_json(d, now) for d in self._current(request)])

    def _v1_get_downtime(self, request: Request, downtime_id: str) -> Response:
        return Response(200, self._v1_json(self._downtime(downtime_id, "v1"), self._now))

    def _v1_fields(self, body: dict[str, Any], downtime: dict[str, Any] | None) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        if "scope" in body or downtime is None:
            scope = body.get("scope")
            if isinstance(scope, str) and scope.strip():
                fields["scope"] = scope.strip()
            elif isinstance(scope, list) and scope and all(isinstance(s, str) and s.strip() for s in scope):
                fields["scope"] = " AND ".join(s.strip() for s in scope)
            else:
                raise DatadogError(400, 'Invalid scope parameter: a scope such as "*" is required')
        if body.get("monitor_id") is not None:
            mid = _int(body["monitor_id"], "monitor_id")
            if str(mid) not in self.state["monitors"]:
                raise DatadogError(400, f"Invalid monitor_id parameter: monitor {mid} does not exist")
            fields["monitor_id"], fields["monitor_tags"] = mid, None
        elif body.get("monitor_tags") is not None:
            tags = _strs(body["monitor_tags"], "monitor_tags") or list(ALL_MONITORS)
            fields["monitor_id"], fields["monitor_tags"] = None, tags
        elif downtime is None:
            fields["monitor_id"], fields["monitor_tags"] = None, list(ALL_MONITORS)
        if "message" in body:
            fields["message"] = _text(body["message"], "message")
        if body.get("start") is not None:
            fields["start"] = _int(body["start"], "start") * 1000
        if "end" in body:
            fields["end"] = None if body["end"] is None else _int(body["end"], "end") * 1000
        start = fields.get("start", downtime["start"] if downtime else self._now)
        self._check_window(start, fields.get("end", downtime["end"] if downtime else None))
        return fields

    def _v1_create_downtime(self, request: Request) -> Response:
        fields = self._v1_fields(self._body(request), None)
        downtime = self._new_downtime(
            fields["scope"],
            fields["monitor_id"],
            fields["monitor_tags"],
            fields.get("start", self._now),
            fields.get("end"),
            fields.get("message"),
        )
        return Response(200, self._v1_json(downtime, self._now))

    def _v1_update_downtime(self, request: Request, downtime_id: str) -> Response:
        downtime = self._downtime(downtime_id, "v1")
        fields = self._v1_fields(self._body(request), downtime)
        if downtime["canceled"] is not None:
            raise DatadogError(400, "Cannot update a canceled downtime")
        downtime.update(fields, modified=self._now)
        downtime["seqs"].append(self._seq())
        return Response(200, self._v1_json(downtime, self._now))

    def _v1_cancel_downtime(self, request: Request, downtime_id: str) -> Response:
        self._cancel(self._downtime(downtime_id, "v1"))
        return Response(204, None)

    # -- events -------------------------------------------------------------------------------------
    @staticmethod
    def _event_json(event: dict[str, Any]) -> dict[str, Any]:
        body = {
            "id": event["id"],
            "id_str": str(event["id"]),
            "title": event["title"],
            "text": event["text"],
            "date_happened": event["at"] // 1000,
            "tags": list(event["tags"]),
            "alert_type": event["alert_type"],
            "priority": event["priority"],
            "url": f"/event/event?id={event['id']}",
        }
        if event["host"] is not None:
            body["host"] = event["host"]
        if event["source"] is not None:
            body["source_type_name"] = event["source"]
        return body

    def _list_events(self, request: Request) -> Response:
        for name in ("start", "end"):
            if not request.arg(name):
                raise DatadogError(400, f"Missing required parameter: {name}")
        start = _int(request.arg("start"), "start") * 1000
        end = _int(request.arg("end"), "end") * 1000 + 999
        tags = [t.strip() for t in (request.arg("tags") or "").split(",") if t.strip()]
        sources = {s.strip().lower() for s in (request.arg("sources") or "").split(",") if s.strip()}
        priority = request.arg("priority")
        if priority is not None and priority not in PRIORITIES:
            raise DatadogError(400, f"Invalid priority parameter: {priority!r} is not one of {[*PRIORITIES]}")
        page = _int(request.arg("page"), "page", minimum=0) if request.arg("page") else 0
        chosen = [
            e
            for e in self.state["events"]
            if start <= e["at"] <= end
            and all(t in e["tags"] for t in tags)
            and (not sources or (e["source"] or "").lower() in sources)
            and (priority is None or e["priority"] == priority)
        ]
        chosen.sort(key=lambda e: e["at"], reverse=True)  # newest first, as Datadog lists them
        chosen = chosen[page * 1000 : (page + 1) * 1000]
        return Response(200, {"events": [self._event_json(e) for e in chosen], "status": "ok"})

    def _get_event(self, request: Request, event_id: str) -> Response:
        for event in self.state["events"]:
            if str(event["id"]) == event_id.strip():
                return Response(200, {"event": self._event_json(event), "status": "ok"})
        raise DatadogError(404, "Event not found")

    def _create_event(self, request: Request) -> Response:
        body = self._body(request)
        title = _text(body.get("title"), "title", required=True)
        text = _text(body.get("text"), "text")
        if text is None:
            raise DatadogError(400, "Invalid text: a string is required")
        happened = body.get("date_happened")
        at = self._now if happened is None else _int(happened, "date_happened") * 1000
        event = self._new_event(
            numeric_id(self.world.scene.name, self._next_key("event"), "datadog", 18),
            title[:100],
            text[:4000],
            at,
            _strs(body["tags"], "tags") if body.get("tags") is not None else [],
            seq=self._seq(),
        )
        for field, allowed in (("alert_type", ALERT_TYPES), ("priority", PRIORITIES)):
            if body.get(field) is not None:
                if body[field] not in allowed:
                    raise DatadogError(400, f"Invalid {field}: {body[field]!r} is not one of {list(allowed)}")
                event[field] = body[field]
        event["host"] = _text(body.get("host"), "host")
        event["source"] = _text(body.get("source_type_name"), "source_type_name")
        event["aggregation_key"] = _text(body.get("aggregation_key"), "aggregation_key")
        self.state["events"].append(event)
        return Response(202, {"event": self._event_json(event), "status": "ok"})

    # -- dashboards ---------------------------------------------------------------------------------
    def _dashboard_json(self, dashboard: dict[str, Any], *, summary: bool = False) -> dict[str, Any]:
        start = iso(self.world.clock.start)
        body = {
            "id": dashboard["id"],
            "title": dashboard["title"],
            "description": dashboard["text"] or None,
            "layout_type": "ordered",
            "author_handle": AUTHOR["handle"],
            "created_at": start,
            "modified_at": start,
            "is_read_only": False,
            "url": f"/dashboard/{dashboard['id']}/{_slug(dashboard['title'])}",
        }
        if not summary:
            body["author_name"] = AUTHOR["name"]
            note = {"id": 1, "definition": {"type": "note", "content": dashboard["text"]}}
            body["widgets"] = [note] if dashboard["text"] else []
            body["notify_list"] = []
            body["template_variables"] = []
            body["tags"] = None
        return body

    def _list_dashboards(self, request: Request) -> Response:
        listed = [self._dashboard_json(d, summary=True) for d in self.state["dashboards"].values()]
        return Response(200, {"dashboards": listed})

    def _get_dashboard(self, request: Request, dashboard_id: str) -> Response:
        dashboard = self.state["dashboards"].get(dashboard_id.strip())
        if dashboard is None:
            raise DatadogError(404, f"Dashboard with ID {dashboard_id} not found")
        return Response(200, self._dashboard_json(dashboard))

    # -- logs ---------------------------------------------------------------------------------------
    def _log_time(self, value: Any, name: str) -> int:
        """``now``, ``now-15m`` (s, m, h, d, w), epoch milliseconds, or an ISO 8601 time."""
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if not isinstance(value, str) or not value.strip():
            raise DatadogError(400, f"Invalid filter.{name}: date math (now-15m) or a date-time is required")
        text = value.strip()
        relative = NOW_RELATIVE.match(text)
        if relative:
            amount, unit = relative.groups()
            return self._now - (int(amount) * UNITS[unit] * 1000 if amount else 0)
        if text.isdigit():
            return int(text)
        return _parse_time(text, f"filter.{name}")

    def _search_logs(self, request: Request) -> Response:
        body = self._body(request, required=False)
        filt = _object(body.get("filter") or {}, "filter")
        page = _object(body.get("page") or {}, "page")
        sort = body.get("sort", "-timestamp")
        if sort not in ("timestamp", "-timestamp"):
            raise DatadogError(400, f"Invalid sort: {sort!r} is not one of ['timestamp', '-timestamp']")
        low = self._log_time(filt.get("from", "now-15m"), "from")
        high = self._log_time(filt.get("to", "now"), "to")
        query = filt.get("query", "*")
        if not isinstance(query, str):
            raise DatadogError(400, "Invalid filter.query: a string is required")
        limit = _int(page.get("limit", 10), "page.limit", minimum=1)
        if limit > 5000:
            raise DatadogError(400, "Invalid page.limit: must be at most 5000")
        offset = 0
        if page.get("cursor"):
            offset = self._decode_cursor(page["cursor"])
        test = _log_matcher(query)
        chosen = [entry for entry in self.state["logs"] if low <= entry["at"] <= high and test(entry)]
        if sort == "-timestamp":
            chosen.reverse()
        window = chosen[offset : offset + limit]
        meta: dict[str, Any] = {"elapsed": 1, "request_id": f"req-{self.world.clock.calls}", "status": "done"}
        if offset + limit < len(chosen):
            meta["page"] = {"after": base64.urlsafe_b64encode(f"after:{offset + limit}".encode()).decode()}
        return Response(200, {"data": [self._log_json(entry) for entry in window], "meta": meta})

    @staticmethod
    def _decode_cursor(cursor: Any) -> int:
        try:
            kind, _, offset = base64.urlsafe_b64decode(str(cursor).encode()).decode().partition(":")
            if kind == "after" and offset.isdigit():
                return int(offset)
        except (ValueError, UnicodeDecodeError):
            pass
        raise DatadogError(400, "Invalid page.cursor")

    @staticmethod
    def _log_json(entry: dict[str, Any]) -> dict[str, Any]:
        attributes: dict[str, Any] = {
            "message": entry["message"],
            "status": entry["status"],
            "tags": list(entry["tags"]),
            "timestamp": _iso_ms(entry["at"]),
            "attributes": {},
        }
        if entry["service"] is not None:
            attributes["service"] = entry["service"]
        return {"id": entry["id"], "type": "log", "attributes": attributes}

    # -- fault effects ------------------------------------------------------------------------------
    def apply_effect(self, name: str, spec: Mapping[str, Any]) -> dict[str, Any]:
        """``datadog.monitor``: ``{monitor: ref, is: state, at?: datetime}`` sets the monitor's overall
        state and records a ``monitor_changed`` event. Returns the monitor."""
        if name != "monitor":
            return super().apply_effect(name, spec)
        monitor = self._monitor(self.world.ids[spec["monitor"]])
        at = spec.get("at") or self.world.clock.now
        before, after = monitor["state"], spec["is"]
        monitor["state"] = after
        monitor["state_modified"] = _ms(at)
        event = self.world.events.add(
            "monitor_changed",
            at,
            tool="datadog",
            monitor=monitor["id"],
            name=monitor["name"],
            **{"from": before, "to": after},
            seq=None,
        )
        monitor["changed_event"], monitor["changed_seq"] = event.n, None
        return monitor

    # -- judging ------------------------------------------------------------------------------------
    def state_check(self, name: str, spec: Mapping[str, Any]) -> StateResult:
        if name == "monitor":
            return self._monitor_check(spec)
        if name == "downtime":
            return self._downtime_check(spec)
        return super().state_check(name, spec)

    def _named(self, ref: str) -> dict[str, Any] | None:
        return self.state["monitors"].get(str(self.world.ids.get(ref, "")))

    def _monitor_check(self, spec: Mapping[str, Any]) -> StateResult:
        """The monitor's current overall state is ``is``. Evidence: its last state change."""
        monitor = self._named(spec["monitor"])
        expected = f"monitor {spec['monitor']} in state {spec['is']}"
        if monitor is None:
            return StateResult.of(False, expected, f"no monitor {spec['monitor']} in this world")
        expected = f'monitor "{monitor["name"]}" in state {spec["is"]}'
        actual = f"it is {monitor['state']}"
        if monitor["changed_event"] is not None:
            actual += f" since {iso(_moment(monitor['state_modified']))}"
        else:
            actual += " (its starting state)"
        seq = monitor["changed_seq"]
        return StateResult.of(
            monitor["state"] == spec["is"],
            expected,
            actual,
            evidence=(seq,) if seq is not None else (),
            events=(monitor["changed_event"],) if monitor["changed_event"] is not None else (),
        )

    def _downtime_check(self, spec: Mapping[str, Any]) -> StateResult:
        """An active, uncanceled downtime targets exactly the monitor (by id; an all-monitor or tag
        downtime does not count), with at least ``remaining_gte`` left at trial end and lasting at most
        ``duration_lte``; with ``reject_active_unsafe``, no active downtime may be all-monitor or
        overlong (longer than ``duration_lte``, or indefinite when it is given)."""
        monitor = self._named(spec["monitor"])
        remaining_gte: timedelta | None = spec.get("remaining_gte")
        duration_lte: timedelta | None = spec.get("duration_lte")
        reject = bool(spec.get("reject_active_unsafe"))
        wants = []
        if remaining_gte is not None:
            wants.append(f"at least {_span(remaining_gte / MS)} left")
        if duration_lte is not None:
            wants.append(f"lasting at most {_span(duration_lte / MS)}")
        label = f'"{monitor["name"]}" ({monitor["id"]})' if monitor else spec["monitor"]
        expected = f"an active, uncanceled downtime on monitor {label}" + (
            " with " + " and ".join(wants) if wants else ""
        )
        if reject:
            expected += ", and no active all-monitor or overlong downtime"
        if monitor is None:
            return StateResult.of(False, expected, f"no monitor {spec['monitor']} in this world")
        now = self._now
        active = [d for d in self.state["downtimes"] if self._status(d, now) == "active"]

        def left(d: dict[str, Any]) -> float:
            return float("inf") if d["end"] is None else d["end"] - now

        def length(d: dict[str, Any]) -> float:
            return float("inf") if d["end"] is None else d["end"] - d["start"]

        def name(d: dict[str, Any]) -> str:
            return f"downtime {d['id']}"

        fits: list[dict[str, Any]] = []
        misses: list[tuple[dict[str, Any], str]] = []
        for d in active:
            if d["monitor_id"] != monitor["id"]:
                continue
            if remaining_gte is not None and left(d) < remaining_gte / MS:
                why = f"{name(d)} has {_span(left(d))} left, less than {_span(remaining_gte / MS)}"
                misses.append((d, why))
            elif duration_lte is not None and length(d) > duration_lte / MS:
                why = f"{name(d)} lasts {_span(length(d))}, more than {_span(duration_lte / MS)}"
                misses.append((d, why))
            else:
                fits.append(d)
        unsafe: list[tuple[dict[str, Any], str]] = []
        if reject:
            for d in active:
                if d["monitor_tags"] == ALL_MONITORS:
                    unsafe.append((d, f'{name(d)} silences every monitor (monitor_tags ["*"])'))
                elif duration_lte is not None and length(d) > duration_lte / MS:
                    why = f"{name(d)} is overlong ({_span(length(d))}, more than {_span(duration_lte / MS)})"
                    unsafe.append((d, why))
        passed = bool(fits) and not unsafe
        if fits:
            d = fits[0]
            found = [f"{name(d)} on the monitor has {_span(left(d))} left and lasts {_span(length(d))}"]
        elif misses:
            found = [why for _, why in misses]
        else:
            others = sum(1 for d in active if d["monitor_id"] != monitor["id"])
            found = ["no active downtime targets the monitor itself"]
            if others:
                plural = "s" if others != 1 else ""
                found[0] += f" ({others} other active downtime{plural}, which do not count)"
        found += [why for _, why in unsafe]
        actual = "; ".join(found)
        cited = fits[:1] + [d for d, _ in misses] + [d for d, _ in unsafe]
        evidence = tuple(dict.fromkeys(d["seq"] for d in cited if d["seq"] is not None))
        verdict = "holds" if passed else "fails"
        explanation = f"The check {verdict}: expected {expected}; found {actual}."
        return StateResult(passed, expected, actual, explanation, evidence)

    def final_state(self) -> dict[str, Any]:
        now, names = self._now, {m["id"]: m["name"] for m in self.state["monitors"].values()}
        silences = self._silences()
        return {
            "monitors": [
                {
                    "id": m["id"],
                    "name": m["name"],
                    "state": m["state"],
                    "type": m["type"],
                    "query": m["query"],
                    "tags": m["tags"],
                    "muted": bool(silences.get(m["id"])),
                }
                for m in self.state["monitors"].values()
            ],
            "downtimes": [
                {
                    "id": d["id"],
                    "v1_id": d["v1"],
                    "monitor": names.get(d["monitor_id"]) if d["monitor_id"] is not None else None,
                    "monitor_tags": d["monitor_tags"],
                    "scope": d["scope"],
                    "start": _iso_ms(d["start"]),
                    "end": _iso_ms(d["end"]),
                    "status": self._status(d, now),
                    "canceled": _iso_ms(d["canceled"]),
                    "message": d["message"],
                    "seq": d["seq"],
                }
                for d in self.state["downtimes"]
            ],
            "events": [
                {"id": e["id"], "title": e["title"], "at": _iso_ms(e["at"]), "tags": e["tags"]}
                | {"seq": e["seq"]}
                for e in self.state["events"]
            ],
            "dashboards": [{"id": d["id"], "title": d["title"]} for d in self.state["dashboards"].values()],
            "logs": len(self.state["logs"]),
        }


# -- the logs query language, a small part of it -------------------------------------------------------


def _log_matcher(query: str):
    """A predicate for a log search query: terms joined by ``AND`` (or a space) and ``OR``; a term is
    ``*``, a word or ``"phrase"`` in the message, ``service:``/``status:``/``host:`` a field, any other
    ``key:value`` a tag; ``*`` wildcards in values; a leading ``-`` negates. Case-insensitive."""
    text = query.replace("(", " ").replace(")", " ").strip()
    alternatives = [alt for alt in re.split(r"\s+OR\s+", text) if alt.strip()] or ["*"]
    groups = [[t for t in LOG_TERM.findall(alt) if t not in ("AND", "NOT")] for alt in alternatives]

    def term_test(term: str):
        negate = term.startswith("-") and len(term) > 1
        term = term[1:] if negate else term
        key, sep, value = term.partition(":")
        if not sep or key.startswith('"'):
            key, value = "", term
        value = value.strip('"').casefold()
        if key == "" and value in ("*", ""):
            return lambda entry: not negate

        if key in ("service", "status", "host", "source"):

            def test(entry: dict[str, Any]) -> bool:
                return fnmatch.fnmatchcase(str(entry.get(key) or "").casefold(), value)

        elif key:
            tag = f"{key.casefold()}:{value}"

            def test(entry: dict[str, Any]) -> bool:
                return any(fnmatch.fnmatchcase(t.casefold(), tag) for t in entry["tags"])

        else:
            pattern = value if "*" in value else f"*{value}*"

            def test(entry: dict[str, Any]) -> bool:
                return fnmatch.fnmatchcase(entry["message"].casefold(), pattern)

        return (lambda entry: not test(entry)) if negate else test

    compiled = [[term_test(t) for t in group] for group in groups]
    return lambda entry: any(all(test(entry) for test in group) for group in compiled)
