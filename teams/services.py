"""Writes of the console itself: teams, memberships and API tokens."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from core.errors import Conflict, ValidationFailed
from teams.models import ApiToken, Membership, Role, Team


@dataclass(frozen=True)
class IssuedToken:
    token: ApiToken
    secret: str  # the whole `ect_<key_id>_<secret>` string, shown once


def issue_token(
    *, user, name: str, can_write: bool = True, expires_in_days: int | None = None
) -> IssuedToken:
    """Create a token; the returned `secret` is the only time the plaintext exists."""
    name = (name or "").strip()
    if not name:
        raise ValidationFailed("a token needs a name", field="name")
    if len(name) > 100:
        raise ValidationFailed("at most 100 characters", field="name")
    if expires_in_days is not None and not (1 <= expires_in_days <= 3650):
        raise ValidationFailed("must be between 1 and 3650 days", field="expires_in_days")
    key_id = secrets.token_hex(6)
    secret = secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user,
        name=name,
        key_id=key_id,
        digest=ApiToken.hash_secret(secret),
        can_write=can_write,
        expires_at=timezone.now() + timedelta(days=expires_in_days) if expires_in_days else None,
    )
    return IssuedToken(token=token, secret=f"{ApiToken.PREFIX}_{key_id}_{secret}")


def revoke_token(*, token: ApiToken, by) -> ApiToken:
    if by is not None and token.user_id != by.pk and not by.is_superuser:
        raise Conflict("only the token's owner can revoke it")
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


def create_team(*, name: str, owner=None, slug: str | None = None) -> Team:
    name = (name or "").strip()
    if not name:
        raise ValidationFailed("a team needs a name", field="name")
    slug = slugify(slug or name)[:60] or "team"
    if Team.objects.filter(slug=slug).exists():
        raise ValidationFailed(f"a team with slug {slug!r} exists", field="slug")
    with transaction.atomic():
        team = Team.objects.create(name=name, slug=slug)
        if owner is not None:
            Membership.objects.create(team=team, user=owner, role=Role.ADMIN)
    return team


def add_member(*, team: Team, user, role: str = Role.MEMBER) -> Membership:
    if role not in Role.values:
        raise ValidationFailed(f"must be one of {', '.join(Role.values)}", field="role")
    membership, _ = Membership.objects.update_or_create(team=team, user=user, defaults={"role": role})
    return membership


def get_or_create_user(
    *, username: str, email: str = "", password: str | None = None, superuser: bool = False
):
    User = get_user_model()
    user, created = User.objects.get_or_create(username=username, defaults={"email": email})
    if created:
        user.is_staff = user.is_superuser = superuser
        if password:
            user.set_password(password)
        else:
            user.set_unusable_password()
        user.save()
    return user, created


MAX_JUDGE_BUDGET_TOKENS = 10**12


def set_judge_budget(*, team: Team, by, tokens: int | None) -> Team:
    """Set the team's AI judge budget in tokens per calendar month; None means the site default.

    Team admins only (`by=None` is the system). Raises PermissionDenied or ValidationFailed naming
    `judge_monthly_token_budget`.
    """
    from teams import access

    access.require(by, access.CHANGE, team, team=team)
    field = "judge_monthly_token_budget"
    if tokens is not None:
        if isinstance(tokens, bool) or not isinstance(tokens, int):
            raise ValidationFailed(
                "must be a whole number of tokens, or empty for the site default", field=field
            )
        if tokens < 0:
            raise ValidationFailed(
                "must be 0 or more tokens (0 turns the judge off for this team)", field=field
            )
        if tokens > MAX_JUDGE_BUDGET_TOKENS:
            raise ValidationFailed(f"must be at most {MAX_JUDGE_BUDGET_TOKENS:,} tokens", field=field)
    Team.objects.filter(pk=team.pk).update(judge_monthly_token_budget=tokens)
    team.judge_monthly_token_budget = tokens
    return team
