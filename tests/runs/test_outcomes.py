"""Sample and run outcome rules (runs/outcomes.py): tables and properties, no database."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from checks.kinds import Outcome
from runs.outcomes import SampleRecord, ScenarioSpec, sample_outcome, summarise_run, worst

P, F, E, IND = Outcome.PASS, Outcome.FAIL, Outcome.ERROR, Outcome.INDETERMINATE
outcomes = st.sampled_from([P, F, E, IND])


# --- sample outcome ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("results", "expected"),
    [
        ([], P),  # no required results: nothing required failed
        ([(P, True)], P),
        ([(P, True), (F, True)], F),
        ([(IND, True), (E, True)], E),
        ([(F, True), (E, True), (IND, True)], F),  # a known failure stays a failure
        ([(IND, True), (P, True)], IND),
        ([(F, False), (P, True)], P),  # advisory checks are never counted
        ([(E, False), (IND, False)], P),
        (([("fail", True), ("pass", True)]), F),  # plain strings work too
    ],
)
def test_sample_outcome(results, expected):
    assert sample_outcome(results) == expected


def test_sample_outcome_rejects_unknown_values():
    with pytest.raises(ValueError):
        sample_outcome([("passed", True)])
    with pytest.raises(ValueError):
        sample_outcome([("skipped", False)])


@given(st.lists(st.tuples(outcomes, st.booleans())))
def test_any_required_fail_makes_the_sample_fail(results):
    outcome = sample_outcome(results)
    required = [o for o, r in results if r]
    if F in required:
        assert outcome == F
    elif E in required:
        assert outcome == E
    elif IND in required:
        assert outcome == IND
    else:
        assert outcome == P
    assert sample_outcome(results + [(F, True)]) == F


@given(st.lists(st.tuples(outcomes, st.booleans())), st.randoms())
def test_sample_outcome_ignores_order(results, rnd):
    shuffled = list(results)
    rnd.shuffle(shuffled)
    assert sample_outcome(results) == sample_outcome(shuffled)


def test_worst():
    assert worst([]) == P
    assert worst(["indeterminate", "error"]) == E


# --- run result: tables -----------------------------------------------------------------------


def samples(*per_scenario: str) -> list[SampleRecord]:
    """'ppf' -> scenario 0: pass, pass, fail. Letters p f e i, '.' for pending."""
    letters = {"p": P, "f": F, "e": E, "i": IND, ".": None}
    return [SampleRecord(index, letters[c]) for index, text in enumerate(per_scenario) for c in text]


def spec(min_valid: int = 1, rate: int = 100) -> ScenarioSpec:
    return ScenarioSpec(min_valid=min_valid, required_pass_rate=rate)


@pytest.mark.parametrize(
    ("runs", "specs", "result"),
    [
        (["p"], [spec()], P),
        (["f"], [spec()], F),
        (["e"], [spec()], E),  # rule 1
        (["ee", "e"], [spec(), spec()], E),
        (["i"], [spec()], IND),  # no determinate sample: below the minimum
        (["ie"], [spec()], IND),  # errors and indeterminates count neither way
        (["pe"], [spec()], P),
        (["pi"], [spec(min_valid=2)], IND),  # rule 3
        (["pp"], [spec(min_valid=2)], P),
        (["ppf"], [spec(rate=67)], F),  # 2/3 = 66.67% < 67%: integers, 200 < 201
        (["ppf"], [spec(rate=66)], P),  # 200 >= 198
        (["pf"], [spec(rate=50)], P),  # exactly the rate passes
        (["pf"], [spec(rate=51)], F),
        (["p", "f"], [spec(), spec()], F),  # one healthy scenario cannot hide another
        (["p", "i"], [spec(), spec()], IND),
        (["f", "i"], [spec(), spec()], F),  # rule 2 before rule 3
        (["e", "f"], [spec(), spec()], F),  # not every sample errored
        (["e", "p"], [spec(), spec()], IND),  # scenario 0 has no determinate sample
        (["ep", "p"], [spec(), spec()], P),
        (["p", ""], [spec(), spec()], IND),  # a scenario with no samples has 0 determinate
        (["pppppppff"], [spec(rate=78)], F),  # 7/9 = 77.8%: 700 < 702
        (["pppppppff"], [spec(rate=77)], P),  # 700 < 693 is false
        (["p."], [spec(min_valid=2)], IND),  # pending samples count in total only
        (["e."], [spec()], E),  # every finished sample errored so far
        ([".."], [spec()], IND),
    ],
)
def test_run_result(runs, specs, result):
    assert summarise_run(samples(*runs), specs).result == result


def test_integer_comparison_at_the_boundary():
    # 8/9 = 88.888...%: required 89% fails (800 < 801), required 88% passes (800 >= 792).
    assert summarise_run(samples("ppppppppf"), [spec(rate=89)]).result == F
    assert summarise_run(samples("ppppppppf"), [spec(rate=88)]).result == P
    # 1/3 with 33%: 100 < 99 is false -> pass, although 33.33 vs 33 is a float-rounding trap at scale
    assert summarise_run(samples("pff"), [spec(rate=33)]).result == P
    assert summarise_run(samples("pff"), [spec(rate=34)]).result == F


def test_summary_counts_and_flags():
    records = [
        SampleRecord(0, P, {"c1": P, "c2": F}),
        SampleRecord(0, F, {"c1": F, "c2": F}),
        SampleRecord(0, E, {}),
        SampleRecord(0, IND, {"c1": IND}),
        SampleRecord(1, P, {"c1": P, "c2": "pass"}),
        SampleRecord(1, P, {"c1": P, "c2": P}),
        SampleRecord(1, None),
    ]
    summary = summarise_run(records, [spec(min_valid=1, rate=50), spec(min_valid=2, rate=100)])
    s0, s1 = summary.scenarios
    assert (s0.total, s0.passed, s0.failed, s0.errored, s0.indeterminate, s0.determinate) == (
        4,
        1,
        1,
        1,
        1,
        2,
    )
    assert s0.pass_rate == 50.0 and s0.meets_threshold is True and not s0.consistent and s0.flaky
    assert (s1.total, s1.done, s1.pending, s1.determinate) == (3, 2, 1, 2)
    assert s1.pass_rate == 100.0 and s1.consistent and not s1.flaky and s1.enough_valid
    assert summary.result == P
    assert (summary.done, summary.total, summary.complete) == (6, 7, False)
    c1, c2 = summary.checks["c1"], summary.checks["c2"]
    assert (c1.passed, c1.failed, c1.indeterminate, c1.determinate, c1.pass_rate) == (3, 1, 1, 4, 75.0)
    assert c1.flaky
    assert (c2.passed, c2.failed, c2.pass_rate) == (2, 2, 50.0)
    data = json.loads(json.dumps(summary.as_dict()))
    assert data["result"] == "pass"
    assert data["scenarios"][0]["pass_rate"] == 50.0
    assert data["scenarios"][0]["meets_threshold"] is True
    assert data["checks"]["c1"]["determinate"] == 4


def test_no_determinate_sample_has_no_rate():
    s = summarise_run(samples("ei"), [spec()]).scenarios[0]
    assert s.pass_rate is None and s.meets_threshold is None and not s.consistent and not s.flaky


def test_check_ids_become_json_keys():
    summary = summarise_run([SampleRecord(0, P, {17: P})], [spec()])
    assert summary.as_dict()["checks"] == {
        "17": {
            "passed": 1,
            "failed": 0,
            "errored": 0,
            "indeterminate": 0,
            "determinate": 1,
            "pass_rate": 100.0,
            "flaky": False,
            "flaky_scenarios": [],
        }
    }


def test_a_check_is_flaky_only_with_both_outcomes_on_one_scenario():
    # Fails 3/3 on scenario 0 and passes 3/3 on scenario 1: consistent on each, so not flaky.
    records = [SampleRecord(0, F, {"c": F})] * 3 + [SampleRecord(1, P, {"c": P})] * 3
    summary = summarise_run(records, [spec(), spec()])
    assert not any(s.flaky for s in summary.scenarios)
    check = summary.checks["c"]
    assert (check.passed, check.failed) == (3, 3)
    assert not check.flaky and check.flaky_scenarios == []
    assert summary.as_dict()["checks"]["c"]["flaky"] is False
    # Both outcomes on scenario 1 (and an errored sample, which counts neither way): flaky there.
    records += [SampleRecord(1, F, {"c": F}), SampleRecord(0, E, {"c": E})]
    check = summarise_run(records, [spec(), spec()]).checks["c"]
    assert check.flaky and check.flaky_scenarios == [1]


def test_bad_scenario_index_is_a_value_error():
    with pytest.raises(ValueError):
        summarise_run([SampleRecord(2, P)], [spec()])


# --- run result: properties -------------------------------------------------------------------

specs_strategy = st.lists(
    st.builds(ScenarioSpec, min_valid=st.integers(1, 5), required_pass_rate=st.integers(1, 100)),
    min_size=1,
    max_size=4,
)


@st.composite
def run_strategy(draw):
    specs = draw(specs_strategy)
    records = draw(
        st.lists(
            st.builds(SampleRecord, scenario_index=st.integers(0, len(specs) - 1), outcome=outcomes),
            max_size=12,
        )
    )
    return specs, records


def reference_result(records, specs):
    """DESIGN.md "Outcomes", written independently with fractions."""
    from fractions import Fraction

    if records and all(r.outcome == E for r in records):
        return E
    stats = []
    for i, s in enumerate(specs):
        mine = [r.outcome for r in records if r.scenario_index == i]
        passed, failed = mine.count(P), mine.count(F)
        stats.append((passed, passed + failed, s))
    if any(d and Fraction(p, d) < Fraction(s.required_pass_rate, 100) for p, d, s in stats):
        return F
    if any(d < s.min_valid for p, d, s in stats):
        return IND
    return P


@settings(max_examples=500)
@given(run_strategy())
def test_run_result_matches_the_written_rules(run):
    specs, records = run
    assert summarise_run(records, specs).result == reference_result(records, specs)


@settings(max_examples=300)
@given(run_strategy(), st.randoms())
def test_run_result_never_depends_on_sample_order(run, rnd):
    specs, records = run
    shuffled = list(records)
    rnd.shuffle(shuffled)
    a, b = summarise_run(records, specs), summarise_run(shuffled, specs)
    assert a.result == b.result
    assert a.as_dict() == b.as_dict()


@settings(max_examples=300)
@given(run_strategy(), st.data())
def test_adding_a_passing_sample_never_turns_a_pass_into_a_fail(run, data):
    specs, records = run
    before = summarise_run(records, specs).result
    index = data.draw(st.integers(0, len(specs) - 1))
    after = summarise_run(records + [SampleRecord(index, P)], specs).result
    if before == P:
        assert after == P
    assert after != F or before == F  # a pass can only help


@settings(max_examples=200)
@given(specs_strategy, st.data())
def test_all_error_runs_are_error(specs, data):
    n = data.draw(st.integers(1, 10))
    records = [SampleRecord(data.draw(st.integers(0, len(specs) - 1)), E) for _ in range(n)]
    assert summarise_run(records, specs).result == E


@settings(max_examples=200)
@given(run_strategy())
def test_a_failing_scenario_fails_the_run_unless_all_errored(run):
    specs, records = run
    summary = summarise_run(records, specs)
    for s in summary.scenarios:
        if s.determinate and s.passed * 100 < s.required_pass_rate * s.determinate:
            assert summary.result == F


def test_shuffled_large_run_is_stable():
    rnd = random.Random(7)
    records = [SampleRecord(rnd.randrange(3), rnd.choice([P, F, E, IND])) for _ in range(1000)]
    specs = [spec(3, 60), spec(1, 40), spec(2, 90)]
    expected = summarise_run(records, specs).as_dict()
    rnd.shuffle(records)
    assert summarise_run(records, specs).as_dict() == expected
