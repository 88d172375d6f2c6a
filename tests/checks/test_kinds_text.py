"""text_includes, text_equals, text_matches: table-driven, no database."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from checks.kinds import ConfigError, Evidence, Outcome, evaluate, get_kind

PASS, FAIL, INDET = Outcome.PASS, Outcome.FAIL, Outcome.INDETERMINATE


def run(kind: str, config: dict, output) -> object:
    return evaluate(kind, get_kind(kind).validate_config(config), Evidence(output=output))


@pytest.mark.parametrize(
    ("config", "output", "outcome"),
    [
        ({"text": "refund"}, "We will refund you.", PASS),
        ({"text": "refund"}, "We will Refund you.", FAIL),  # case-sensitive by default
        ({"text": "refund", "case_sensitive": False}, "We will REFUND you.", PASS),
        ({"text": "STRASSE", "case_sensitive": False}, "Hauptstraße 1", PASS),  # Unicode case folding
        ({"text": "straße"}, "Hauptstraße 1", PASS),
        ({"text": "Straße"}, "Hauptstraße 1", FAIL),
        ({"text": "é"}, "café", PASS),
        ({"text": "😀"}, "ok 😀", PASS),
        ({"text": "x"}, "", FAIL),  # empty output
        ({"text": " "}, "a b", PASS),  # whitespace is text too
        ({"text": "line2"}, "line1\nline2", PASS),
        ({"text": "refund"}, "refun", FAIL),
        ({"text": "refund"}, None, INDET),  # no output reported
        ({"text": "refund"}, 42, INDET),  # output that is not text
    ],
)
def test_text_includes(config, output, outcome):
    verdict = run("text_includes", config, output)
    assert verdict.outcome == outcome
    assert verdict.evidence == ()
    assert verdict.explanation.startswith("Expected the output to include")
    assert verdict.explanation.endswith(".")


def test_text_includes_explanation_holds_expected_and_actual():
    verdict = run("text_includes", {"text": "refund"}, "No money back.")
    assert verdict.expected == 'the output to include "refund"'
    assert verdict.actual == 'the output was "No money back."'
    assert (
        verdict.explanation == 'Expected the output to include "refund", but the output was "No money back.".'
    )


def test_text_includes_pass_reports_position():
    verdict = run("text_includes", {"text": "b"}, "aab")
    assert verdict.details == {"position": 2}
    assert "character 2" in verdict.actual


def test_long_output_is_cut_in_sentences():
    verdict = run("text_includes", {"text": "zzz"}, "a" * 100_000)
    assert len(verdict.explanation) < 400
    assert "100,000 characters" in verdict.actual


@pytest.mark.parametrize(
    ("expected", "output", "outcome"),
    [
        ("Hello", "Hello", PASS),
        ("Hello", "hello", FAIL),
        ("Hello", "Hello ", FAIL),  # no trimming
        ("Hello", "Hello\n", FAIL),
        ("", "", PASS),  # expecting an empty answer
        ("", "x", FAIL),
        ("x", "", FAIL),
        ("naïve café", "naïve café", PASS),
        ("naïve café", "naive cafe", FAIL),
        ("Hello", None, INDET),
    ],
)
def test_text_equals(expected, output, outcome):
    assert run("text_equals", {"expected": expected}, output).outcome == outcome


@pytest.mark.parametrize(
    ("expected", "output", "at"),
    [
        ("Hello", "Help", 3),
        ("abc", "abcdef", 3),
        ("abcdef", "abc", 3),
        ("x", "y", 0),
        ("a" * 5000 + "b", "a" * 5001, 5000),
    ],
)
def test_text_equals_reports_first_difference(expected, output, at):
    verdict = run("text_equals", {"expected": expected}, output)
    assert verdict.outcome == FAIL
    assert verdict.details["first_difference"] == at
    assert f"first difference at character {at:,}" in verdict.explanation


@pytest.mark.parametrize(
    ("config", "output", "outcome"),
    [
        ({"pattern": r"EC-\d{4}"}, "Order EC-1042 found", PASS),
        ({"pattern": r"^EC-\d{4}$"}, "Order EC-1042 found", FAIL),  # anchors are the user's choice
        ({"pattern": r"^EC-\d{4}$"}, "EC-1042", PASS),
        ({"pattern": "refund"}, "REFUND", FAIL),
        ({"pattern": "refund", "case_sensitive": False}, "REFUND", PASS),
        ({"pattern": "caf."}, "café", PASS),  # . matches one character, not one byte
        ({"pattern": "É", "case_sensitive": False}, "café", PASS),
        ({"pattern": "(?i)refund"}, "ReFuNd", PASS),
        ({"pattern": "a|b"}, "", FAIL),
        ({"pattern": "x*"}, "", PASS),  # matches the empty string
        ({"pattern": "x"}, None, INDET),
    ],
)
def test_text_matches(config, output, outcome):
    assert run("text_matches", config, output).outcome == outcome


def test_text_matches_reports_character_span_in_unicode_text():
    verdict = run("text_matches", {"pattern": "ß+"}, "日本 straßße")
    assert verdict.details == {"start": 7, "end": 9}
    assert '"ßß"' in verdict.actual


def test_text_matches_is_linear_on_pathological_pattern():
    # (a+)+$ on "aaaa...b" takes exponential time in a backtracking engine; RE2 answers at once.
    verdict = run("text_matches", {"pattern": "(a+)+$"}, "a" * 50_000 + "b")
    assert verdict.outcome == FAIL


@pytest.mark.parametrize(
    ("kind", "config", "field", "message"),
    [
        ("text_includes", {}, "text", "required"),
        ("text_includes", {"text": ""}, "text", "must not be empty"),
        ("text_includes", {"text": 3}, "text", "must be a string"),
        ("text_includes", {"text": "a", "case_sensitive": "no"}, "case_sensitive", "true or false"),
        ("text_includes", {"text": "a", "ignore_case": True}, "ignore_case", "unknown field"),
        ("text_equals", {}, "expected", "required"),
        ("text_equals", {"expected": None}, "expected", "required"),
        ("text_equals", {"expected": ["a"]}, "expected", "must be a string"),
        ("text_matches", {"pattern": "("}, "pattern", "missing )"),
        ("text_matches", {"pattern": r"(a)\1"}, "pattern", "backreferences are not supported"),
        ("text_matches", {"pattern": "(?=a)b"}, "pattern", "lookaround is not supported"),
        ("text_matches", {"pattern": "(?<!a)b"}, "pattern", "not a valid RE2 pattern"),
        ("text_matches", {"pattern": "a{2000}"}, "pattern", "invalid repetition size"),
        ("text_matches", {"pattern": ""}, "pattern", "must not be empty"),
        ("text_matches", {"pattern": "a" * 3000}, "pattern", "too long"),
    ],
)
def test_text_config_errors_name_the_field(kind, config, field, message):
    with pytest.raises(ConfigError) as caught:
        get_kind(kind).validate_config(config)
    assert field in caught.value.errors
    assert message in caught.value.errors[field]
    assert str(caught.value).startswith(f"{field}: ") or f"; {field}: " in str(caught.value)


@pytest.mark.parametrize(
    ("kind", "raw", "normalised"),
    [
        ("text_includes", {"text": "a"}, {"text": "a", "case_sensitive": True}),
        ("text_includes", {"text": "a", "case_sensitive": None}, {"text": "a", "case_sensitive": True}),
        ("text_includes", {"text": "a", "case_sensitive": False}, {"text": "a", "case_sensitive": False}),
        ("text_equals", {"expected": ""}, {"expected": ""}),
        ("text_matches", {"pattern": "a+"}, {"pattern": "a+", "case_sensitive": True}),
    ],
)
def test_text_configs_are_normalised(kind, raw, normalised):
    assert get_kind(kind).validate_config(raw) == normalised


@given(st.text(max_size=30), st.text(max_size=30))
def test_first_difference_is_the_common_prefix_length(a, b):
    from checks.kinds.text_equals import first_difference

    n = first_difference(a, b)
    assert a[:n] == b[:n]
    assert n == min(len(a), len(b)) or a[n] != b[n]


@given(st.text(max_size=50), st.text(min_size=1, max_size=5), st.booleans())
def test_text_includes_agrees_with_python(output, text, case_sensitive):
    verdict = run("text_includes", {"text": text, "case_sensitive": case_sensitive}, output)
    found = text in output if case_sensitive else text.casefold() in output.casefold()
    assert verdict.outcome == (PASS if found else FAIL)
