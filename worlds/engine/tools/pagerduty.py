"""PagerDuty: users, escalation policies, services, schedules and incidents; the ``pagerduty.incident``
state check and fault effect. The simulator (the REST API v2 the official clients call, the check and
the effect) is :class:`~worlds.engine.tools._pagerduty_api.PagerDutySimulator`, in its own module for
length."""

from __future__ import annotations

from typing import Any

from ..problems import join_path
from ..schema import Field, RecordKind, StateCheck, Tool, Validator, register
from ._pagerduty_api import PagerDutySimulator

STATUSES = ("triggered", "acknowledged", "resolved")
USER = {
    "name": Field("str", required=True, nonempty=True),
    "email": Field("str", required=True),
    "bot": Field("bool"),
    "role": Field("str"),
}
POLICY = {"name": Field("str", required=True, nonempty=True), "rules": Field("any")}
SERVICE = {
    "name": Field("str", required=True, nonempty=True),
    "description": Field("str"),
    "escalation_policy": Field("ref", required=True, kinds=("pagerduty.escalation_policy",)),
}
SCHEDULE = {
    "name": Field("str", required=True, nonempty=True),
    "users": Field("refs", kinds=("pagerduty.user",)),
}
INCIDENT = {
    "service": Field("ref", required=True, kinds=("pagerduty.service",)),
    "title": Field("str", required=True),
    "status": Field("choice", choices=STATUSES),
    "urgency": Field("choice", choices=("high", "low")),
    "created": Field("signed_duration"),
    "assigned_to": Field("refs", kinds=("pagerduty.user",)),
}


def _rules(record: dict[str, Any], path: str, v: Validator, raw: dict[str, Any]) -> None:
    """``rules: [[$pd_mike], [$schedule]]``: each rule a list of users or schedules to notify."""
    rules = raw.get("rules")
    if rules is None:
        return
    if not isinstance(rules, list) or not all(isinstance(r, list) and r for r in rules):
        v.add(f"{path}.rules", "must be a list of rules, each a non-empty list of user or schedule refs")
        return
    record["rules"] = [
        [
            v.ref(t, join_path(join_path(f"{path}.rules", i), j), ("pagerduty.user", "pagerduty.schedule"))
            for j, t in enumerate(rule)
        ]
        for i, rule in enumerate(rules)
    ]


def _incident_check(c: dict[str, Any], path: str, v: Validator) -> None:
    if ("ref" in c) == ("service" in c):
        v.add(path, "select the incident with exactly one of ref or service (with first: true)")
    elif "service" in c and c.get("first") is not True:
        v.add(path, "a service selector needs first: true")
    if not {"status", "assigned_to", "acknowledged_within", "resolved_within"} & set(c):
        v.add(path, "check at least one of status, assigned_to, acknowledged_within, resolved_within")


CHECKS = {
    "incident": StateCheck(
        {
            "ref": Field("ref", kinds=("pagerduty.incident",)),
            "service": Field("ref", kinds=("pagerduty.service",)),
            "first": Field("bool"),
            "status": Field("choice", choices=STATUSES),
            "assigned_to": Field("refs", kinds=("pagerduty.user",)),
            "acknowledged_within": Field("duration"),
            "resolved_within": Field("duration"),
        },
        scalar="ref",
        cleaner=_incident_check,
    )
}

TOOL = register(
    Tool(
        name="pagerduty",
        records=(
            RecordKind("user", "users", USER),
            RecordKind("escalation_policy", "escalation_policies", POLICY, cleaner=_rules),
            RecordKind("service", "services", SERVICE),
            RecordKind("schedule", "schedules", SCHEDULE),
            RecordKind("incident", "incidents", INCIDENT),
        ),
        state_checks=CHECKS,
        has_bot=True,
        effects={
            "incident": {
                "service": Field("ref", required=True, kinds=("pagerduty.service",)),
                "title": Field("str", required=True),
                "urgency": Field("choice", choices=("high", "low")),
            }
        },
        simulator=PagerDutySimulator,
    )
)
