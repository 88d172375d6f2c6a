from __future__ import annotations

from rest_framework.permissions import SAFE_METHODS, BasePermission

from teams.models import ApiToken


class TokenCanWrite(BasePermission):
    """A read-only token may only read."""

    message = "This token is read-only."

    def has_permission(self, request, view) -> bool:
        if request.method in SAFE_METHODS:
            return True
        token = request.auth
        return not isinstance(token, ApiToken) or token.can_write
