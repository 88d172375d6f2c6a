"""The one permission rule: who may do what to which object.

Everything belongs to one team. A user outside that team cannot see it (pages and API answer 404: every
read goes through `visible_to(user)`). Inside the team, the user's role decides what they may do:

    operation   what it covers                                                   role needed
    read        list and show                                                    viewer
    use         act on an object without changing it: ping an agent, cancel a   member
                run, launch a test set
    create      add an object: a check, test set, test, run, monitor, task...    member
    change      edit an object (a check or test edit makes a new version)        member
    archive     archive (the API's DELETE) an object                             admin

Agents and the team itself are the admins' to set up: creating or changing them needs admin too.

Services ask `require()` (and raise PermissionDenied), the API's HasTeamRole asks `allows()` before a
body is validated, pages ask `page_flags()` for what to offer, and the admin narrows its lists with
`teams_with_role()`. `user=None` is the system (a superuser in the admin, the demo loader, workers).
"""

from __future__ import annotations

from typing import Literal

from django.db import router

from core.errors import PermissionDenied
from core.prepared import PreparedRead, concrete_attnames, instance
from teams.models import ROLE_RANK, Membership, Role, Team, TeamScopedQuerySet

Operation = Literal["read", "use", "create", "change", "archive"]
READ: Operation = "read"
USE: Operation = "use"
CREATE: Operation = "create"
CHANGE: Operation = "change"
ARCHIVE: Operation = "archive"
OPERATIONS: tuple[Operation, ...] = (READ, USE, CREATE, CHANGE, ARCHIVE)

# Models only admins create or change (by "app_label.model_name", so this floor imports none of them).
ADMIN_MANAGED = frozenset({"teams.team", "agents.agent"})


def role_needed(operation: Operation, model=None) -> Role:
    """The least role that allows `operation` on objects of `model` (a class, an instance or None)."""
    if operation not in OPERATIONS:
        raise ValueError(f"unknown operation {operation!r}")
    if operation == READ:
        return Role.VIEWER
    if operation == ARCHIVE:
        return Role.ADMIN
    label = model._meta.label_lower if model is not None else ""
    if operation in (CREATE, CHANGE) and label in ADMIN_MANAGED:
        return Role.ADMIN
    return Role.MEMBER


def roles_at_least(role: str) -> list[str]:
    return [r.value for r, rank in ROLE_RANK.items() if rank >= ROLE_RANK[Role(role)]]


def team_id_of(obj) -> int:
    """The id of the team `obj` belongs to, following its team-scoped QuerySet's `team_path`."""
    if isinstance(obj, Team):
        return obj.pk
    queryset = type(obj)._default_manager.all()
    path = queryset.team_path if isinstance(queryset, TeamScopedQuerySet) else "team"
    *hops, last = path.split("__")
    for hop in hops:
        obj = getattr(obj, hop)
    return getattr(obj, f"{last}_id")


def _membership_of(team_id: int, user_id: int):
    rows = Membership.objects.filter(team_id=team_id, user_id=user_id)
    return rows.values_list(*concrete_attnames(Membership))[:1]


# `Membership.objects.filter(team=team, user=user).first()` (in the model's ordering), compiled once per
# process (core.prepared): pages ask it for their flags on every request.
_MEMBERSHIP_READ = PreparedRead(_membership_of, (int, int))


def membership(user, team) -> Membership | None:
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    using = router.db_for_read(Membership)
    rows = _MEMBERSHIP_READ.rows(team.pk, user.pk, using=using)
    return instance(Membership, rows[0], using) if rows else None


def allows(user, operation: Operation, target, *, team=None) -> bool:
    """May `user` do `operation` to `target` (an object, or a model class with `team=` for create)?"""
    if user is None:
        return True
    role = role_needed(operation, target)
    team_id = team.pk if team is not None else team_id_of(target)
    return Membership.objects.filter(user=user, team_id=team_id, role__in=roles_at_least(role)).exists()


def require(user, operation: Operation, target, *, team=None) -> None:
    """Raise PermissionDenied unless `user` may do `operation` to `target` (see `allows`)."""
    if user is None:
        return
    role = role_needed(operation, target)
    team = team if team is not None else Team.objects.get(pk=team_id_of(target))
    found = membership(user, team)
    if found is None or not found.allows(role):
        raise PermissionDenied(f"your role in {team} does not allow this (needs {role.label.lower()})")


def teams_with_role(user, operation: Operation, model=None):
    """The teams where `user` may do `operation` to objects of `model`."""
    role = role_needed(operation, model)
    return Team.objects.filter(memberships__user=user, memberships__role__in=roles_at_least(role))


def page_flags(user, team) -> dict[str, bool]:
    """What a page may offer in `team`: `can_edit` (create and change) and `can_admin` (archive, and
    setting up agents and the team). One query."""
    found = membership(user, team) if team is not None else None
    return {
        "can_edit": bool(found and found.allows(role_needed(CHANGE))),
        "can_admin": bool(found and found.allows(role_needed(ARCHIVE))),
    }
