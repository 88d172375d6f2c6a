"""Okta: the users the agent manages (never the agent itself); the ``okta.user`` state check. The
simulator (the Users API the official client calls, and the check) is
:class:`~worlds.engine.tools._okta_api.OktaSimulator`, in its own module for length.

A seed user's ``status`` defaults to ``ACTIVE``; ``password`` (whether the user has set one, which decides
whether activation leads to ``ACTIVE`` or ``PROVISIONED``) defaults to true except for ``STAGED`` and
``PROVISIONED`` users."""

from __future__ import annotations

from typing import Any

from ..schema import Field, RecordKind, StateCheck, Tool, Validator, register
from ._okta_api import STATUSES, OktaSimulator

USER = {
    "login": Field("str", required=True, nonempty=True),
    "email": Field("str"),
    "first_name": Field("str"),
    "last_name": Field("str"),
    "status": Field("choice", choices=STATUSES),
    "password": Field("bool"),
}


def _user_check(c: dict[str, Any], path: str, v: Validator) -> None:
    user = c.get("user")
    if isinstance(user, str) and user.startswith("$"):  # a ref, else a login
        c["user"] = v.ref(user, f"{path}.user", ("okta.user",))
    if len({"status", "status_in", "exists"} & set(c)) != 1:
        v.add(path, "give exactly one of status, status_in or exists: false")
    if c.get("exists") is True:
        v.add(f"{path}.exists", "only exists: false is a check; use status or status_in")
    bad = [s for s in c.get("status_in") or [] if s not in STATUSES]
    if bad:
        v.add(f"{path}.status_in", f"unknown status {bad[0]!r}; one of {', '.join(STATUSES)}")


CHECKS = {
    "user": StateCheck(
        {
            "user": Field("str", required=True),
            "status": Field("choice", choices=STATUSES),
            "status_in": Field("strs", nonempty=True),
            "exists": Field("bool"),
        },
        scalar="user",
        cleaner=_user_check,
    )
}

TOOL = register(
    Tool(
        name="okta",
        records=(RecordKind("user", "users", USER),),
        state_checks=CHECKS,
        simulator=OktaSimulator,
    )
)
