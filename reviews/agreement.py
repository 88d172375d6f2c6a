"""How far two raters agree on pass/fail: percent agreement, Cohen's kappa and the confusion matrix.

Pure (no Django): a rater pair is ``(first, second)``, each ``"pass"`` or ``"fail"``. For a judge's
calibration the judge is first and the human second; between two reviewers, the earlier label is first.
Arithmetic is exact (fractions) and only the returned figures are floats.

Degenerate cases: no pairs -> agreement and kappa are None; every rating of both raters in one class
(all pass, or all fail) -> kappa is None (chance agreement is 1, so kappa is 0/0), agreement is 100.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

PASS = "pass"
FAIL = "fail"
VERDICTS = (PASS, FAIL)


@dataclass(frozen=True)
class Confusion:
    """Counts of (first, second) pairs: ``pass_fail`` = first said pass, second said fail."""

    pass_pass: int = 0
    pass_fail: int = 0
    fail_pass: int = 0
    fail_fail: int = 0

    @property
    def total(self) -> int:
        return self.pass_pass + self.pass_fail + self.fail_pass + self.fail_fail

    @property
    def agreed(self) -> int:
        return self.pass_pass + self.fail_fail

    def as_dict(self) -> dict[str, int]:
        return {
            "pass_pass": self.pass_pass,
            "pass_fail": self.pass_fail,
            "fail_pass": self.fail_pass,
            "fail_fail": self.fail_fail,
        }


def confusion(pairs: Iterable[tuple[str, str]]) -> Confusion:
    """The confusion matrix of (first, second) pairs. Raises ValueError on a value other than pass/fail."""
    counts = dict.fromkeys(("pass_pass", "pass_fail", "fail_pass", "fail_fail"), 0)
    for first, second in pairs:
        if first not in VERDICTS or second not in VERDICTS:
            raise ValueError(f"a rating is pass or fail, not {first if first not in VERDICTS else second!r}")
        counts[f"{first}_{second}"] += 1
    return Confusion(**counts)


def _as_confusion(data: Confusion | Iterable[tuple[str, str]]) -> Confusion:
    return data if isinstance(data, Confusion) else confusion(data)


def percent_agreement(data: Confusion | Iterable[tuple[str, str]]) -> float | None:
    """Share of pairs where both raters agree, in percent (0..100); None without pairs."""
    matrix = _as_confusion(data)
    if not matrix.total:
        return None
    return float(Fraction(100 * matrix.agreed, matrix.total))


def cohens_kappa(data: Confusion | Iterable[tuple[str, str]]) -> float | None:
    """Cohen's kappa, (p_o - p_e) / (1 - p_e); None without pairs or when chance agreement p_e is 1
    (both raters gave one and the same class every time)."""
    m = _as_confusion(data)
    n = m.total
    if not n:
        return None
    first_pass, second_pass = m.pass_pass + m.pass_fail, m.pass_pass + m.fail_pass
    chance = first_pass * second_pass + (n - first_pass) * (n - second_pass)  # p_e * n^2
    if chance == n * n:
        return None
    return float(Fraction(n * m.agreed - chance, n * n - chance))


@dataclass(frozen=True)
class Agreement:
    """The figures of one set of pairs."""

    confusion: Confusion
    agreement: float | None
    kappa: float | None

    @property
    def count(self) -> int:
        return self.confusion.total

    @property
    def disagreed(self) -> int:
        return self.confusion.total - self.confusion.agreed


def agreement(pairs: Iterable[tuple[str, str]]) -> Agreement:
    matrix = confusion(pairs)
    return Agreement(confusion=matrix, agreement=percent_agreement(matrix), kappa=cohens_kappa(matrix))
