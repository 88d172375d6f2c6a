"""Run comparison: two runs of the same test side by side (the compare page's rows).

``compare_runs(a, b)`` puts the older run on the left and builds every row the page shows: the
pass rate per scenario (matched by name, else by position), the check versions that differ
(field by field) and the (scenario, check) pairs whose outcome counts changed. It reads the two
runs' frozen check versions and check results (four queries) and writes nothing; picking and
authorising the runs is the view's job. ``scenario_rows`` (a run's per-scenario counts, from the
summary the workers keep current) and ``pretty`` are shared with the run page.

Output diffs: ``line_diff`` is a line diff (difflib) of two texts, bounded in size; ``sample_diff``
diffs two samples of one run (the run page) and ``scenario_diff`` one sample of a scenario in each
of the two compared runs (the compare page). Both raise ``ValidationFailed`` for a pick that is not
there, with a message to show.
"""

from __future__ import annotations

import difflib
import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import Q

from checks.kinds import Outcome
from checks.models import CheckVersion, scenario_name, scenario_names
from checks.services import version_diff
from core.errors import ValidationFailed
from runs.consistency import batch_figures, columns, figure_text, regressed_ks
from runs.models import CheckResult, Run, RunCheck, Sample
from runs.outcomes import Consistency, consistency, run_consistency

__all__ = [
    "BatchGroup",
    "ChangedOutcome",
    "Comparison",
    "DiffLine",
    "FieldChange",
    "OutputDiff",
    "ScenarioRow",
    "VersionRow",
    "batch_groups",
    "compare_runs",
    "consistency_text",
    "counts_text",
    "line_diff",
    "match_scenarios",
    "pretty",
    "run_figures",
    "sample_diff",
    "scenario_diff",
    "scenario_rows",
    "consistency_trend",
]

# An agent's output may be megabytes; difflib is quadratic, so a diff reads this much of each side.
DIFF_MAX_LINES = 1000
DIFF_MAX_CHARS = 100_000


@dataclass(frozen=True)
class ScenarioRow:
    """One scenario in either run or both: its per-scenario counts on each side (None: not in run)."""

    name: str
    a: dict | None
    b: dict | None
    a_index: int | None
    b_index: int | None
    delta: float | None  # pass rate points, b - a, when both sides have one
    regressed: tuple[int, ...] = ()  # the k at which pass^k dropped from a to b

    @property
    def regression_text(self) -> str:
        """e.g. "pass^3 1 → 0.1, pass^5 1 → 0" (empty when nothing dropped)."""
        if not self.regressed:
            return ""
        before, after = self.a["consistency"], self.b["consistency"]
        return ", ".join(
            f"pass^{k} {figure_text(before.pass_hat[k])} → {figure_text(after.pass_hat[k])}"
            for k in self.regressed
        )

    @property
    def pass_hat_pairs(self) -> list[dict]:
        """pass^k before and after for every k either side has (the compare page's cells)."""
        before = self.a["consistency"].pass_hat if self.a else {}
        after = self.b["consistency"].pass_hat if self.b else {}
        return [
            {
                "k": k,
                "a": figure_text(before.get(k)),
                "b": figure_text(after.get(k)),
                "dropped": k in self.regressed,
            }
            for k in sorted(set(before) | set(after))
        ]


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

    @property
    def regressions(self) -> tuple[ScenarioRow, ...]:
        """Scenarios in both runs whose pass^k dropped at some k."""
        return tuple(row for row in self.scenarios if row.regressed)

    @property
    def shared(self) -> tuple[tuple[int, ScenarioRow], ...]:
        """(index, row) of the scenarios both runs have: the ones whose outputs can be diffed."""
        return tuple((i, row) for i, row in enumerate(self.scenarios) if row.a and row.b)

    @property
    def numbers_a(self) -> range:
        """Sample numbers (1-based) a scenario has in run a."""
        return range(1, self.a.test_version.samples_per_scenario + 1)

    @property
    def numbers_b(self) -> range:
        return range(1, self.b.test_version.samples_per_scenario + 1)


@dataclass(frozen=True)
class DiffLine:
    """One line of a line diff: ``op`` is "same", "removed" (only in a) or "added" (only in b)."""

    op: str
    a_line: int | None  # 1-based line numbers; None on the side the line is not in
    b_line: int | None
    text: str


@dataclass(frozen=True)
class OutputDiff:
    """The outputs of two samples, line by line (``a`` is the "before" side)."""

    a: Sample
    b: Sample
    a_label: str
    b_label: str
    lines: tuple[DiffLine, ...]
    truncated: bool  # at least one output was longer than the diff reads
    row: int | None = None  # on the compare page: the index of the scenario in Comparison.scenarios

    @property
    def added(self) -> int:
        return sum(line.op == "added" for line in self.lines)

    @property
    def removed(self) -> int:
        return sum(line.op == "removed" for line in self.lines)

    @property
    def identical(self) -> bool:
        return not (self.added or self.removed)


def _diff_lines(text: str) -> tuple[list[str], bool]:
    lines = text[:DIFF_MAX_CHARS].splitlines()
    return lines[:DIFF_MAX_LINES], len(text) > DIFF_MAX_CHARS or len(lines) > DIFF_MAX_LINES


def line_diff(before: str, after: str) -> tuple[tuple[DiffLine, ...], bool]:
    """Every line of both texts as same / removed / added, and whether either text was cut short."""
    a, cut_a = _diff_lines(before or "")
    b, cut_b = _diff_lines(after or "")
    rows: list[DiffLine] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b).get_opcodes():
        if op == "equal":
            rows += [DiffLine("same", i + 1, j1 + i - i1 + 1, a[i]) for i in range(i1, i2)]
            continue
        rows += [DiffLine("removed", i + 1, None, a[i]) for i in range(i1, i2)]  # replace: old lines first
        rows += [DiffLine("added", None, j + 1, b[j]) for j in range(j1, j2)]
    return tuple(rows), cut_a or cut_b


def _sample_label(sample: Sample, scenarios: Sequence[dict], *, run: Run | None = None) -> str:
    spec = scenarios[sample.scenario_index] if sample.scenario_index < len(scenarios) else {}
    name = scenario_name(spec, sample.scenario_index)
    where = f"run #{run.pk} · " if run is not None else ""
    return f"{where}{name} · sample {sample.sample_index + 1} ({sample.outcome or sample.status})"


def _output_diff(a: Sample, b: Sample, a_label: str, b_label: str, row: int | None = None) -> OutputDiff:
    lines, truncated = line_diff(a.output, b.output)
    return OutputDiff(a=a, b=b, a_label=a_label, b_label=b_label, lines=lines, truncated=truncated, row=row)


def _pick(raw: str | None) -> int | None:
    raw = (raw or "").strip()
    return int(raw) if raw.isascii() and raw.isdigit() and len(raw) < 12 else None


def sample_diff(run: Run, a_id: str | None, b_id: str | None) -> OutputDiff:
    """The outputs of two samples of ``run`` (ids as the browser sent them), one query.

    Raises ValidationFailed when either id is missing, not a number, or not a sample of this run.
    """
    a_pk, b_pk = _pick(a_id), _pick(b_id)
    if a_pk is None or b_pk is None:
        raise ValidationFailed("Pick two samples to compare their outputs.", field="diff")
    found = {s.pk: s for s in Sample.objects.filter(run=run, pk__in={a_pk, b_pk})}
    if a_pk not in found or b_pk not in found:
        raise ValidationFailed("Pick two samples of this run.", field="diff")
    scenarios = run.test_version.scenarios
    a, b = found[a_pk], found[b_pk]
    return _output_diff(a, b, _sample_label(a, scenarios), _sample_label(b, scenarios))


def scenario_diff(
    comparison: Comparison,
    scenario: str | None = None,
    sample_a: str | None = None,
    sample_b: str | None = None,
) -> OutputDiff | None:
    """One sample of a scenario in each compared run, as the browser picked them: ``scenario`` indexes
    ``comparison.scenarios`` (default: the first both runs have), ``sample_a`` / ``sample_b`` are
    1-based sample numbers in runs a and b (default 1). None when no scenario is in both runs. One query.

    Raises ValidationFailed for a scenario not in both runs or a sample number the run does not have.
    """
    if not comparison.shared:
        return None
    index = _pick(scenario) if scenario else comparison.shared[0][0]
    number_a = _pick(sample_a) if sample_a else 1
    number_b = _pick(sample_b) if sample_b else 1
    if index is None or index >= len(comparison.scenarios):
        raise ValidationFailed("Pick a scenario of these runs.", field="scenario")
    row = comparison.scenarios[index]
    if row.a_index is None or row.b_index is None:
        raise ValidationFailed(f"{row.name} is not in both runs: there is nothing to diff.", field="scenario")
    slots = {
        comparison.a.pk: (row.a_index, (number_a or 0) - 1),
        comparison.b.pk: (row.b_index, (number_b or 0) - 1),
    }
    query = Q()
    for run_id, (scenario_index, sample_index) in slots.items():
        query |= Q(run_id=run_id, scenario_index=scenario_index, sample_index=sample_index)
    found = {s.run_id: s for s in Sample.objects.filter(query)}
    a, b = found.get(comparison.a.pk), found.get(comparison.b.pk)
    for side, run, sample, number in (("a", comparison.a, a, number_a), ("b", comparison.b, b, number_b)):
        if sample is None:
            raise ValidationFailed(
                f"Run #{run.pk} has no sample {number or '?'} of {row.name}.", field=f"sample_{side}"
            )
    return _output_diff(
        a,
        b,
        _sample_label(a, comparison.a.test_version.scenarios, run=comparison.a),
        _sample_label(b, comparison.b.test_version.scenarios, run=comparison.b),
        row=index,
    )


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
                "name": scenario_name(spec, index),
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
    k_max = run.test_version.samples_per_scenario
    figures = [consistency(row["passed"], row["failed"]) for row in rows]
    for row, figure, cells in zip(rows, figures, columns(figures, k_max), strict=True):
        row["consistency"] = figure
        row["cells"] = cells["cells"]
    return rows


def run_figures(rows: Sequence[dict]) -> dict:
    """The run's pass^k and pass@k (the mean over its scenarios) as table cells, from scenario_rows."""
    figure = run_consistency([row["consistency"] for row in rows])
    k_max = max((len(row["cells"]) for row in rows), default=0)
    return {"consistency": figure, "cells": columns([figure], k_max)[0]["cells"], "k_max": k_max}


@dataclass(frozen=True)
class BatchGroup:
    """The runs of one test in a batch (of the version the latest one ran) and their pooled figures."""

    test: Any
    runs: tuple[Run, ...]
    names: tuple[str, ...]
    samples_per_scenario: int
    figures: Any  # runs.consistency.Figures

    @property
    def complete(self) -> bool:
        return all(not r.is_active for r in self.runs)


def batch_groups(runs: Sequence[Run]) -> list[BatchGroup]:
    """Group a batch's runs (loaded with test and test_version) by test and pool each group's samples
    per scenario (trials: every run of the batch; a scenario's pass^k then goes up to runs × samples)."""
    groups: dict[int, list[Run]] = {}
    for run in sorted(runs, key=lambda r: (r.test_id, r.created_at, r.pk)):
        groups.setdefault(run.test_id, []).append(run)
    result = []
    for members in groups.values():
        latest = members[-1].test_version
        same = tuple(r for r in members if r.test_version_id == latest.pk)  # one scenario list to pool
        specs = latest.scenarios or []
        result.append(
            BatchGroup(
                test=members[-1].test,
                runs=same,
                names=tuple(scenario_names(specs)),
                samples_per_scenario=latest.samples_per_scenario,
                figures=batch_figures([r.summary for r in same], len(specs)),
            )
        )
    return result


def consistency_text(figure: Consistency) -> str:
    """pass^k at the largest k it has, e.g. "pass^5 0.5"; "—" without any determinate sample."""
    if not figure.pass_hat:
        return "—"
    k = max(figure.pass_hat)
    return f"pass^{k} {figure_text(figure.pass_hat[k])}"


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
        dropped = ()
        if a and b and "consistency" in a and "consistency" in b:
            dropped = tuple(regressed_ks(a["consistency"], b["consistency"]))
        rows.append(
            ScenarioRow(
                name=name,
                a=a,
                b=b,
                a_index=a["index"] if a else None,
                b_index=b["index"] if b else None,
                delta=round(rb - ra, 2) if ra is not None and rb is not None else None,
                regressed=dropped,
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


# Runs charted on a test's page (the newest ones, oldest first along the axis).
TREND_RUNS = 30


def consistency_trend(test, runs: Sequence[Run], versions: dict[int, list[tuple[int, str, int]]]) -> dict:
    """A test's runs along an axis: each scenario's pass rate and pass^k (as percents), and where the
    check versions a run used differ from the run before it.

    ``runs`` oldest first, with ``test_version`` loaded; ``versions``: run id -> [(library check id,
    check name, version number)] of its frozen checks. Scenarios are matched by name. k is the smallest
    samples-per-scenario among the runs, so every point is the same figure (a scenario with fewer
    determinate samples than k that time has no point). Returns the chart's data and the rows of the
    table that says the same in words."""
    k = min((r.test_version.samples_per_scenario for r in runs), default=0)
    names: list[str] = []
    points: dict[str, dict[str, list]] = {}
    marks, table = [], []
    previous = None
    for x, run in enumerate(runs):
        rows = scenario_rows(run)
        used = sorted(versions.get(run.pk, []))
        change = ""
        if previous is not None and used != previous:
            before = {cid: (name, n) for cid, name, n in previous}
            after = {cid: (name, n) for cid, name, n in used}
            parts = [
                f"{after[c][0]} v{before[c][1]}→v{after[c][1]}"
                if c in before
                else f"{after[c][0]} v{after[c][1]} added"
                for c in sorted(after)
                if before.get(c) != after[c]
            ]
            parts += [f"{before[c][0]} removed" for c in sorted(before) if c not in after]
            change = ", ".join(parts)
            marks.append({"x": x, "text": change})
        previous = used
        for row in rows:
            if row["name"] not in points:
                names.append(row["name"])
                points[row["name"]] = {"rate": [None] * len(runs), "hat": [None] * len(runs)}
            figure = row["consistency"].pass_hat.get(k)
            points[row["name"]]["rate"][x] = row["pass_rate"]
            points[row["name"]]["hat"][x] = None if figure is None else round(float(figure) * 100, 2)
        table.append(
            {
                "run": run,
                "change": change,
                "scenarios": [
                    {
                        "name": row["name"],
                        "rate": row["pass_rate"],
                        "hat": figure_text(row["consistency"].pass_hat.get(k)),
                    }
                    for row in rows
                ],
            }
        )
    chart = {
        "k": k,
        "x": list(range(len(runs))),
        "labels": [f"#{r.pk}" for r in runs],
        "marks": marks,
        "series": [
            {"label": name, "rate": points[name]["rate"], "hat": points[name]["hat"]} for name in names
        ],
    }
    return {"chart": chart, "table": table, "k": k}
