"""Datadog: monitors, dashboards, events and logs; ``datadog.monitor`` and ``datadog.downtime``; the
``datadog.monitor`` fault effect. The simulator (the HTTP API the official client calls, the checks and
the effect) is :class:`~worlds.engine.tools._datadog_api.DatadogSimulator`, in its own module for length."""

from __future__ import annotations

from ..schema import Field, RecordKind, StateCheck, Tool, register
from ._datadog_api import MONITOR_TYPES, DatadogSimulator

STATES = ("OK", "Alert", "Warn", "No Data")
MONITOR = {
    "name": Field("str", required=True, nonempty=True),
    "state": Field("choice", choices=STATES),
    "query": Field("str"),
    "type": Field("choice", choices=MONITOR_TYPES),  # the types the official client accepts
    "message": Field("str"),
    "tags": Field("strs"),
}
DASHBOARD = {"title": Field("str", required=True, nonempty=True), "text": Field("str")}
EVENT = {
    "title": Field("str", required=True, nonempty=True),
    "text": Field("str"),
    "at": Field("signed_duration"),
    "tags": Field("strs"),
}
LOG = {
    "text": Field("str", required=True),
    "at": Field("signed_duration"),
    "service": Field("str"),
    "status": Field("str"),
    "tags": Field("strs"),
}

_MON = Field("ref", required=True, kinds=("datadog.monitor",))
CHECKS = {
    "monitor": StateCheck(
        {"monitor": _MON, "is": Field("choice", required=True, choices=("OK", "Alert"))}, scalar="monitor"
    ),
    "downtime": StateCheck(
        {
            "monitor": _MON,
            "remaining_gte": Field("duration"),
            "duration_lte": Field("duration"),
            "reject_active_unsafe": Field("bool"),
        },
        scalar="monitor",
    ),
}

TOOL = register(
    Tool(
        name="datadog",
        records=(
            RecordKind("monitor", "monitors", MONITOR),
            RecordKind("dashboard", "dashboards", DASHBOARD),
            RecordKind("event", "events", EVENT),
            RecordKind("log", "logs", LOG),
        ),
        state_checks=CHECKS,
        effects={"monitor": {"monitor": _MON, "is": Field("choice", required=True, choices=STATES)}},
        simulator=DatadogSimulator,
    )
)
