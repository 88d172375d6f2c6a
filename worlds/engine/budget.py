"""The call budget: 500 agent calls per trial. Every call counts, failed and unauthenticated ones
included. The 501st is traced, advances the clock, answers 429 and ends the trial; its checks are then
evaluated with a required ``call_budget`` result that fails."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CALL_BUDGET", "CALL_BUDGET_CHECK", "CallBudget", "OVER_BUDGET_EXPLANATION"]

CALL_BUDGET = 500
CALL_BUDGET_CHECK = "call_budget"
OVER_BUDGET_EXPLANATION = f"the agent made more than {CALL_BUDGET} calls"


@dataclass
class CallBudget:
    limit: int = CALL_BUDGET
    calls: int = 0

    def take(self) -> bool:
        """Count one call. True when it is within the budget; False for the call that exceeds it
        (answer 429 and end the trial). Calls after that are not counted: the world has ended."""
        if self.exceeded:
            return False
        self.calls += 1
        return self.calls <= self.limit

    @property
    def exceeded(self) -> bool:
        return self.calls > self.limit

    @property
    def remaining(self) -> int:
        return max(self.limit - self.calls, 0)
