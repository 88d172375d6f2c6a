"""Each team's monthly AI judge budget and what it has spent (the judge client in checks/judge.py
checks the budget before a call and records the tokens after it)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date

from django.conf import settings
from django.db.models import F
from django.utils import timezone

from teams.models import JudgeUsage


def current_month(now=None) -> date:
    """First day of the current calendar month, UTC."""
    now = now or timezone.now()
    return now.astimezone(UTC).date().replace(day=1) if timezone.is_aware(now) else now.date().replace(day=1)


def team_budget(team) -> int:
    """The team's monthly judge token budget: its own, else the site default."""
    own = team.judge_monthly_token_budget
    return int(own) if own is not None else int(settings.EVALCONSOLE_JUDGE_MONTHLY_TOKEN_BUDGET)


def record_judge_usage(*, team_id: int, tokens_in: int, tokens_out: int, calls: int = 1, month=None) -> None:
    """Add one call's tokens to the team's month, atomically (F() expressions)."""
    month = month or current_month()
    JudgeUsage.objects.get_or_create(team_id=team_id, month=month)
    JudgeUsage.objects.filter(team_id=team_id, month=month).update(
        tokens_in=F("tokens_in") + max(0, int(tokens_in)),
        tokens_out=F("tokens_out") + max(0, int(tokens_out)),
        calls=F("calls") + calls,
        updated_at=timezone.now(),
    )


@dataclass(frozen=True)
class JudgeUsageSummary:
    month: date
    tokens_in: int
    tokens_out: int
    calls: int
    budget: int
    budget_is_default: bool

    @property
    def used(self) -> int:
        return self.tokens_in + self.tokens_out

    @property
    def remaining(self) -> int:
        return max(0, self.budget - self.used)

    @property
    def exhausted(self) -> bool:
        return self.used >= self.budget

    @property
    def percent(self) -> int:
        """Share of the budget used, 0..100 (integers, rounded down)."""
        if self.budget <= 0:
            return 100
        return min(100, self.used * 100 // self.budget)


def judge_usage_summary(team, month=None) -> JudgeUsageSummary:
    month = month or current_month()
    row = JudgeUsage.objects.filter(team=team, month=month).first()
    return JudgeUsageSummary(
        month=month, tokens_in=row.tokens_in if row else 0, tokens_out=row.tokens_out if row else 0,
        calls=row.calls if row else 0, budget=team_budget(team),
        budget_is_default=team.judge_monthly_token_budget is None,
    )
