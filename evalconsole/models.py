"""Personal API tokens: `ect_<key_id>_<secret>`, shown once, stored as sha256(secret)."""

from __future__ import annotations

import hashlib
import hmac

from django.conf import settings
from django.db import models
from django.utils import timezone


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

    Updated with F() expressions after each judge call (evalconsole.judge.record_judge_usage), so
    concurrent workers never lose an increment.
    """

    team = models.ForeignKey("agents.Team", on_delete=models.CASCADE, related_name="judge_usage")
    month = models.DateField(help_text="First day of the calendar month (UTC).")
    tokens_in = models.PositiveBigIntegerField(default=0)
    tokens_out = models.PositiveBigIntegerField(default=0)
    calls = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-month", "team"]
        constraints = [models.UniqueConstraint(fields=["team", "month"], name="judgeusage_unique_team_month")]

    def __str__(self) -> str:
        return f"{self.team} judge usage {self.month:%Y-%m}"

    @property
    def tokens(self) -> int:
        return self.tokens_in + self.tokens_out
