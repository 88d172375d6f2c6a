"""runs.compare without the database: how two runs' scenarios pair up and how outcome counts read."""

from __future__ import annotations

import pytest

from runs.compare import DIFF_MAX_CHARS, DIFF_MAX_LINES, counts_text, line_diff, match_scenarios


def _rows(*named: tuple[str, float | None]) -> list[dict]:
    return [{"index": i, "name": name, "pass_rate": rate} for i, (name, rate) in enumerate(named)]


def _pairs(rows) -> list[tuple]:
    return [(r.name, r.a_index, r.b_index, r.delta) for r in rows]


def test_scenarios_pair_by_name_whatever_their_position():
    a = _rows(("Order", 100.0), ("Refund", 50.0))
    b = _rows(("Refund", 75.0), ("Order", 0.0))
    assert _pairs(match_scenarios(a, b)) == [("Order", 0, 1, -100.0), ("Refund", 1, 0, 25.0)]


def test_a_renamed_scenario_pairs_by_position_and_new_ones_come_last():
    a = _rows(("Order", 100.0), ("Old name", 50.0))
    b = _rows(("Order", 100.0), ("New name", None), ("Extra", 20.0))
    assert _pairs(match_scenarios(a, b)) == [
        ("Order", 0, 0, 0.0),
        ("Old name", 1, 1, None),  # no pass rate on one side: no change figure
        ("Extra", None, 2, None),
    ]


def test_a_position_whose_name_a_still_uses_is_not_paired():
    a = _rows(("Order", 100.0), ("Gone", 50.0))
    b = _rows(("Hello", 10.0), ("Order", 90.0))
    rows = match_scenarios(a, b)
    # b's scenario at "Gone"'s position is "Order", which a uses: "Gone" stays unpaired, "Hello" comes last.
    assert _pairs(rows) == [("Order", 0, 1, -10.0), ("Gone", 1, None, None), ("Hello", None, 0, None)]
    assert rows[1].a is a[1] and rows[1].b is None


@pytest.mark.parametrize(
    ("counts", "text"),
    [
        (None, "not run"),
        ({}, "not run"),
        ({"pass": 2}, "2 pass"),
        ({"error": 1, "pass": 2, "fail": 0, "indeterminate": 3}, "2 pass, 1 error, 3 indeterminate"),
    ],
)
def test_counts_text(counts, text):
    assert counts_text(counts) == text


def _ops(before: str, after: str) -> list[tuple]:
    lines, _ = line_diff(before, after)
    return [(line.op, line.a_line, line.b_line, line.text) for line in lines]


def test_line_diff_marks_removed_and_added_lines_with_their_numbers():
    assert _ops("Order EC-1042\nis in transit.\nBye", "Which order?\nis in transit.\nBye\nPS") == [
        ("removed", 1, None, "Order EC-1042"),
        ("added", None, 1, "Which order?"),
        ("same", 2, 2, "is in transit."),
        ("same", 3, 3, "Bye"),
        ("added", None, 4, "PS"),
    ]
    assert _ops("", "") == [] and _ops("same", "same") == [("same", 1, 1, "same")]
    assert _ops("", "new") == [("added", None, 1, "new")]


def test_line_diff_reads_a_bounded_part_of_huge_outputs():
    lines, truncated = line_diff("x\n" * (DIFF_MAX_LINES + 5), "y" * (DIFF_MAX_CHARS * 3))
    assert truncated and len(lines) == DIFF_MAX_LINES + 1
    assert len(lines[-1].text) == DIFF_MAX_CHARS
    assert line_diff("a", "b")[1] is False
