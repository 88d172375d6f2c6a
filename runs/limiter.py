"""Per-agent concurrency: the hard cap (Agent.max_concurrency) and an adaptive window (AIMD).

The number of agent calls in flight for one agent, across every worker process, never exceeds
``allowed_in_flight(max_concurrency, concurrency_window)``. Workers enforce it when they claim
samples (runs.queue.claim_samples counts the agent's running samples under a lock on the agent
row), so the window lives in the database where every worker sees it.

AIMD (as TCP does for congestion): a call that met a 429 halves the window (multiplicative
decrease, at most once per cooldown so one burst of 429s counts once), each call that succeeded
without a 429 adds ``1 / window`` (additive increase: about +1 per window's worth of successes).
The window never goes below 1 and an empty window means "the full max_concurrency".
"""

from __future__ import annotations

import math
from datetime import timedelta

from django.db.models import F, FloatField, Q, Value
from django.db.models.functions import Cast, Coalesce, Greatest, Least
from django.utils import timezone

from agents.models import Agent

DECREASE_FACTOR = 0.5
MIN_WINDOW = 1.0
DECREASE_COOLDOWN_S = 1.0

__all__ = ["allowed_in_flight", "decreased", "increased", "shrink_window", "grow_window"]


def allowed_in_flight(max_concurrency: int, window: float | None) -> int:
    """Calls one agent may have in flight now: the hard cap, lowered by the adaptive window."""
    cap = max(1, int(max_concurrency or 1))
    if window is None:
        return cap
    return max(1, min(cap, math.floor(window + 1e-9)))


def decreased(window: float | None, max_concurrency: int) -> float:
    """The window after a 429 (pure twin of shrink_window, for tests and docs)."""
    current = float(max_concurrency) if window is None else window
    return max(MIN_WINDOW, current * DECREASE_FACTOR)


def increased(window: float | None, max_concurrency: int) -> float | None:
    """The window after a success; None once it is back at the hard cap."""
    if window is None:
        return None
    grown = window + 1.0 / max(window, MIN_WINDOW)
    return None if grown >= max_concurrency else grown


def _current_window():
    return Coalesce(F("concurrency_window"), Cast(F("max_concurrency"), FloatField()))


def shrink_window(agent_id: int, *, now=None) -> bool:
    """Halve the agent's window (one statement, so concurrent workers cannot lose an update).

    Returns False when a decrease happened within the cooldown (the same burst of 429s).
    """
    now = now or timezone.now()
    recent = now - timedelta(seconds=DECREASE_COOLDOWN_S)
    return bool(
        Agent.objects.filter(pk=agent_id)
        .filter(Q(window_decreased_at__isnull=True) | Q(window_decreased_at__lt=recent))
        .update(
            concurrency_window=Greatest(Value(MIN_WINDOW), _current_window() * Value(DECREASE_FACTOR)),
            window_decreased_at=now,
        )
    )


def grow_window(agent_id: int, successes: int = 1) -> None:
    """Additive increase after ``successes`` calls without a 429; back to empty at the hard cap."""
    for _ in range(max(0, successes)):
        updated = Agent.objects.filter(pk=agent_id, concurrency_window__isnull=False).update(
            concurrency_window=Least(
                Cast(F("max_concurrency"), FloatField()),
                F("concurrency_window") + Value(1.0) / Greatest(F("concurrency_window"), Value(MIN_WINDOW)),
            )
        )
        if not updated:
            return
    Agent.objects.filter(pk=agent_id, concurrency_window__gte=F("max_concurrency")).update(
        concurrency_window=None
    )
