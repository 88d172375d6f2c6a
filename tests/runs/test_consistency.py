"""pass@k and pass^k (runs/outcomes.py): tables against hand-computed values, no database."""

from __future__ import annotations

from fractions import Fraction as Fr

import pytest

from checks.kinds import Outcome
from runs.outcomes import (
    SampleRecord,
    ScenarioSpec,
    consistency,
    pass_at_k,
    pass_hat_k,
    run_consistency,
    summarise_run,
)

P, F, E, IND = Outcome.PASS, Outcome.FAIL, Outcome.ERROR, Outcome.INDETERMINATE


# (n determinate, c passed, k) -> pass^k, pass@k, worked out by hand:
#   pass^k = C(c, k) / C(n, k);  pass@k = 1 - C(n - c, k) / C(n, k)
@pytest.mark.parametrize(
    ("n", "c", "k", "hat", "at"),
    [
        (5, 3, 1, Fr(3, 5), Fr(3, 5)),  # 3/5 both ways at k = 1
        (5, 3, 2, Fr(3, 10), Fr(9, 10)),  # C(3,2)=3 / C(5,2)=10; 1 - C(2,2)=1 / 10
        (5, 3, 3, Fr(1, 10), Fr(1)),  # C(3,3)=1 / C(5,3)=10; C(2,3)=0 so pass@3 = 1
        (5, 3, 4, Fr(0), Fr(1)),  # four draws cannot all pass with three passes
        (5, 3, 5, Fr(0), Fr(1)),
        (5, 5, 1, Fr(1), Fr(1)),  # c = n: always 1
        (5, 5, 5, Fr(1), Fr(1)),
        (4, 0, 1, Fr(0), Fr(0)),  # c = 0: always 0
        (4, 0, 4, Fr(0), Fr(0)),
        (4, 2, 2, Fr(1, 6), Fr(5, 6)),  # C(2,2)=1 / C(4,2)=6
        (3, 2, 2, Fr(1, 3), Fr(1)),  # 5 samples with 2 errored: n = 3 determinate
        (3, 2, 3, Fr(0), Fr(1)),
        (1, 1, 1, Fr(1), Fr(1)),
        (1, 0, 1, Fr(0), Fr(0)),
        (10, 9, 10, Fr(0), Fr(1)),
        (10, 9, 9, Fr(1, 10), Fr(1)),  # C(9,9)=1 / C(10,9)=10
    ],
)
def test_estimators_match_hand_computed_values(n, c, k, hat, at):
    assert pass_hat_k(n, c, k) == hat
    assert pass_at_k(n, c, k) == at


@pytest.mark.parametrize(("n", "c", "k"), [(2, 1, 3), (0, 0, 1), (3, 3, 4), (5, 3, 0)])
def test_k_outside_1_to_n_has_no_value(n, c, k):
    assert pass_hat_k(n, c, k) is None
    assert pass_at_k(n, c, k) is None


@pytest.mark.parametrize(("n", "c", "k"), [(2, 3, 1), (-1, 0, 1), (3, 1, -1), (3, 1.0, 1)])
def test_impossible_counts_are_refused(n, c, k):
    with pytest.raises(ValueError):
        pass_hat_k(n, c, k)
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)


def test_a_scenario_has_one_value_per_k_from_1_to_n_and_none_above():
    figures = consistency(passed=3, failed=2).as_dict()
    assert figures == {
        "determinate": 5,
        "pass_hat_k": {"1": 0.6, "2": 0.3, "3": 0.1, "4": 0.0, "5": 0.0},
        "pass_at_k": {"1": 0.6, "2": 0.9, "3": 1.0, "4": 1.0, "5": 1.0},
    }
    assert consistency(passed=0, failed=0).as_dict() == {"determinate": 0, "pass_hat_k": {}, "pass_at_k": {}}
    assert consistency(passed=1, failed=2).as_dict()["pass_hat_k"] == {"1": 0.3333, "2": 0.0, "3": 0.0}


def test_errored_and_indeterminate_samples_count_neither_way():
    # One scenario, 5 samples: 2 passed, 1 failed, 1 errored, 1 indeterminate -> n = 3, c = 2.
    summary = summarise_run(
        [SampleRecord(0, o) for o in (P, F, E, IND, P)], [ScenarioSpec(min_valid=1, required_pass_rate=50)]
    )
    scenario = summary.scenarios[0]
    figures = consistency(scenario.passed, scenario.failed)
    assert figures.determinate == 3
    assert figures.pass_hat == {1: Fr(2, 3), 2: Fr(1, 3), 3: Fr(0)}
    assert figures.pass_at == {1: Fr(2, 3), 2: Fr(1), 3: Fr(1)}


def test_the_run_averages_its_scenarios():
    # Always passes (5 of 5) and passes 3 of 5: pass^1 = (1 + 3/5) / 2, pass^3 = (1 + 1/10) / 2, pass^5 = 1/2.
    run = run_consistency([consistency(5, 0), consistency(3, 2)])
    assert run.pass_hat == {1: Fr(4, 5), 2: Fr(13, 20), 3: Fr(11, 20), 4: Fr(1, 2), 5: Fr(1, 2)}
    assert run.pass_at == {1: Fr(4, 5), 2: Fr(19, 20), 3: Fr(1), 4: Fr(1), 5: Fr(1)}
    assert run.as_dict()["pass_hat_k"] == {"1": 0.8, "2": 0.65, "3": 0.55, "4": 0.5, "5": 0.5}
    assert run.determinate == 10


def test_the_run_has_values_only_up_to_its_smallest_scenario():
    # A scenario with 2 determinate samples (3 errored) limits the run to k <= 2.
    run = run_consistency([consistency(5, 0), consistency(1, 1)])
    assert run.as_dict()["pass_hat_k"] == {"1": 0.75, "2": 0.5}
    # A scenario with no determinate sample: the run has no figure at all.
    assert run_consistency([consistency(5, 0), consistency(0, 0)]).as_dict()["pass_hat_k"] == {}
    assert run_consistency([]).as_dict() == {"determinate": 0, "pass_hat_k": {}, "pass_at_k": {}}
