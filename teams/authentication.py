"""`Authorization: Bearer ect_<key_id>_<secret>` for the REST API."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth import get_user_model
from django.db import router
from django.utils import timezone
from rest_framework import authentication, exceptions

from core.prepared import PreparedRead, concrete_attnames, instance
from teams.models import ApiToken

LAST_USED_RESOLUTION = timedelta(minutes=1)


def parse_token(raw: str) -> tuple[str, str] | None:
    parts = raw.split("_", 2)
    if len(parts) != 3 or parts[0] != ApiToken.PREFIX or not parts[1] or not parts[2]:
        return None
    return parts[1], parts[2]


def _token_and_user(key_id: str):
    user_columns = tuple(f"user__{name}" for name in concrete_attnames(get_user_model()))
    rows = ApiToken.objects.filter(key_id=key_id).order_by("pk")
    return rows.values_list(*concrete_attnames(ApiToken), *user_columns)[:1]


# `ApiToken.objects.select_related("user").filter(key_id=...).first()`: the same query and instances, the
# query compiled once per process (core.prepared) instead of ~1,900 calls a request.
_TOKEN_READ = PreparedRead(_token_and_user, (str,))


def token_with_user(key_id: str) -> ApiToken | None:
    """The token of `key_id` with its user loaded (``token.user`` asks no query), or None."""
    using = router.db_for_read(ApiToken)
    rows = _TOKEN_READ.rows(key_id, using=using)
    if not rows:
        return None
    split = len(concrete_attnames(ApiToken))
    token = instance(ApiToken, rows[0][:split], using)
    ApiToken.user.field.set_cached_value(token, instance(get_user_model(), rows[0][split:], using))
    return token


class ApiTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        scheme, _, raw = header.partition(" ")
        if scheme.lower() != "bearer":
            return None
        raw = raw.strip()
        parsed = parse_token(raw)
        if parsed is None:
            raise exceptions.AuthenticationFailed("Malformed token: expected 'Bearer ect_<id>_<secret>'.")
        key_id, secret = parsed
        token = token_with_user(key_id)
        if token is None or not token.matches(secret):
            raise exceptions.AuthenticationFailed("Invalid token.")
        if token.revoked_at is not None:
            raise exceptions.AuthenticationFailed("This token has been revoked.")
        now = timezone.now()
        if token.expires_at is not None and token.expires_at <= now:
            raise exceptions.AuthenticationFailed("This token has expired.")
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("The token's user is inactive.")
        if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return token.user, token

    def authenticate_header(self, request) -> str:
        return self.keyword
