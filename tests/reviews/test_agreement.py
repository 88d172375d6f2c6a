"""The agreement figures, table-tested (no database): judge (or first reviewer) first, human second."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from reviews.agreement import Confusion, agreement, cohens_kappa, confusion, percent_agreement

P, F = "pass", "fail"
REPO = Path(__file__).resolve().parents[2]


def pairs(pp=0, pf=0, fp=0, ff=0):
    return [(P, P)] * pp + [(P, F)] * pf + [(F, P)] * fp + [(F, F)] * ff


@pytest.mark.parametrize(
    ("rows", "matrix"),
    [
        ([], Confusion()),
        (pairs(pp=1), Confusion(pass_pass=1)),
        ([(P, F), (F, P), (F, P)], Confusion(pass_fail=1, fail_pass=2)),
        (pairs(pp=20, pf=5, fp=10, ff=15), Confusion(20, 5, 10, 15)),
    ],
)
def test_confusion_counts_judge_first_human_second(rows, matrix):
    assert confusion(rows) == matrix
    assert confusion(rows).total == len(rows)


@pytest.mark.parametrize(
    ("rows", "percent", "kappa"),
    [
        # no labels: nothing to say
        ([], None, None),
        # one class only (both raters): chance agreement is 1, kappa undefined
        (pairs(pp=3), 100.0, None),
        (pairs(ff=1), 100.0, None),
        # perfect agreement over both classes
        (pairs(pp=1, ff=1), 100.0, 1.0),
        # perfect disagreement
        (pairs(pf=1, fp=1), 0.0, -1.0),
        # the judge always passes, people always fail: no agreement, and none beyond chance
        (pairs(pf=2), 0.0, 0.0),
        # the judge always passes, people split: agreement is only chance
        (pairs(pp=1, pf=1), 50.0, 0.0),
        # p_o = 3/4, p_e = (3*2 + 1*2)/16 = 1/2
        (pairs(pp=2, pf=1, ff=1), 75.0, 0.5),
        # the textbook table: p_o = 0.7, p_e = 0.5
        (pairs(pp=20, pf=5, fp=10, ff=15), 70.0, 0.4),
        # p_o = 1/3, p_e = (2*2 + 1*1)/9 = 5/9 -> (3*1 - 5)/(9 - 5)
        (pairs(pp=1, pf=1, fp=1), 100 / 3, -0.5),
    ],
)
def test_agreement_and_kappa(rows, percent, kappa):
    assert percent_agreement(rows) == (None if percent is None else pytest.approx(percent))
    assert cohens_kappa(rows) == (None if kappa is None else pytest.approx(kappa))
    figures = agreement(rows)
    assert (figures.agreement, figures.kappa) == (percent_agreement(rows), cohens_kappa(rows))
    assert figures.count == len(rows)
    assert figures.disagreed == figures.confusion.pass_fail + figures.confusion.fail_pass


def test_figures_take_a_confusion_matrix_too():
    matrix = Confusion(20, 5, 10, 15)
    assert percent_agreement(matrix) == 70.0 and cohens_kappa(matrix) == pytest.approx(0.4)
    assert matrix.as_dict() == {"pass_pass": 20, "pass_fail": 5, "fail_pass": 10, "fail_fail": 15}


@pytest.mark.parametrize("bad", [("pass", "indeterminate"), ("error", "pass"), ("PASS", "pass")])
def test_only_pass_and_fail_are_ratings(bad):
    with pytest.raises(ValueError, match="pass or fail"):
        confusion([bad])


def test_the_agreement_module_loads_no_django():
    code = "import sys, reviews.agreement; print(any(m.startswith('django') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == "False"
