from __future__ import annotations

from rest_framework.throttling import SimpleRateThrottle

from teams.models import ApiToken


class TokenRateThrottle(SimpleRateThrottle):
    """Requests per token (per user for browser sessions); rate from EVALCONSOLE_API_THROTTLE."""

    scope = "token"

    def get_cache_key(self, request, view):
        if isinstance(request.auth, ApiToken):
            ident = f"token-{request.auth.pk}"
        elif request.user and request.user.is_authenticated:
            ident = f"user-{request.user.pk}"
        else:
            ident = self.get_ident(request)
        return self.cache_format % {"scope": self.scope, "ident": ident}
