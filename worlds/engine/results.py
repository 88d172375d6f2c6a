"""What a world check answers: passed or not, with ``expected`` and ``actual`` stated, one sentence
that holds both, and the trace entries (``evidence``, trace ``seq``) and events (``n``) behind it."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["StateResult"]


@dataclass(frozen=True)
class StateResult:
    passed: bool
    expected: str
    actual: str
    explanation: str
    evidence: tuple[int, ...] = ()
    events: tuple[int, ...] = ()

    @classmethod
    def of(
        cls,
        passed: bool,
        expected: str,
        actual: str,
        *,
        evidence: tuple[int, ...] = (),
        events: tuple[int, ...] = (),
    ) -> StateResult:
        """The explanation written from the pair: "expected X; found Y"."""
        return cls(
            passed, expected, actual, f"Expected {expected}; found {actual}.", tuple(evidence), tuple(events)
        )
