"""PagerDuty's REST API v2 as the official clients call it (``pagerduty.RestApiV2Client``, ``pdpyras``):
the simulator behind :mod:`worlds.engine.tools.pagerduty`, kept apart only for length.

Wire format: ``Authorization: Token token=…``; JSON bodies wrapped in the entity's name
(``{"incident": {...}}``); classic pagination (``limit``, ``offset``, ``more``, ``total`` — null unless
``total=true``); errors as ``{"error": {"message", "code", "errors"?}}`` — 401 code 2006, 404 code
2100, invalid input 400 code 2001, a write without a user's email in ``From`` 400 code 2016.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from ..clock import iso, parse_iso
from ..credentials import matches
from ..durations import format_duration
from ..http import Request, Response
from ..ids import pagerduty_id
from ..results import StateResult
from ..simulator import BuildContext, Simulator

__all__ = ["PagerDutyError", "PagerDutySimulator"]

STATUSES = ("triggered", "acknowledged", "resolved")
URGENCIES = ("high", "low")
PAGE_DEFAULT, PAGE_MAX = 25, 100
FROM_MISSING = 'You must specify a user\'s email address in the "From" header to perform this action'
CHANNEL = {"summary": "The PagerDuty website or APIs"}
FAR = "9999-12-31T00:00:00Z"
STORED_AS = {"user": "users", "service": "services", "escalation_policy": "policies", "schedule": "schedules"}
KINDS = {  # our record kind -> (collection path, reference type, html path)
    "user": ("users", "user_reference", "users"),
    "service": ("services", "service_reference", "service-directory"),
    "escalation_policy": ("escalation_policies", "escalation_policy_reference", "escalation_policies"),
    "schedule": ("schedules", "schedule_reference", "schedules"),
    "incident": ("incidents", "incident_reference", "incidents"),
}


class PagerDutyError(Exception):
    """A PagerDuty error answer: ``raise PagerDutyError(400, "Invalid Input Provided", 2001, [...])``."""

    def __init__(self, status: int, message: str, code: int, errors: list[str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.code, self.errors = status, message, code, errors

    def response(self, *, coverage_gap: bool = False) -> Response:
        error: dict[str, Any] = {"message": self.message, "code": self.code}
        if self.errors is not None:
            error["errors"] = self.errors
        return Response(self.status, {"error": error}, coverage_gap=coverage_gap)


def _invalid(*errors: str) -> PagerDutyError:
    return PagerDutyError(400, "Invalid Input Provided", 2001, list(errors))


NOT_FOUND = PagerDutyError(404, "Not Found", 2100)


def _values(request: Request, name: str) -> list[str]:
    """A set filter: ``name[]`` repeated (or ``name`` as pdpyras may send it), comma lists split."""
    out: list[str] = []
    for raw in (*request.query.get(f"{name}[]", ()), *request.query.get(name, ())):
        out.extend(v.strip() for v in raw.split(",") if v.strip())
    return out


def _flag(value: str | None) -> bool:
    return (value or "").strip().lower() == "true"


def _when(text: str) -> datetime:
    return parse_iso(text)


class PagerDutySimulator(Simulator):
    """A PagerDuty account as the agent's REST API token sees it.

    State (plain JSON): ``sub`` (the account's subdomain, for ``html_url``); ``users``,
    ``policies``, ``services``, ``schedules`` by id in scene order; ``emails`` (lower-case email →
    user id, for ``From``); ``incidents`` by id in creation order, each with its number, times (ISO),
    assignments ``[[user id, at]]``, acknowledgements, ``first_ack``/``first_resolve`` (the first real
    change of status during the trial), ``held`` (the assignees just before the latest resolution),
    ``changes`` (each status change with its time, seq and origin), ``seqs`` and ``events`` (the agent
    calls and ``incident_changed`` events behind it) and its notes; ``counter`` for new ids and
    ``next_number`` for incident numbers.
    """

    tool = "pagerduty"
    routes = (
        ("GET", "/incidents", "_list_incidents"),
        ("POST", "/incidents", "_create_incident"),
        ("PUT", "/incidents", "_update_incidents"),
        ("GET", "/incidents/{id}", "_get_incident"),
        ("PUT", "/incidents/{id}", "_update_incident"),
        ("GET", "/incidents/{id}/notes", "_list_notes"),
        ("POST", "/incidents/{id}/notes", "_create_note"),
        ("GET", "/services", "_list_services"),
        ("GET", "/services/{id}", "_get_service"),
        ("GET", "/users", "_list_users"),
        ("GET", "/users/{id}", "_get_user"),
        ("GET", "/escalation_policies", "_list_policies"),
        ("GET", "/escalation_policies/{id}", "_get_policy"),
        ("GET", "/schedules", "_list_schedules"),
        ("GET", "/schedules/{id}", "_get_schedule"),
        ("GET", "/oncalls", "_list_oncalls"),
    )

    # -- building -----------------------------------------------------------------------------------
    @classmethod
    def build(cls, ctx: BuildContext) -> dict[str, Any]:
        scene, world = ctx.scene.name, ctx.world
        start = ctx.scene.start
        state: dict[str, Any] = {
            "sub": scene,
            "users": {},
            "emails": {},
            "policies": {},
            "services": {},
            "schedules": {},
            "incidents": {},
            "counter": 0,
            "next_number": 1,
        }
        ids = world.ids
        records = ctx.records
        for kind in ("users", "escalation_policies", "services", "schedules"):
            for ref in records.get(kind, {}):
                ids[ref] = pagerduty_id(scene, ref)

        def named(ref: str, f: Mapping[str, Any]) -> dict[str, Any]:
            """What every seeded user, schedule, policy and service starts with."""
            return {"id": ids[ref], "ref": ref, "name": f["name"]}

        for ref, record in records.get("users", {}).items():
            f = record.fields
            state["users"][ids[ref]] = {
                **named(ref, f),
                "email": f["email"],
                "bot": bool(f.get("bot")),
                "role": f.get("role") or "user",
            }
            state["emails"].setdefault(f["email"].strip().lower(), ids[ref])
        for ref, record in records.get("schedules", {}).items():
            f = record.fields
            state["schedules"][ids[ref]] = {**named(ref, f), "users": [ids[u] for u in f.get("users") or ()]}
        for ref, record in records.get("escalation_policies", {}).items():
            f = record.fields
            schedules = records.get("schedules", {})
            rules = [
                [["schedule" if target in schedules else "user", ids[target]] for target in rule]
                for rule in f.get("rules") or ()
            ]
            state["policies"][ids[ref]] = {**named(ref, f), "rules": rules}
        for ref, record in records.get("services", {}).items():
            f = record.fields
            state["services"][ids[ref]] = {
                **named(ref, f),
                "description": f.get("description") or "",
                "policy": ids[f["escalation_policy"]],
            }
        sim = cls(world, state)
        seeds = list(records.get("incidents", {}).values())
        seeds.sort(key=lambda r: r.fields.get("created") or timedelta())  # numbers follow creation
        for record in seeds:
            f = record.fields
            created = iso(start + (f.get("created") or timedelta()))
            iid = pagerduty_id(scene, record.ref)
            ids[record.ref] = iid
            service = ids[f["service"]]
            status = f.get("status") or "triggered"
            if f.get("assigned_to") is not None:
                assignees = [ids[u] for u in f["assigned_to"]]
                via = "direct_assignment"
            else:
                assignees = sim._policy_users(state["services"][service]["policy"])
                via = "escalation_policy"
            incident = sim._new_incident(
                iid, record.ref, service, f["title"], f.get("urgency") or "high", created, via=via
            )
            incident["seed"] = True
            incident["status"] = status
            if status == "resolved":
                incident["held"] = assignees
                incident["resolved_at"] = created
            else:
                incident["assigned"] = [[u, created] for u in assignees]
            if status == "acknowledged" and assignees:
                incident["acks"] = [[assignees[0], created]]
                incident["changed_by"] = ["user", assignees[0]]
            state["incidents"][iid] = incident
        return state

    def _new_incident(
        self, iid: str, ref: str | None, service: str, title: str, urgency: str, created: str, *, via: str
    ) -> dict[str, Any]:
        number = self.state["next_number"]
        self.state["next_number"] = number + 1
        return {
            "id": iid,
            "ref": ref,
            "number": number,
            "title": title,
            "service": service,
            "policy": self.state["services"][service]["policy"],
            "status": "triggered",
            "urgency": urgency,
            "created_at": created,
            "updated_at": created,
            "key": None,
            "details": None,
            "via": via,
            "assigned": [],
            "acks": [],
            "changed_at": created,
            "changed_by": ["service", service],
            "resolved_at": None,
            "first_ack": None,
            "first_resolve": None,
            "held": None,
            "changes": [],
            "seqs": [],
            "events": [],
            "notes": [],
            "seed": False,
        }

    def _next_id(self, what: str) -> str:
        self.state["counter"] += 1
        return pagerduty_id(self.world.scene.name, f"new {what} {self.state['counter']}")

    def _policy_users(self, policy_id: str | None, level: int = 1) -> list[str]:
        """The users a policy's rule ``level`` (from 1) notifies: its users, and for each schedule the
        user on call (the schedule's first)."""
        policy = self.state["policies"].get(policy_id or "")
        if policy is None or not 1 <= level <= len(policy["rules"]):
            return []
        out: list[str] = []
        for kind, target in policy["rules"][level - 1]:
            if kind == "schedule":
                users = self.state["schedules"].get(target, {}).get("users") or []
                target = users[0] if users else None
            if target and target not in out:
                out.append(target)
        return out

    # -- answering ----------------------------------------------------------------------------------
    def call(self, request: Request) -> Response:
        try:
            return super().call(request)
        except PagerDutyError as exc:
            return exc.response()

    def authenticate(self, request: Request) -> Response | None:
        header = (request.header("authorization") or "").strip()
        scheme, _, rest = header.partition(" ")
        rest = rest.strip()
        token = rest[6:].strip() if scheme.lower() == "token" and rest.startswith("token=") else None
        if not matches(token, self.credential.get("token", "")):
            return PagerDutyError(401, "Authentication failed", 2006).response()
        return None

    def gap(self, request: Request) -> Response:
        return NOT_FOUND.response(coverage_gap=True)

    def bad_body(self, request: Request, message: str) -> Response:
        return _invalid(message).response()

    def _root(self, request: Request) -> str:
        host = request.header("x-forwarded-host") or request.header("host") or "127.0.0.1"
        proto = request.header("x-forwarded-proto") or "http"
        return f"{proto}://{host}/worlds/{self.world.id}/pagerduty"

    def _requester(self, request: Request) -> str:
        """The user a write acts as: the ``From`` header's email, which must be a user's of the account."""
        email = (request.header("from") or "").strip().lower()
        uid = self.state["emails"].get(email) if email else None
        if uid is None:
            raise PagerDutyError(400, FROM_MISSING, 2016)
        return uid

    @staticmethod
    def _body(request: Request, wrapper: str) -> Any:
        body = request.json()
        if not isinstance(body, dict) or wrapper not in body:
            raise _invalid(f"{wrapper.capitalize()} is required.")
        return body[wrapper]

    @staticmethod
    def _page(request: Request, items: list[Any]) -> tuple[list[Any], dict[str, Any]]:
        """One classic page: the slice and its ``limit``, ``offset``, ``more``, ``total`` fields."""
        try:
            limit = int(request.arg("limit") or PAGE_DEFAULT)
            offset = int(request.arg("offset") or 0)
        except ValueError:
            raise _invalid("Limit and offset must be integers.") from None
        if limit < 1 or offset < 0:
            raise _invalid("Limit must be positive and offset must not be negative.")
        limit = min(limit, PAGE_MAX)
        chunk = items[offset : offset + limit]
        fields = {
            "limit": limit,
            "offset": offset,
            "more": offset + limit < len(items),
            "total": len(items) if _flag(request.arg("total")) else None,
        }
        return chunk, fields

    # -- wire shapes --------------------------------------------------------------------------------
    def _reference(self, root: str, kind: str, rid: str, summary: str) -> dict[str, Any]:
        path, rtype, html = KINDS[kind]
        return {
            "id": rid,
            "type": rtype,
            "summary": summary,
            "self": f"{root}/{path}/{rid}",
            "html_url": f"https://{self.state['sub']}.pagerduty.com/{html}/{rid}",
        }

    def _ref(self, root: str, kind: str, rid: str) -> dict[str, Any]:
        """A reference to a user, service, escalation policy or schedule, summarised by its name (by its
        id when the record is gone)."""
        record = self.state[STORED_AS[kind]].get(rid)
        return self._reference(root, kind, rid, record["name"] if record else rid)

    def _full(self, root: str, kind: str, rid: str, summary: str) -> dict[str, Any]:
        out = self._reference(root, kind, rid, summary)
        out["type"] = kind
        return out

    def _incident_json(self, root: str, incident: dict[str, Any]) -> dict[str, Any]:
        iid = incident["id"]
        out = self._full(root, "incident", iid, f"[#{incident['number']}] {incident['title']}")
        by_kind, by_id = incident["changed_by"]
        out.update(
            {
                "incident_number": incident["number"],
                "title": incident["title"],
                "description": incident["title"],
                "created_at": incident["created_at"],
                "updated_at": incident["updated_at"],
                "status": incident["status"],
                "incident_key": incident["key"],
                "service": self._ref(root, "service", incident["service"]),
                "assignments": [
                    {"at": at, "assignee": self._ref(root, "user", uid)} for uid, at in incident["assigned"]
                ],
                "assigned_via": incident["via"],
                "last_status_change_at": incident["changed_at"],
                "last_status_change_by": (
                    self._ref(root, "user", by_id) if by_kind == "user" else self._ref(root, "service", by_id)
                ),
                "resolved_at": incident["resolved_at"],
                "first_trigger_log_entry": None,
                "alert_counts": {
                    "all": 0,
                    "triggered": 0,
                    "resolved": 0,
                },
                "is_mergeable": True,
                "incident_type": {"name": "incident_default"},
                "escalation_policy": self._ref(root, "escalation_policy", incident["policy"]),
                "teams": [],
                "pending_actions": [],
                "acknowledgements": [
                    {"at": at, "acknowledger": self._ref(root, "user", uid)} for uid, at in incident["acks"]
                ],
                "urgency": incident["urgency"],
                "priority": None,
                "resolve_reason": None,
            }
        )
        if incident["details"] is not None:
            out["body"] = {"type": "incident_body", "details": incident["details"]}
        return out

    def _user_json(self, root: str, user: dict[str, Any]) -> dict[str, Any]:
        out = self._full(root, "user", user["id"], user["name"])
        out.update(
            {
                "name": user["name"],
                "email": user["email"],
                "time_zone": "Etc/UTC",
                "color": "purple",
                "role": user["role"],
                "avatar_url": "https://pd-static-assets.pagerduty.com/users/blank-avatar.png",
                "description": "",
                "invitation_sent": False,
                "job_title": "",
                "teams": [],
                "contact_methods": [],
                "notification_rules": [],
            }
        )
        return out

    def _service_json(self, root: str, service: dict[str, Any], status: str) -> dict[str, Any]:
        out = self._full(root, "service", service["id"], service["name"])
        out.update(
            {
                "name": service["name"],
                "description": service["description"],
                "auto_resolve_timeout": None,
                "acknowledgement_timeout": None,
                "created_at": iso(self.world.scene.start),
                "status": status,
                "alert_creation": "create_alerts_and_incidents",
                "escalation_policy": self._ref(root, "escalation_policy", service["policy"]),
                "integrations": [],
                "teams": [],
                "incident_urgency_rule": {"type": "constant", "urgency": "high"},
            }
        )
        return out

    def _service_statuses(self) -> dict[str, str]:
        """Each service's status: critical with a triggered incident, warning with an acknowledged one."""
        rank = {"triggered": 2, "acknowledged": 1}
        worst: dict[str, int] = {}
        for incident in self.state["incidents"].values():
            level = rank.get(incident["status"], 0)
            if level > worst.get(incident["service"], 0):
                worst[incident["service"]] = level
        return {sid: ("active", "warning", "critical")[level] for sid, level in worst.items()}

    def _policy_json(self, root: str, policy: dict[str, Any]) -> dict[str, Any]:
        out = self._full(root, "escalation_policy", policy["id"], policy["name"])
        rules = []
        for level, rule in enumerate(policy["rules"], start=1):
            targets = [
                self._ref(root, "schedule", target) if kind == "schedule" else self._ref(root, "user", target)
                for kind, target in rule
            ]
            rule_id = pagerduty_id(self.world.scene.name, f"{policy['ref']} rule {level}")
            rules.append({"id": rule_id, "escalation_delay_in_minutes": 30, "targets": targets})
        out.update(
            {
                "name": policy["name"],
                "description": "",
                "num_loops": 0,
                "on_call_handoff_notifications": "if_has_services",
                "escalation_rules": rules,
                "services": [
                    self._ref(root, "service", s["id"])
                    for s in self.state["services"].values()
                    if s["policy"] == policy["id"]
                ],
                "teams": [],
            }
        )
        return out

    def _schedule_json(self, root: str, schedule: dict[str, Any], *, detail: bool = False) -> dict[str, Any]:
        out = self._full(root, "schedule", schedule["id"], schedule["name"])
        out.update(
            {
                "name": schedule["name"],
                "time_zone": "Etc/UTC",
                "description": "",
                "users": [self._ref(root, "user", u) for u in schedule["users"]],
                "escalation_policies": [
                    self._ref(root, "escalation_policy", p["id"])
                    for p in self.state["policies"].values()
                    if ["schedule", schedule["id"]] in (target for rule in p["rules"] for target in rule)
                ],
                "teams": [],
            }
        )
        if detail:
            start, end = self._shift()
            entries = (
                [{"start": start, "end": end, "user": self._ref(root, "user", schedule["users"][0])}]
                if schedule["users"]
                else []
            )
            out["final_schedule"] = {
                "name": "Final Schedule",
                "rendered_schedule_entries": entries,
                "rendered_coverage_percentage": 100.0 if entries else 0.0,
            }
        return out

    def _shift(self) -> tuple[str, str]:
        """The on-call shift of a schedule's first user: the week from the day the trial starts."""
        start = self.world.scene.start.replace(hour=0, minute=0, second=0, microsecond=0)
        return iso(start), iso(start + timedelta(days=7))

    def _note_json(self, root: str, note: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": note["id"],
            "user": self._ref(root, "user", note["user"]),
            "channel": dict(CHANNEL),
            "content": note["content"],
            "created_at": note["at"],
        }

    # -- reading ------------------------------------------------------------------------------------
    def _found(self, collection: str, id: str) -> dict[str, Any]:
        """The record ``id`` of ``collection`` (incidents, users, services, ...); a 404 when there is none."""
        record = self.state[collection].get(id)
        if record is None:
            raise NOT_FOUND
        return record

    def _incident(self, iid: str) -> dict[str, Any]:
        return self._found("incidents", iid)

    def _listed(self, request: Request, key: str, records: list, as_json: Callable) -> Response:
        """A page of ``records`` under ``key``, each as ``as_json(root, record)``, and the paging fields."""
        page, fields = self._page(request, records)
        root = self._root(request)
        return Response(200, {key: [as_json(root, r) for r in page], **fields})

    def _list_incidents(self, request: Request) -> Response:
        statuses = _values(request, "statuses")
        if any(s not in STATUSES for s in statuses):
            raise _invalid("Statuses must be a list of triggered, acknowledged, or resolved.")
        urgencies = _values(request, "urgencies")
        if any(u not in URGENCIES for u in urgencies):
            raise _invalid("Urgencies must be a list of high or low.")
        services = set(_values(request, "service_ids"))
        users = set(_values(request, "user_ids"))
        key = request.arg("incident_key")
        since = until = None
        if request.arg("date_range") != "all":
            try:
                since = parse_iso(request.arg("since")) if request.arg("since") else None
                until = parse_iso(request.arg("until")) if request.arg("until") else None
            except ValueError:
                raise PagerDutyError(400, "Invalid 'since' or 'until' Parameter Values", 2004) from None
        found = []
        for incident in self.state["incidents"].values():
            if statuses and incident["status"] not in statuses:
                continue
            if urgencies and incident["urgency"] not in urgencies:
                continue
            if services and incident["service"] not in services:
                continue
            if users and not any(uid in users for uid, _ in incident["assigned"]):
                continue
            if key is not None and incident["key"] != key:
                continue
            if since or until:
                created = _when(incident["created_at"])
                if (since and created < since) or (until and created >= until):
                    continue
            found.append(incident)
        return self._listed(request, "incidents", self._sorted(request, found), self._incident_json)

    @staticmethod
    def _sorted(request: Request, incidents: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``sort_by``: ``incident_number`` (the default), ``created_at``, ``resolved_at`` or ``urgency``,
        each ``:asc`` (default) or ``:desc``."""
        keys = {
            "incident_number": lambda i: i["number"],
            "created_at": lambda i: (_when(i["created_at"]), i["number"]),
            "resolved_at": lambda i: (_when(i["resolved_at"] or FAR), i["number"]),  # unresolved last
            "urgency": lambda i: (URGENCIES.index(i["urgency"]), i["number"]),
        }
        sort = [s for raw in _values(request, "sort_by") for s in [raw]] or ["incident_number"]
        for spec in reversed(sort[:2]):
            field, _, direction = spec.partition(":")
            if field not in keys or direction not in ("", "asc", "desc"):
                raise _invalid(f"Sort by {spec} is not supported.")
            incidents = sorted(incidents, key=keys[field], reverse=direction == "desc")
        return incidents

    def _get_incident(self, request: Request, id: str) -> Response:
        incident = self._incident(id)
        return Response(200, {"incident": self._incident_json(self._root(request), incident)})

    def _list_notes(self, request: Request, id: str) -> Response:
        incident = self._incident(id)
        root = self._root(request)
        return Response(200, {"notes": [self._note_json(root, n) for n in incident["notes"]]})

    def _list_users(self, request: Request) -> Response:
        query = (request.arg("query") or "").casefold()
        users = [
            u
            for u in self.state["users"].values()
            if not query or query in u["name"].casefold() or query in u["email"].casefold()
        ]
        return self._listed(request, "users", users, self._user_json)

    def _get_user(self, request: Request, id: str) -> Response:
        user = self._found("users", id)
        return Response(200, {"user": self._user_json(self._root(request), user)})

    @staticmethod
    def _named(request: Request, records: Mapping[str, dict[str, Any]]) -> list[dict[str, Any]]:
        query = (request.arg("query") or "").casefold()
        return [r for r in records.values() if not query or query in r["name"].casefold()]

    def _list_services(self, request: Request) -> Response:
        statuses = self._service_statuses()

        def as_json(root: str, service: dict[str, Any]) -> dict[str, Any]:
            return self._service_json(root, service, statuses.get(service["id"], "active"))

        return self._listed(request, "services", self._named(request, self.state["services"]), as_json)

    def _get_service(self, request: Request, id: str) -> Response:
        service = self._found("services", id)
        status = self._service_statuses().get(id, "active")
        return Response(200, {"service": self._service_json(self._root(request), service, status)})

    def _list_policies(self, request: Request) -> Response:
        policies = self._named(request, self.state["policies"])
        return self._listed(request, "escalation_policies", policies, self._policy_json)

    def _get_policy(self, request: Request, id: str) -> Response:
        policy = self._found("policies", id)
        return Response(200, {"escalation_policy": self._policy_json(self._root(request), policy)})

    def _list_schedules(self, request: Request) -> Response:
        schedules = self._named(request, self.state["schedules"])
        return self._listed(request, "schedules", schedules, self._schedule_json)

    def _get_schedule(self, request: Request, id: str) -> Response:
        schedule = self._found("schedules", id)
        return Response(200, {"schedule": self._schedule_json(self._root(request), schedule, detail=True)})

    def _list_oncalls(self, request: Request) -> Response:
        """Every escalation rule target is on call at its level: a user always (no start or end), a
        schedule through its first user for the week."""
        users = set(_values(request, "user_ids"))
        policies = set(_values(request, "escalation_policy_ids"))
        schedules = set(_values(request, "schedule_ids"))
        rows: list[tuple[str, str, str | None, int]] = []
        for policy in self.state["policies"].values():
            if policies and policy["id"] not in policies:
                continue
            for level, rule in enumerate(policy["rules"], start=1):
                for kind, target in rule:
                    if kind == "schedule":
                        members = self.state["schedules"].get(target, {}).get("users") or []
                        if not members:
                            continue
                        row = (members[0], policy["id"], target, level)
                    else:
                        row = (target, policy["id"], None, level)
                    if users and row[0] not in users:
                        continue
                    if schedules and row[2] not in schedules:
                        continue
                    rows.append(row)
        page, fields = self._page(request, rows)
        root = self._root(request)
        start, end = self._shift()
        oncalls = [
            {
                "user": self._ref(root, "user", uid),
                "schedule": self._ref(root, "schedule", sch) if sch else None,
                "escalation_policy": self._ref(root, "escalation_policy", pid),
                "escalation_level": level,
                "start": start if sch else None,
                "end": end if sch else None,
            }
            for uid, pid, sch, level in page
        ]
        return Response(200, {"oncalls": oncalls, **fields})

    # -- writing ------------------------------------------------------------------------------------
    def _user_refs(self, value: Any, field: str = "assignments") -> list[str]:
        """``[{"assignee": {"id", "type": "user_reference"}}]`` → user ids (unknown ones are an error)."""
        if not isinstance(value, list) or not value:
            raise _invalid(f"{field.capitalize()} must be a non-empty list of assignees.")
        out: list[str] = []
        for item in value:
            assignee = item.get("assignee") if isinstance(item, dict) else None
            uid = assignee.get("id") if isinstance(assignee, dict) else None
            if not isinstance(uid, str) or uid not in self.state["users"]:
                why = f"Assignee {uid!r} is not a user of this account." if uid else "Assignee is required."
                raise _invalid(why)
            if uid not in out:
                out.append(uid)
        return out

    def _policy_of(self, value: Any) -> str:
        pid = value.get("id") if isinstance(value, dict) else None
        if not isinstance(pid, str) or pid not in self.state["policies"]:
            raise _invalid("Escalation policy not found.")
        return pid

    def _create_incident(self, request: Request) -> Response:
        requester = self._requester(request)
        data = self._body(request, "incident")
        if not isinstance(data, dict):
            raise _invalid("Incident must be an object.")
        errors = []
        if data.get("type") != "incident":
            errors.append("Type must be incident.")
        title = data.get("title")
        if not isinstance(title, str) or not title.strip():
            errors.append("Title cannot be empty.")
        service = data.get("service")
        sid = service.get("id") if isinstance(service, dict) else None
        if not isinstance(sid, str) or sid not in self.state["services"]:
            errors.append("Service not found." if sid else "Service is required.")
        urgency = data.get("urgency", "high")
        if urgency not in URGENCIES:
            errors.append("Urgency must be one of high or low.")
        if "assignments" in data and "escalation_policy" in data:
            errors.append("Cannot specify both assignments and an escalation policy.")
        if errors:
            raise _invalid(*errors)
        key = data.get("incident_key")
        if key is not None:
            if not isinstance(key, str):
                raise _invalid("Incident key must be a string.")
            for other in self.state["incidents"].values():
                if other["service"] == sid and other["key"] == key and other["status"] != "resolved":
                    raise _invalid("Open incident with matching dedup key already exists on this service")
        policy = self.state["services"][sid]["policy"]
        if "assignments" in data:
            assignees, via = self._user_refs(data["assignments"]), "direct_assignment"
        else:
            if "escalation_policy" in data:
                policy = self._policy_of(data["escalation_policy"])
            assignees, via = self._policy_users(policy), "escalation_policy"
        body = data.get("body")
        details = body.get("details") if isinstance(body, dict) else None
        incident = self.open_incident(
            sid, title.strip(), urgency, assignees=assignees, via=via, seq=self.world.current_seq
        )
        incident.update(policy=policy, key=key, details=details if isinstance(details, str) else None)
        incident["changed_by"] = ["user", requester]
        return Response(201, {"incident": self._incident_json(self._root(request), incident)})

    def open_incident(
        self,
        service: str,
        title: str,
        urgency: str = "high",
        *,
        assignees: list[str] | None = None,
        via: str = "escalation_policy",
        seq: int | None = None,
        at: datetime | None = None,
    ) -> dict[str, Any]:
        """A new triggered incident on ``service`` (by the agent's call ``seq``, or a fault), assigned
        to ``assignees`` or to the first rule of the service's escalation policy; records its event."""
        moment = at or self.world.clock.now
        created = iso(moment)
        iid = self._next_id("incident")
        incident = self._new_incident(iid, None, service, title, urgency, created, via=via)
        if assignees is None:
            assignees = self._policy_users(incident["policy"])
        incident["assigned"] = [[u, created] for u in assignees]
        self.state["incidents"][incident["id"]] = incident
        self._record(incident, None, "triggered", moment, seq)
        return incident

    def _record(
        self, incident: dict[str, Any], before: str | None, after: str, at: datetime, seq: int | None
    ) -> None:
        when = iso(at)
        origin = "agent" if seq is not None else "fault"
        incident["changes"].append({"at": when, "from": before, "to": after, "seq": seq, "origin": origin})
        if seq is not None and seq not in incident["seqs"]:
            incident["seqs"].append(seq)
        event = self.world.events.add(
            "incident_changed",
            at,
            tool=self.tool,
            incident=incident["id"],
            ref=incident["ref"],
            number=incident["number"],
            **{"from": before, "to": after},
            seq=seq,
        )
        incident["events"].append(event.n)

    def _check_update(self, data: Any, incident: dict[str, Any] | None) -> dict[str, Any]:
        """Validate one update (``{"type", "status"?, "assignments"?, ...}``) of ``incident`` (in a bulk
        update, the one its ``id`` names) before anything changes; returns the incident."""
        if not isinstance(data, dict):
            raise _invalid("Incident must be an object.")
        errors = []
        if data.get("type") not in ("incident", "incident_reference"):
            errors.append("Type must be incident or incident_reference.")
        if "status" in data and data["status"] not in STATUSES:
            errors.append("Status must be one of triggered, acknowledged, or resolved.")
        if "urgency" in data and data["urgency"] not in URGENCIES:
            errors.append("Urgency must be one of high or low.")
        if "title" in data and (not isinstance(data["title"], str) or not data["title"].strip()):
            errors.append("Title cannot be empty.")
        if "assignments" in data and "escalation_policy" in data:
            errors.append("Cannot specify both assignments and an escalation policy.")
        level = data.get("escalation_level")
        if "escalation_level" in data and (not isinstance(level, int) or isinstance(level, bool)):
            errors.append("Escalation level must be an integer.")
        if errors:
            raise _invalid(*errors)
        if incident is None:
            iid = data.get("id")
            if not isinstance(iid, str) or not iid:
                raise _invalid("Id is required for each incident.")
            incident = self._incident(iid)
        if "assignments" in data:
            self._user_refs(data["assignments"])
        policy = incident["policy"]
        if "escalation_policy" in data:
            policy = self._policy_of(data["escalation_policy"])
        if "escalation_level" in data:
            rules = self.state["policies"].get(policy, {}).get("rules") or []
            if not 1 <= level <= len(rules):
                raise _invalid("Escalation level is out of range for the incident's escalation policy.")
        reassigns = {"assignments", "escalation_policy", "escalation_level"} & set(data)
        ends_resolved = data.get("status", incident["status"]) == "resolved"
        if reassigns and incident["status"] == "resolved" and ends_resolved:
            raise _invalid("Cannot reassign a resolved incident.")
        return incident

    def _apply(self, incident: dict[str, Any], data: dict[str, Any], requester: str) -> None:
        """One validated update, as the requester, at the current call: title and urgency, then the
        reassignment, then the status."""
        now = self.world.clock.now
        at = iso(now)
        seq = self.world.current_seq
        touched = False
        for field in ("title", "urgency"):
            if field in data:
                incident[field] = data[field].strip() if field == "title" else data[field]
                touched = True
        assignees: list[str] | None = None
        via = "escalation_policy"
        if "assignments" in data:
            assignees, via = self._user_refs(data["assignments"]), "direct_assignment"
        elif "escalation_policy" in data:
            incident["policy"] = self._policy_of(data["escalation_policy"])
            assignees = self._policy_users(incident["policy"], int(data.get("escalation_level") or 1))
        elif "escalation_level" in data:
            assignees = self._policy_users(incident["policy"], data["escalation_level"])
        before = incident["status"]
        status = data.get("status", before)
        if before == "resolved" and status != "resolved" and assignees is None:  # reopened
            if status == "acknowledged":
                assignees, via = [requester], "direct_assignment"
            else:
                assignees = self._policy_users(incident["policy"])
        if assignees is not None:
            incident["assigned"] = [[u, at] for u in assignees]
            incident["via"] = via
            touched = True
        if status != before:
            if status == "resolved":
                incident["held"] = [uid for uid, _ in incident["assigned"]]
                incident["assigned"] = []
                incident["resolved_at"] = at
                incident["first_resolve"] = incident["first_resolve"] or at
                incident["acks"] = []
            else:
                incident["resolved_at"] = None
                if status == "acknowledged":
                    incident["acks"].append([requester, at])
                    incident["first_ack"] = incident["first_ack"] or at
                else:
                    incident["acks"] = []
            incident["status"] = status
            incident["changed_at"] = at
            incident["changed_by"] = ["user", requester]
            self._record(incident, before, status, now, seq)
            touched = True
        elif status == "acknowledged" and all(uid != requester for uid, _ in incident["acks"]):
            incident["acks"].append([requester, at])  # another responder acknowledges too
            touched = True
        if touched:
            incident["updated_at"] = at
            if seq is not None and seq not in incident["seqs"]:
                incident["seqs"].append(seq)

    def _update_incident(self, request: Request, id: str) -> Response:
        requester = self._requester(request)
        incident = self._incident(id)
        data = self._body(request, "incident")
        self._check_update(data, incident)
        self._apply(incident, data, requester)
        return Response(200, {"incident": self._incident_json(self._root(request), incident)})

    def _update_incidents(self, request: Request) -> Response:
        requester = self._requester(request)
        items = self._body(request, "incidents")
        if not isinstance(items, list) or not items:
            raise _invalid("Incidents must be a non-empty list.")
        if len(items) > 500:
            raise _invalid("At most 500 incidents can be updated at once.")
        targets = [self._check_update(item, None) for item in items]  # all valid before any change
        for incident, data in zip(targets, items, strict=True):
            self._apply(incident, data, requester)
        root = self._root(request)
        seen: dict[str, dict[str, Any]] = {i["id"]: i for i in targets}
        return Response(200, {"incidents": [self._incident_json(root, i) for i in seen.values()]})

    def _create_note(self, request: Request, id: str) -> Response:
        requester = self._requester(request)
        incident = self._incident(id)
        note = self._body(request, "note")
        content = note.get("content") if isinstance(note, dict) else None
        if not isinstance(content, str) or not content.strip():
            raise _invalid("Content cannot be empty.")
        record = {
            "id": self._next_id("note"),
            "user": requester,
            "content": content,
            "at": iso(self.world.clock.now),
            "seq": self.world.current_seq,
        }
        incident["notes"].append(record)
        return Response(200, {"note": self._note_json(self._root(request), record)})

    # -- faults -------------------------------------------------------------------------------------
    def apply_effect(self, name: str, spec: Mapping[str, Any]) -> dict[str, Any]:
        """``pagerduty.incident``: ``{service, title, urgency?, at?}`` opens a triggered incident on the
        service (created at ``at``, default now), assigned by its escalation policy. Returns it."""
        if name != "incident":
            return super().apply_effect(name, spec)
        service = self.world.ids.get(spec["service"], spec["service"])
        if service not in self.state["services"]:
            raise KeyError(f"no PagerDuty service {spec['service']!r}")
        return self.open_incident(service, spec["title"], spec.get("urgency") or "high", at=spec.get("at"))

    # -- judging ------------------------------------------------------------------------------------
    def state_check(self, name: str, spec: Mapping[str, Any]) -> StateResult:
        if name != "incident":
            return super().state_check(name, spec)
        return self._incident_check(spec)

    def _select(self, spec: Mapping[str, Any]) -> tuple[dict[str, Any] | None, str]:
        """The incident a check names, and how it was named."""
        incidents = self.state["incidents"]
        if spec.get("ref"):
            return incidents.get(self.world.ids.get(spec["ref"], "")), f"incident {spec['ref']}"
        sid = self.world.ids.get(spec.get("service") or "", "")
        label = f"the first incident of {spec.get('service')}"
        mine = [i for i in incidents.values() if i["service"] == sid]
        if not mine:
            return None, label
        return min(mine, key=lambda i: (_when(i["created_at"]), i["number"])), label

    def _incident_check(self, spec: Mapping[str, Any]) -> StateResult:
        """``pagerduty.incident``: the selected incident meets every property given. Evidence: the agent
        calls that created or changed it; events: its ``incident_changed`` events."""
        incident, label = self._select(spec)
        wanted = self._wanted(spec)
        expected = f"{label} with " + "; ".join(phrase for _, phrase, _ in wanted)
        if incident is None:
            actual = f"no incident of {spec.get('service') or spec.get('ref')}"
            return StateResult(False, expected, actual, f"Expected {expected}; found {actual}.")
        name = f'incident #{incident["number"]} "{incident["title"]}"'
        results = [(prop, phrase, *test(incident)) for prop, phrase, test in wanted]
        failed = [(prop, phrase, found) for prop, phrase, ok, found in results if not ok]
        actual = f"{name}: " + "; ".join(found for *_, found in results)
        if failed:
            details = "; ".join(f"{prop}: expected {phrase}, found {found}" for prop, phrase, found in failed)
            explanation = f"{name.capitalize()} ({label}) fails {details}."
        else:
            explanation = f"{name.capitalize()} ({label}) holds: " + "; ".join(f for *_, f in results) + "."
        return StateResult(
            not failed, expected, actual, explanation, tuple(incident["seqs"]), tuple(incident["events"])
        )

    def _wanted(self, spec: Mapping[str, Any]) -> list[tuple[str, str, Any]]:
        """(property, expected phrase, test(incident) -> (ok, found phrase)) per property checked."""
        out: list[tuple[str, str, Any]] = []
        if spec.get("status"):
            status = spec["status"]
            out.append(
                ("status", f"status {status}", lambda i: (i["status"] == status, f"status {i['status']}"))
            )
        if spec.get("assigned_to") is not None:
            refs = list(spec["assigned_to"])
            want = {self.world.ids.get(r, r) for r in refs}

            def assigned(i: dict[str, Any]) -> tuple[bool, str]:
                resolved = i["status"] == "resolved"
                held = (i["held"] or []) if resolved else [u for u, _ in i["assigned"]]
                found = f"assigned to [{', '.join(self._user_names(held))}]" if held else "assigned to nobody"
                return set(held) == want, found + (" (held before its resolution)" if resolved else "")

            out.append(("assigned_to", f"assigned to [{', '.join(refs)}]", assigned))
        for prop, field, verb in (
            ("acknowledged_within", "first_ack", "acknowledged"),
            ("resolved_within", "first_resolve", "resolved"),
        ):
            if spec.get(prop) is None:
                continue
            limit: timedelta = spec[prop]

            def within(i: dict[str, Any], field: str = field, verb: str = verb, limit: timedelta = limit):
                if i[field] is None:
                    return False, f"never {verb} during the trial"
                took = _when(i[field]) - _when(i["created_at"])
                return took <= limit, f"{verb} {format_duration(took)} after creation"

            out.append((prop, f"{verb} within {format_duration(limit)} of creation", within))
        return out

    def _user_names(self, uids: list[str]) -> list[str]:
        users = self.state["users"]
        return [users[u]["ref"] if u in users else u for u in uids]

    def final_state(self) -> dict[str, Any]:
        """Incidents in number order with readable services, people and status history; the account's
        users, services, escalation policies and schedules by ref."""
        users, services, policies = self.state["users"], self.state["services"], self.state["policies"]
        incidents = []
        for i in sorted(self.state["incidents"].values(), key=lambda i: i["number"]):
            entry: dict[str, Any] = {
                "number": i["number"],
                "id": i["id"],
                "title": i["title"],
                "service": services[i["service"]]["ref"],
                "status": i["status"],
                "urgency": i["urgency"],
                "created_at": i["created_at"],
                "assigned_to": self._user_names([u for u, _ in i["assigned"]]),
            }
            if i["ref"]:
                entry["ref"] = i["ref"]
            if i["seed"]:
                entry["seed"] = True
            if i["held"] is not None and i["status"] == "resolved":
                entry["assigned_before_resolution"] = self._user_names(i["held"])
            if i["first_ack"]:
                entry["first_acknowledged_at"] = i["first_ack"]
            if i["first_resolve"]:
                entry["first_resolved_at"] = i["first_resolve"]
            if i["changes"]:
                entry["changes"] = [dict(c) for c in i["changes"]]
            if i["notes"]:
                entry["notes"] = [
                    {"at": n["at"], "from": self._user_names([n["user"]])[0], "content": n["content"]}
                    for n in i["notes"]
                ]
            incidents.append(entry)
        return {
            "users": {
                u["ref"]: {"id": u["id"], "name": u["name"], "email": u["email"]} for u in users.values()
            },
            "services": {
                s["ref"]: {
                    "id": s["id"],
                    "name": s["name"],
                    "escalation_policy": policies[s["policy"]]["ref"],
                }
                for s in services.values()
            },
            "escalation_policies": {
                p["ref"]: {
                    "id": p["id"],
                    "name": p["name"],
                    "rules": [[self._target_ref(kind, t) for kind, t in rule] for rule in p["rules"]],
                }
                for p in policies.values()
            },
            "schedules": {
                s["ref"]: {"id": s["id"], "name": s["name"], "users": self._user_names(s["users"])}
                for s in self.state["schedules"].values()
            },
            "incidents": incidents,
        }

    def _target_ref(self, kind: str, target: str) -> str:
        if kind == "schedule":
            schedule = self.state["schedules"].get(target)
            return schedule["ref"] if schedule else target
        return self._user_names([target])[0]
