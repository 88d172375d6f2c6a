"""Personal API tokens: shown once, stored hashed, Bearer auth, revocation, expiry, read-only."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone
from rest_framework.test import APIClient

from teams import services
from teams.models import ApiToken

API_ROOT = "/api/v1/"


def bearer(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


@pytest.fixture
def issued(member):
    return services.issue_token(user=member, name="CI")


def test_secret_is_stored_only_as_a_hash(issued):
    token = ApiToken.objects.get(pk=issued.token.pk)
    _, key_id, secret = issued.secret.split("_", 2)
    assert token.key_id == key_id
    assert secret not in token.digest and len(token.digest) == 64
    assert issued.secret not in str(ApiToken.objects.filter(pk=token.pk).values().get())


def test_valid_token_authenticates_and_records_last_use(issued):
    response = bearer(issued.secret).get(API_ROOT)
    assert response.status_code == 200
    issued.token.refresh_from_db()
    assert issued.token.last_used_at is not None


@pytest.mark.parametrize(
    "mangle",
    [
        pytest.param(lambda s: s[:-1] + ("A" if s[-1] != "A" else "B"), id="wrong-secret"),
        pytest.param(lambda s: "ect_unknownid_" + s.split("_", 2)[2], id="unknown-id"),
        pytest.param(lambda s: "not-a-token", id="malformed"),
        pytest.param(lambda s: "ect__", id="malformed-empty-parts"),
    ],
)
def test_bad_tokens_get_401(issued, mangle):
    response = bearer(mangle(issued.secret)).get(API_ROOT)
    assert response.status_code == 401
    assert "detail" in response.json()


def test_revoked_token_gets_401(issued, member):
    services.revoke_token(token=issued.token, by=member)
    response = bearer(issued.secret).get(API_ROOT)
    assert response.status_code == 401
    assert "revoked" in response.json()["detail"]


def test_expired_token_gets_401(member):
    issued = services.issue_token(user=member, name="old", expires_in_days=1)
    ApiToken.objects.filter(pk=issued.token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    response = bearer(issued.secret).get(API_ROOT)
    assert response.status_code == 401
    assert "expired" in response.json()["detail"]


def test_anonymous_gets_401_or_403():
    assert APIClient().get(API_ROOT).status_code in (401, 403)


def test_token_name_is_required(member):
    from core.errors import ValidationFailed

    with pytest.raises(ValidationFailed) as exc:
        services.issue_token(user=member, name="  ")
    assert "name" in exc.value.errors


def test_create_api_token_command_prints_only_the_token(member):
    out = io.StringIO()
    call_command("create_api_token", member.username, "--read-only", "--expires", "7", stdout=out)
    printed = out.getvalue().strip()
    assert printed.startswith("ect_") and "\n" not in printed
    token = ApiToken.objects.get(key_id=printed.split("_")[1])
    assert token.can_write is False
    assert token.expires_at is not None and token.matches(printed.split("_", 2)[2])
    assert bearer(printed).get(API_ROOT).status_code == 200


def test_create_api_token_command_errors_name_the_problem(member):
    with pytest.raises(CommandError, match="username: no user called 'ghost'"):
        call_command("create_api_token", "ghost")
    with pytest.raises(CommandError, match="expires"):
        call_command("create_api_token", member.username, "--expires", "0")
