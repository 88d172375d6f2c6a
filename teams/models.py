"""Tenancy: teams, memberships and roles, personal API tokens, and each team's AI judge spend.

API tokens are `ect_<key_id>_<secret>`, shown once, stored as sha256(secret).
"""

from __future__ import annotations

import hashlib
import hmac

from django.conf import settings
from django.db import models
from django.utils import timezone


class Role(models.TextChoices):
    VIEWER = "viewer", "Viewer"
    MEMBER = "member", "Member"
    ADMIN = "admin", "Admin"


ROLE_RANK = {Role.VIEWER: 0, Role.MEMBER: 1, Role.ADMIN: 2}


class TeamQuerySet(models.QuerySet):
    def visible_to(self, user) -> TeamQuerySet:
        if not getattr(user, "is_authenticated", False):
            return self.none()
        return self.filter(memberships__user=user)


class Team(models.Model):
    name = models.CharField(max_length=100)
    slug = models.SlugField(max_length=60, unique=True)
    judge_monthly_token_budget = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="AI judge tokens per calendar month; empty = the site default."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = TeamQuerySet.as_manager()

    class Meta:
        db_table = "agents_team"
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "agents_membership"
        constraints = [models.UniqueConstraint(fields=["team", "user"], name="membership_unique_team_user")]
        ordering = ["team__name", "user__username"]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.role})"

    def allows(self, role: str) -> bool:
        return ROLE_RANK[Role(self.role)] >= ROLE_RANK[Role(role)]


class TeamScopedQuerySet(models.QuerySet):
    """Objects reachable through `team_path`; every page and endpoint reads through these."""

    team_path = "team"

    def visible_to(self, user):
        if not getattr(user, "is_authenticated", False):
            return self.none()
        return self.filter(**{f"{self.team_path}__memberships__user": user})


class ApiTokenQuerySet(models.QuerySet):
    def visible_to(self, user):
        if not getattr(user, "is_authenticated", False):
            return self.none()
        return self.filter(user=user)

    def usable(self):
        now = timezone.now()
        return self.filter(revoked_at__isnull=True).filter(
            models.Q(expires_at__isnull=True) | models.Q(expires_at__gt=now)
        )


class ApiToken(models.Model):
    PREFIX = "ect"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    key_id = models.CharField(max_length=16, unique=True, help_text="Public lookup prefix.")
    digest = models.CharField(max_length=64, editable=False)
    can_write = models.BooleanField(default=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        db_table = "evalconsole_apitoken"
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.PREFIX}_{self.key_id}_…)"

    @staticmethod
    def hash_secret(secret: str) -> str:
        return hashlib.sha256(secret.encode()).hexdigest()

    def matches(self, secret: str) -> bool:
        return hmac.compare_digest(self.digest, self.hash_secret(secret))

    @property
    def is_active(self) -> bool:
        if self.revoked_at is not None:
            return False
        return self.expires_at is None or self.expires_at > timezone.now()

    @property
    def display(self) -> str:
        return f"{self.PREFIX}_{self.key_id}_…"


class JudgeUsage(models.Model):
    """AI judge spend of one team in one calendar month (UTC): the budget is checked against this row.

    Updated with F() expressions after each judge call (teams.budget.record_judge_usage), so
    concurrent workers never lose an increment.
    """

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="judge_usage")
    month = models.DateField(help_text="First day of the calendar month (UTC).")
    tokens_in = models.PositiveBigIntegerField(default=0)
    tokens_out = models.PositiveBigIntegerField(default=0)
    calls = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "evalconsole_judgeusage"
        ordering = ["-month", "team"]
        constraints = [models.UniqueConstraint(fields=["team", "month"], name="judgeusage_unique_team_month")]

    def __str__(self) -> str:
        return f"{self.team} judge usage {self.month:%Y-%m}"

    @property
    def tokens(self) -> int:
        return self.tokens_in + self.tokens_out
