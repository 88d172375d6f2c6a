# ruff: noqa: E501 - the JSON scene is written on the lines its line numbers refer to
import math

import pytest

from worlds.engine.loader import load_tree
from worlds.engine.problems import SceneInvalid


def problems_of(text, file="s.yaml"):
    with pytest.raises(SceneInvalid) as info:
        load_tree(text, file)
    return info.value.lines()


@pytest.mark.parametrize(
    "text, expected",
    [
        ("a: yes", "yes"),
        ("a: no", "no"),
        ("a: on", "on"),
        ("a: off", "off"),
        ("a: Yes", "Yes"),
        ("a: y", "y"),
        ("a: true", True),
        ("a: false", False),
        ("a: True", True),
        ("a: ~", None),
        ("a: null", None),
        ("a: 12", 12),
        ("a: 012", 12),
        ("a: 0x1F", 31),
        ("a: 0o17", 15),
        ("a: 1.5", 1.5),
        ("a: 1_000", 1000),
        ("a: '1'", "1"),
        ("a: 2026-03-02T09:00:00Z", "2026-03-02T09:00:00Z"),
        ("a: 5m", "5m"),
        ("a: -10m", "-10m"),
    ],
)
def test_yaml_1_2_scalars(text, expected):
    assert load_tree(text).data == {"a": expected}


def test_infinity_is_a_float():
    assert math.isinf(load_tree("a: .inf").data["a"])


def test_duplicate_keys_name_both_lines():
    assert problems_of("a: 1\nb:\n  c: 1\n  d: 2\n  c: 3\na: 2\n") == [
        "s.yaml:5: b.c: duplicate key 'c' (first on line 3)",
        "s.yaml:6: a: duplicate key 'a' (first on line 1)",
    ]


def test_duplicate_keys_in_flow_maps_and_json():
    assert problems_of('{"a": 1,\n "a": 2}', "s.json") == ["s.json:2: a: duplicate key 'a' (first on line 1)"]
    assert problems_of("x: {k: 1, k: 2}") == ["s.yaml:1: x.k: duplicate key 'k' (first on line 1)"]


def test_malformed_yaml_is_one_problem_on_its_line():
    [problem] = problems_of("a: 1\nb: [1, 2\nc: 3\n")
    assert problem.startswith("s.yaml:3: malformed YAML or JSON: ")


def test_malformed_json_is_one_problem_on_its_line():
    [problem] = problems_of('{\n  "a": [1, 2\n}\n', "s.json")
    assert problem.startswith("s.json:3: malformed YAML or JSON: ")


def test_json_goes_through_the_same_loader_with_lines():
    loaded = load_tree(
        '{\n  "scene": "x",\n  "checks": [\n    {"id": "a",\n     "state": {"slack.message": {"channel": "$c"}}}\n  ]\n}',
        "s.json",
    )
    assert loaded.data == {
        "scene": "x",
        "checks": [{"id": "a", "state": {"slack.message": {"channel": "$c"}}}],
    }
    assert loaded.line("scene") == 2
    assert loaded.line("checks[0]") == 4
    assert loaded.line("checks[0].state.slack.message.channel") == 5


YAML = """\
scene: x
checks:
  - id: a
    trace: { called: "GET /x" }
  - id: b
    state:
      slack.message:
        channel: $c
        from: $u
"""


@pytest.mark.parametrize(
    "path, line",
    [
        ("scene", 1),
        ("checks", 2),
        ("checks[0]", 3),
        ("checks[0].trace.called", 4),
        ("checks[1].id", 5),
        ("checks[1].state.slack.message", 7),
        ("checks[1].state.slack.message.channel", 8),
        ("checks[1].state.slack.message.from", 9),
        ("checks[1].state.slack.message.text_contains", 7),
        ("checks[5]", 2),
        ("", 1),
        ("nowhere", 1),
    ],
)
def test_line_lookup_by_field_path(path, line):
    assert load_tree(YAML).line(path) == line


def test_keys_become_strings_and_empty_is_none():
    assert load_tree("12: a\ntrue: b\n").data == {"12": "a", "true": "b"}
    assert load_tree("").data is None


BLOCK_SCALARS = """\
folded: >-
  The "orders 5xx" monitor is alerting (your email is
  bot@acme.example). Acknowledge it.
kept: >+
  one
    more indented
  two

  after a blank line

literal: |
  line one
  line two
quoted: "a\\abell"
"""


def test_block_scalars_read_as_any_yaml_1_2_reader_reads_them():
    # ruamel's safe loader is the oracle: the round-trip nodes we read carry fold marks it never shows.
    from ruamel.yaml import YAML

    expected = YAML(typ="safe", pure=True).load(BLOCK_SCALARS)
    data = load_tree(BLOCK_SCALARS).data
    assert data == expected
    assert data["folded"] == 'The "orders 5xx" monitor is alerting (your email is bot@acme.example). Acknowledge it.'
    assert data["kept"] == "one\n  more indented\ntwo\nafter a blank line\n\n"
    assert data["quoted"] == "a\abell"  # an escaped BEL in a quoted scalar is text and stays


def test_the_incident_demo_task_reaches_the_agent_without_control_characters():
    from pathlib import Path

    import worlds

    text = (Path(worlds.__file__).parent / "scenes" / "orders-5xx.yaml").read_text()
    task = load_tree(text, "orders-5xx.yaml").data["task"]
    assert "(your PagerDuty email is bot@acme.example)" in task
    assert not any(ord(c) < 32 for c in task)
