"""Role checks shared by every service: who may do what in a team."""

from __future__ import annotations

from core.errors import PermissionDenied
from teams.models import Membership, Role

ROLE_VERBS = {Role.VIEWER: "read", Role.MEMBER: "build checks and tests and launch runs", Role.ADMIN: "manage"}


def membership(user, team) -> Membership | None:
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    return Membership.objects.filter(team=team, user=user).first()


def require_role(user, team, role: str) -> Membership | None:
    """Raise PermissionDenied unless `user` has at least `role` in `team`. `user=None` means the system."""
    if user is None:
        return None
    found = membership(user, team)
    if found is None or not found.allows(role):
        raise PermissionDenied(f"your role in {team} does not allow this (needs {Role(role).label.lower()})")
    return found
