"""Outcome rules (DESIGN.md "Outcomes"). Pure Python: no Django imports.

Sample outcome: the worst of its REQUIRED checks' outcomes, in the order
fail > error > indeterminate > pass (a known failure stays a failure even when another check could
not complete). Advisory checks are shown, never counted. A sample with no required check results
is PASS: nothing it was required to do failed. (A sample whose agent call failed never reaches this
function: the caller records it as ERROR.)

Run result, per scenario determinate = passed + failed samples:
1. every finished sample errored (and at least one finished) -> ERROR;
2. any scenario with determinate > 0 and ``passed * 100 < rate * determinate`` -> FAIL;
3. otherwise any scenario with determinate < its minimum valid results -> INDETERMINATE;
4. otherwise PASS.
Rates are compared in integers, never floats. Samples whose outcome is still ``None`` are pending:
they count in ``total`` but in no outcome, so the summary of a running run is "the result so far".

Consistency (README "Consistency: pass^k and pass@k"), for c passes among n determinate samples of a
scenario and k = 1..n (unbiased estimators over the n samples, computed exactly with fractions):
    pass@k = 1 - C(n - c, k) / C(n, k)   the chance that at least one of k samples drawn passes;
    pass^k = C(c, k) / C(n, k)           the chance that all k samples drawn pass.
Errored and indeterminate samples count neither way. k > n has no value: the mapping simply has no
key k. A run's figure at k is the mean over ALL its scenarios, so it exists only for k up to the
smallest determinate count among them (none when a scenario has no determinate sample).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from math import comb
from typing import Any

from checks.kinds.base import Outcome

__all__ = [
    "CheckSummary",
    "RunSummary",
    "Consistency",
    "SampleRecord",
    "ScenarioSpec",
    "ScenarioSummary",
    "consistency",
    "pass_at_k",
    "pass_hat_k",
    "run_consistency",
    "run_result",
    "sample_outcome",
    "summarise_run",
    "worst",
]

# Higher is worse.
_SEVERITY = {Outcome.PASS: 0, Outcome.INDETERMINATE: 1, Outcome.ERROR: 2, Outcome.FAIL: 3}


def _outcome(value: Outcome | str) -> Outcome:
    return value if isinstance(value, Outcome) else Outcome(value)


def worst(outcomes: Iterable[Outcome | str]) -> Outcome:
    """The worst outcome (fail > error > indeterminate > pass); PASS for none."""
    result = Outcome.PASS
    for value in outcomes:
        outcome = _outcome(value)
        if _SEVERITY[outcome] > _SEVERITY[result]:
            result = outcome
            if result is Outcome.FAIL:
                break
    return result


def sample_outcome(results: Iterable[tuple[Outcome | str, bool]]) -> Outcome:
    """Outcome of one sample from ``(check outcome, required)`` pairs. Advisory results are ignored.

    No required results -> PASS. Raises ValueError for a value that is not an outcome.
    """
    outcomes = []
    for outcome, required in results:
        checked = _outcome(outcome)  # validate advisory values too: a typo should not pass silently
        if required:
            outcomes.append(checked)
    return worst(outcomes)


# --- consistency: pass@k and pass^k --------------------------------------------------------------

DIGITS = 4  # figures are exact fractions, rounded to this many decimals only when shown or sent


def _check_counts(n: int, c: int, k: int) -> None:
    for name, value in (("n", n), ("c", c), ("k", k)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"{name} must be a non-negative integer, not {value!r}")
    if c > n:
        raise ValueError(f"c ({c}) passes cannot exceed n ({n}) determinate samples")


def pass_hat_k(n: int, c: int, k: int) -> Fraction | None:
    """pass^k = C(c, k) / C(n, k): every one of k samples drawn from the n passes. None when
    k < 1 or k > n (no value). Raises ValueError for negative counts or c > n."""
    _check_counts(n, c, k)
    if not 1 <= k <= n:
        return None
    return Fraction(comb(c, k), comb(n, k))


def pass_at_k(n: int, c: int, k: int) -> Fraction | None:
    """pass@k = 1 - C(n - c, k) / C(n, k): at least one of k samples drawn from the n passes. None
    when k < 1 or k > n (no value). Raises ValueError for negative counts or c > n."""
    _check_counts(n, c, k)
    if not 1 <= k <= n:
        return None
    return 1 - Fraction(comb(n - c, k), comb(n, k))


@dataclass(frozen=True)
class Consistency:
    """pass^k and pass@k for k = 1..n (as exact fractions), and the n they rest on."""

    determinate: int
    pass_hat: dict[int, Fraction]
    pass_at: dict[int, Fraction]

    @property
    def ks(self) -> list[int]:
        return sorted(self.pass_hat)

    def as_dict(self) -> dict[str, Any]:
        """JSON form: k as a string ("1".."n") to a number in [0, 1] rounded to DIGITS decimals."""
        return {
            "determinate": self.determinate,
            "pass_hat_k": {str(k): round(float(v), DIGITS) for k, v in sorted(self.pass_hat.items())},
            "pass_at_k": {str(k): round(float(v), DIGITS) for k, v in sorted(self.pass_at.items())},
        }


def consistency(passed: int, failed: int) -> Consistency:
    """A scenario's pass^k and pass@k from its passed and failed (determinate) sample counts."""
    n = passed + failed
    ks = range(1, n + 1)
    return Consistency(
        determinate=n,
        pass_hat={k: pass_hat_k(n, passed, k) for k in ks},
        pass_at={k: pass_at_k(n, passed, k) for k in ks},
    )


def run_consistency(scenarios: Sequence[Consistency]) -> Consistency:
    """The run's figures: at each k, the mean over all its scenarios; only k up to the smallest
    determinate count (no key at all when a scenario has none, or there are no scenarios).
    ``determinate`` is the run's total determinate samples."""
    if not scenarios:
        return Consistency(determinate=0, pass_hat={}, pass_at={})
    top = min(s.determinate for s in scenarios)
    count = len(scenarios)
    return Consistency(
        determinate=sum(s.determinate for s in scenarios),
        pass_hat={k: sum((s.pass_hat[k] for s in scenarios), Fraction(0)) / count for k in range(1, top + 1)},
        pass_at={k: sum((s.pass_at[k] for s in scenarios), Fraction(0)) / count for k in range(1, top + 1)},
    )


# The outcome counts a scenario's and a check's summaries share, in their as_dict() order.
COUNT_KEYS = ("passed", "failed", "errored", "indeterminate", "determinate", "pass_rate")


def _attributes(obj: Any, *names: str) -> dict[str, Any]:
    return {name: getattr(obj, name) for name in names}


@dataclass(frozen=True)
class ScenarioSpec:
    """Thresholds of one scenario: minimum determinate samples and required pass rate (percent)."""

    min_valid: int = 1
    required_pass_rate: int = 100


@dataclass(frozen=True)
class SampleRecord:
    """One sample as the summary needs it.

    ``outcome`` is the sample outcome, or None while the sample is pending. ``checks`` optionally maps
    a check id (e.g. a CheckVersion pk) to that check's outcome on this sample, for per-check rates
    (advisory checks included: they are shown, not counted in the run result).
    """

    scenario_index: int
    outcome: Outcome | str | None
    checks: Mapping[Any, Outcome | str] = field(default_factory=dict)


class _Counts:
    """What a summary with `passed` and `failed` counts derives from them."""

    passed: int
    failed: int

    @property
    def determinate(self) -> int:
        return self.passed + self.failed

    @property
    def pass_rate(self) -> float | None:
        """Percent of determinate samples that passed (for display; None when none is determinate)."""
        return None if not self.determinate else round(100 * self.passed / self.determinate, 2)


@dataclass
class ScenarioSummary(_Counts):
    index: int
    min_valid: int
    required_pass_rate: int
    total: int = 0
    passed: int = 0
    failed: int = 0
    errored: int = 0
    indeterminate: int = 0
    pending: int = 0

    @property
    def done(self) -> int:
        return self.total - self.pending

    @property
    def below_rate(self) -> bool:
        """Rule 2: determinate > 0 and passed * 100 < rate * determinate (integers only)."""
        return self.determinate > 0 and self.passed * 100 < self.required_pass_rate * self.determinate

    @property
    def meets_threshold(self) -> bool | None:
        """Whether the pass rate reaches the required rate; None when no sample is determinate."""
        return None if not self.determinate else not self.below_rate

    @property
    def enough_valid(self) -> bool:
        return self.determinate >= self.min_valid

    @property
    def consistent(self) -> bool:
        """pass^k: at least one determinate sample and every determinate sample passed."""
        return self.determinate > 0 and self.failed == 0

    @property
    def flaky(self) -> bool:
        """Some samples passed and some failed."""
        return self.passed > 0 and self.failed > 0

    def as_dict(self) -> dict[str, Any]:
        return _attributes(
            self,
            "index", "total", "done", "pending", *COUNT_KEYS, "min_valid", "required_pass_rate",
            "meets_threshold", "enough_valid", "consistent", "flaky",
        )


@dataclass
class CheckSummary(_Counts):
    """One check's outcomes across the run's samples."""

    check: Any
    passed: int = 0
    failed: int = 0
    errored: int = 0
    indeterminate: int = 0
    # scenario index -> outcomes this check had there (flakiness is judged per scenario)
    seen: dict[int, set[Outcome]] = field(default_factory=dict, repr=False)

    @property
    def flaky_scenarios(self) -> list[int]:
        """Scenarios on which this check both passed and failed. Passing on one scenario and failing
        on another is consistent behaviour, not flakiness."""
        both = {Outcome.PASS, Outcome.FAIL}
        return sorted(index for index, outcomes in self.seen.items() if both <= outcomes)

    @property
    def flaky(self) -> bool:
        return bool(self.flaky_scenarios)

    def as_dict(self) -> dict[str, Any]:
        return _attributes(self, *COUNT_KEYS, "flaky", "flaky_scenarios")


_COUNTER = {
    Outcome.PASS: "passed",
    Outcome.FAIL: "failed",
    Outcome.ERROR: "errored",
    Outcome.INDETERMINATE: "indeterminate",
}


@dataclass
class RunSummary:
    result: Outcome
    scenarios: list[ScenarioSummary]
    checks: dict[Any, CheckSummary]
    done: int
    total: int

    @property
    def complete(self) -> bool:
        return self.done == self.total

    def as_dict(self) -> dict[str, Any]:
        """JSON-serialisable form. Check ids become strings (JSON object keys)."""
        return {
            "result": str(self.result),
            "done": self.done,
            "total": self.total,
            "complete": self.complete,
            "scenarios": [s.as_dict() for s in self.scenarios],
            "checks": {str(check_id): c.as_dict() for check_id, c in self.checks.items()},
        }


def run_result(scenarios: Sequence[ScenarioSummary]) -> Outcome:
    """Rules 1-4 of DESIGN.md "Outcomes" over per-scenario counts."""
    done = sum(s.done for s in scenarios)
    if done and all(s.errored == s.done for s in scenarios):
        return Outcome.ERROR
    if any(s.below_rate for s in scenarios):
        return Outcome.FAIL
    if any(not s.enough_valid for s in scenarios):
        return Outcome.INDETERMINATE
    return Outcome.PASS


def summarise_run(samples: Iterable[SampleRecord], scenarios: Sequence[ScenarioSpec]) -> RunSummary:
    """Counts per scenario and per check, and the run result.

    ``scenarios[i]`` holds the thresholds of scenario index ``i``; every sample's ``scenario_index``
    must be one of them (ValueError otherwise). A scenario with no samples counts as having 0
    determinate samples (so it is INDETERMINATE unless something failed).
    """
    summaries = [
        ScenarioSummary(index=i, min_valid=spec.min_valid, required_pass_rate=spec.required_pass_rate)
        for i, spec in enumerate(scenarios)
    ]
    checks: dict[Any, CheckSummary] = {}
    for sample in samples:
        index = sample.scenario_index
        if not isinstance(index, int) or not 0 <= index < len(summaries):
            raise ValueError(f"sample scenario_index {index!r} is not one of the {len(summaries)} scenarios")
        summary = summaries[index]
        summary.total += 1
        if sample.outcome is None:
            summary.pending += 1
            continue
        counter = _COUNTER[_outcome(sample.outcome)]
        setattr(summary, counter, getattr(summary, counter) + 1)
        for check_id, outcome in sample.checks.items():
            check = checks.get(check_id)
            if check is None:
                check = checks[check_id] = CheckSummary(check_id)
            checked = _outcome(outcome)
            counter = _COUNTER[checked]
            setattr(check, counter, getattr(check, counter) + 1)
            check.seen.setdefault(index, set()).add(checked)
    total = sum(s.total for s in summaries)
    done = total - sum(s.pending for s in summaries)
    return RunSummary(
        result=run_result(summaries), scenarios=summaries, checks=checks, done=done, total=total
    )
