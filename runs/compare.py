"""Run comparison: two runs of the same test side by side (the compare page's rows).

``compare_runs(a, b)`` puts the older run on the left and builds every row the page shows: the
pass rate per scenario (matched by name, else by position), the check versions that differ
(field by field) and the (scenario, check) pairs whose outcome counts changed. It reads the two
runs' frozen check versions and check results (four queries) and writes nothing; picking and
authorising the runs is the view's job. ``scenario_rows`` (a run's per-scenario counts, from the
summary the workers keep current) and ``pretty`` are shared with the run page.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from checks.kinds import Outcome
from checks.models import CheckVersion
from checks.services import version_diff
from runs.models import CheckResult, Run, RunCheck

__all__ = [
    "ChangedOutcome",
    "Comparison",
    "FieldChange",
    "ScenarioRow",
    "VersionRow",
    "compare_runs",
    "counts_text",
    "match_scenarios",
    "pretty",
    "scenario_rows",
]


@dataclass(frozen=True)
class ScenarioRow:
    """One scenario in either run or both: its per-scenario counts on each side (None: not in run)."""

    name: str
    a: dict | None
    b: dict | None
    a_index: int | None
    b_index: int | None
    delta: float | None  # pass rate points, b - a, when both sides have one


@dataclass(frozen=True)
class FieldChange:
    field: str
    before: str
    after: str


@dataclass(frozen=True)
class VersionRow:
    """A check whose version differs between the runs (None: the check was not used)."""

    name: str
    check_id: int
    a: CheckVersion | None
    b: CheckVersion | None
    changes: tuple[FieldChange, ...]


@dataclass(frozen=True)
class ChangedOutcome:
    scenario: str
    check: str
    check_id: int
    a: str
    b: str


@dataclass(frozen=True)
class Comparison:
    a: Run  # the older run
    b: Run
    scenarios: tuple[ScenarioRow, ...]
    versions: tuple[VersionRow, ...]
    changed: tuple[ChangedOutcome, ...]


def pretty(value: Any) -> str:
    """A stored value for display: text as it is, anything else as indented JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False)


def scenario_rows(run: Run) -> list[dict]:
    """Per-scenario counts from the run's summary (kept current by the workers) plus names."""
    specs = run.test_version.scenarios
    counted = {s.get("index"): s for s in (run.summary or {}).get("scenarios", []) if isinstance(s, dict)}
    rows = []
    for index, spec in enumerate(specs):
        counts = counted.get(index, {})
        rows.append(
            {
                "index": index,
                "name": spec.get("name") or f"Scenario {index + 1}",
                "total": counts.get("total", run.test_version.samples_per_scenario),
                "done": counts.get("done", 0),
                "passed": counts.get("passed", 0),
                "failed": counts.get("failed", 0),
                "errored": counts.get("errored", 0),
                "indeterminate": counts.get("indeterminate", 0),
                "determinate": counts.get("determinate", 0),
                "pass_rate": counts.get("pass_rate"),
                "required_pass_rate": counts.get("required_pass_rate", run.test_version.required_pass_rate),
                "min_valid": counts.get("min_valid", run.test_version.min_valid_per_scenario),
                "meets_threshold": counts.get("meets_threshold"),
                "enough_valid": counts.get("enough_valid", False),
                "flaky": counts.get("flaky", False),
            }
        )
    return rows


def match_scenarios(scen_a: Sequence[dict], scen_b: Sequence[dict]) -> tuple[ScenarioRow, ...]:
    """Pair the scenario rows of two runs: by name, else by position when b's scenario there has a
    name a does not use; b's unpaired scenarios come last."""
    by_name_b = {s["name"]: s for s in scen_b}
    names_a = {x["name"] for x in scen_a}
    pairs: list[tuple[str, dict | None, dict | None]] = []
    used_b = set()
    for s in scen_a:
        other = by_name_b.get(s["name"])
        if other is None and s["index"] < len(scen_b) and scen_b[s["index"]]["name"] not in names_a:
            other = scen_b[s["index"]]
        if other is not None:
            used_b.add(other["index"])
        pairs.append((s["name"], s, other))
    for s in scen_b:
        if s["index"] not in used_b:
            pairs.append((s["name"], None, s))
    rows = []
    for name, a, b in pairs:
        ra = a["pass_rate"] if a else None
        rb = b["pass_rate"] if b else None
        rows.append(
            ScenarioRow(
                name=name,
                a=a,
                b=b,
                a_index=a["index"] if a else None,
                b_index=b["index"] if b else None,
                delta=round(rb - ra, 2) if ra is not None and rb is not None else None,
            )
        )
    return tuple(rows)


def counts_text(counts: dict[str, int] | None) -> str:
    """Outcome counts as the page shows them, e.g. "2 pass, 1 error"; "not run" when there are none."""
    if not counts:
        return "not run"
    order = [Outcome.PASS, Outcome.FAIL, Outcome.ERROR, Outcome.INDETERMINATE]
    return ", ".join(f"{counts[o]} {o}" for o in order if counts.get(o))


def _run_checks(run: Run) -> dict[int, RunCheck]:
    """The run's frozen checks by library check id."""
    return {
        rc.check_version.parent_id: rc
        for rc in RunCheck.objects.filter(run=run).select_related("check_version")
    }


def _outcome_table(run: Run) -> dict[tuple[int, int], dict[str, int]]:
    """(scenario index, library check id) → outcome counts, from the run's check results."""
    table: dict[tuple[int, int], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    rows = CheckResult.objects.filter(sample__run=run).values_list(
        "sample__scenario_index", "check_version__parent_id", "outcome"
    )
    for scenario_index, check_id, outcome in rows:
        table[(scenario_index, check_id)][outcome] += 1
    return table


def _version_rows(rc_a: dict[int, RunCheck], rc_b: dict[int, RunCheck]) -> tuple[VersionRow, ...]:
    rows = []
    for check_id in sorted(set(rc_a) | set(rc_b), key=lambda c: (rc_a.get(c) or rc_b.get(c)).position):
        va = rc_a[check_id].check_version if check_id in rc_a else None
        vb = rc_b[check_id].check_version if check_id in rc_b else None
        if va is not None and vb is not None and va.pk == vb.pk:
            continue
        changes = version_diff(va, vb) if va is not None and vb is not None else []
        rows.append(
            VersionRow(
                name=(vb or va).name,
                check_id=check_id,
                a=va,
                b=vb,
                changes=tuple(
                    FieldChange(field=f, before=pretty(x) or "—", after=pretty(y) or "—")
                    for f, x, y in changes
                ),
            )
        )
    return tuple(rows)


def _changed_outcomes(
    scenarios: Sequence[ScenarioRow],
    names: dict[int, str],
    table_a: dict[tuple[int, int], dict[str, int]],
    table_b: dict[tuple[int, int], dict[str, int]],
) -> tuple[ChangedOutcome, ...]:
    changed = []
    for row in scenarios:
        for check_id in sorted(names, key=lambda c: names[c]):
            ca = table_a.get((row.a_index, check_id)) if row.a_index is not None else None
            cb = table_b.get((row.b_index, check_id)) if row.b_index is not None else None
            if counts_text(ca) != counts_text(cb):
                changed.append(
                    ChangedOutcome(
                        scenario=row.name,
                        check=names[check_id],
                        check_id=check_id,
                        a=counts_text(ca),
                        b=counts_text(cb),
                    )
                )
    return tuple(changed)


def compare_runs(run_a: Run, run_b: Run) -> Comparison:
    """Compare two runs of the same test; the older one ends up on the left (``a``).

    The runs need ``test_version`` loaded (their scenarios and thresholds are read from it).
    """
    # Older run on the left, so "before → after" reads naturally.
    if (run_b.created_at, run_b.pk) < (run_a.created_at, run_a.pk):
        run_a, run_b = run_b, run_a
    scenarios = match_scenarios(scenario_rows(run_a), scenario_rows(run_b))
    rc_a, rc_b = _run_checks(run_a), _run_checks(run_b)
    versions = _version_rows(rc_a, rc_b)
    names = {cid: (rc_b.get(cid) or rc_a.get(cid)).check_version.name for cid in set(rc_a) | set(rc_b)}
    changed = _changed_outcomes(scenarios, names, _outcome_table(run_a), _outcome_table(run_b))
    return Comparison(a=run_a, b=run_b, scenarios=scenarios, versions=versions, changed=changed)
