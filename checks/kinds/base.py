"""Core value types of the evaluation engine.

Pure Python: nothing here (or anywhere in ``checks.kinds``) may import Django, so the engine can be
used by workers, scripts and tests without settings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import EnumType, StrEnum
from typing import Any

__all__ = [
    "ConfigError",
    "Context",
    "Evidence",
    "FieldSpec",
    "Outcome",
    "Verdict",
]


class _ChoicesType(EnumType):
    """Gives an enum Django's ``choices`` ((value, label) pairs, as TextChoices has) without importing
    Django: model fields, forms, serializers and the API schema take their choices from it."""

    @property
    def choices(cls) -> list[tuple[str, str]]:
        return [(member.value, member.label) for member in cls]


class Outcome(StrEnum, metaclass=_ChoicesType):
    """Result of one check on one sample (and, aggregated, of a sample and a run).

    The one outcome enum: ``runs.models`` stores these values (``choices=Outcome.choices``) and the
    API schema names it ``OutcomeEnum``.
    """

    PASS = "pass"
    FAIL = "fail"
    INDETERMINATE = "indeterminate"
    ERROR = "error"

    @property
    def label(self) -> str:
        """What pages and the API schema show: "Pass", "Fail", "Indeterminate" or "Error"."""
        return self.value.capitalize()


@dataclass(frozen=True, init=False)
class Verdict:
    """What a kind says about one piece of evidence.

    ``explanation`` is one sentence holding both ``expected`` and ``actual``. ``evidence`` holds the
    indexes of the tool calls or trace entries behind the verdict (empty for text kinds). ``details``
    is kind-specific, JSON-serialisable extra data (match position, judge prompt and reply, ...).
    """

    outcome: Outcome
    expected: str
    actual: str
    explanation: str
    evidence: tuple[int, ...] = ()
    details: Mapping[str, Any] = field(default_factory=dict)

    def __init__(
        self,
        outcome: Outcome | str,
        expected: str,
        actual: str,
        explanation: str,
        evidence: tuple[int, ...] = (),
        details: Mapping[str, Any] | None = None,
    ) -> None:
        # A generated frozen __init__ sets each field through object.__setattr__; filling __dict__ in
        # one call is several times faster on the hot path and stays immutable afterwards.
        self.__dict__.update(
            outcome=outcome if outcome.__class__ is Outcome else Outcome(outcome),
            expected=expected,
            actual=actual,
            explanation=explanation,
            evidence=evidence if evidence.__class__ is tuple else tuple(evidence),
            details={} if details is None else details,
        )

    @property
    def passed(self) -> bool:
        return self.outcome is Outcome.PASS

    def as_dict(self) -> dict[str, Any]:
        """JSON-serialisable form (what a CheckResult row stores)."""
        return {
            "outcome": str(self.outcome),
            "expected": self.expected,
            "actual": self.actual,
            "explanation": self.explanation,
            "evidence": list(self.evidence),
            "details": dict(self.details),
        }


@dataclass(frozen=True)
class Evidence:
    """Everything an agent reported for one sample, exactly as reported (plus its world, if any).

    ``tool_calls`` and ``trace`` are the RAW values from the agent's reply: ``None`` means the key
    was missing ("unknown"), ``[]`` means "captured, and there was none". They are validated inside
    the engine (``checks.kinds.evidence``), never trusted. Parsed forms are memoised on the instance,
    so evaluating many checks on one Evidence parses each part once.
    """

    output: str
    messages: tuple[Mapping[str, Any], ...] | list[Mapping[str, Any]] = ()
    tool_calls: object = None
    trace: object = None
    latency_ms: float | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    # The sample's world (a scene trial), duck-typed so this package never imports ``worlds``: an
    # object with ``.state_check(name, spec)`` (answering passed, expected, actual, explanation,
    # evidence) and ``.trace`` (its recorded calls). None for a sample played without a world.
    world: Any = None

    def memo(self) -> dict[str, Any]:
        """Per-instance cache for parsed evidence (not a dataclass field: not compared or exported)."""
        try:
            return self.__dict__["_memo"]
        except KeyError:
            memo: dict[str, Any] = {}
            object.__setattr__(self, "_memo", memo)
            return memo


class ConfigError(ValueError):
    """A check config failed validation.

    ``errors`` maps a config field (a dot path such as ``inputs.0.value`` is allowed; ``config``
    means the config as a whole) to a human message. ``str()`` joins them as
    ``"field: message; field: message"``.
    """

    def __init__(self, errors: Mapping[str, str] | str, field_name: str = "config") -> None:
        if isinstance(errors, str):
            errors = {field_name: errors}
        self.errors: dict[str, str] = dict(errors)
        super().__init__(str(self))

    def __str__(self) -> str:
        return "; ".join(f"{name}: {message}" for name, message in self.errors.items())


@dataclass
class Context:
    """Evaluation context passed to every ``evaluate`` call; kinds that do not need it ignore it.

    ``judge`` is a judge client (used by the ai_judge kind), ``cache`` a scratch dict shared by the
    evaluations of one run or batch, ``settings`` plain values (default judge model, limits, ...).
    """

    judge: object | None = None
    cache: dict[str, Any] | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)


def object_schema(properties: dict[str, Any], *required: str) -> dict[str, Any]:
    """A JSON Schema object (a kind's config, say): these properties, the `required` ones, no others."""
    return {
        "type": "object", "properties": properties, "required": list(required), "additionalProperties": False
    }


FIELD_TYPES = frozenset({"text", "textarea", "bool", "int", "choice", "list", "json"})


@dataclass(frozen=True)
class FieldSpec:
    """One config field of a kind, as HTML forms render it.

    ``type`` is one of ``text``, ``textarea``, ``bool``, ``int``, ``choice``, ``list``, ``json``.
    ``list`` and ``json`` fields hold JSON values (forms render them as JSON text areas).
    ``minimum`` and ``maximum`` bound an ``int`` field (checked with its type, naming the bound).
    """

    name: str
    label: str
    type: str
    required: bool = False
    default: Any = None
    choices: tuple[str, ...] = ()
    help: str = ""
    minimum: int | None = None
    maximum: int | None = None

    def __post_init__(self) -> None:
        if self.type not in FIELD_TYPES:
            raise ValueError(f"FieldSpec {self.name!r}: unknown type {self.type!r}")
        if self.type != "int" and (self.minimum is not None or self.maximum is not None):
            raise ValueError(f"FieldSpec {self.name!r}: only an int field has a minimum or maximum")
        if self.type == "choice" and not self.choices:
            raise ValueError(f"FieldSpec {self.name!r}: a choice field needs choices")
