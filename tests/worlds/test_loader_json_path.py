"""The JSON fast path of the scene loader reads exactly what ruamel.yaml reads: the same data and the
same line for every field path, or it declines and ruamel reads the text (with its problems)."""

import json
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from bench.worlds.bench_worlds import incident_scene_dict, scene_dict
from worlds.engine import loader
from worlds.engine.loader import load_tree
from worlds.engine.problems import SceneInvalid

ROOT = Path(__file__).resolve().parents[2]
SCENES = sorted((ROOT / "worlds" / "scenes").glob("*.yaml")) + [ROOT / "tests/worlds/scenes/example.yaml"]


def _plain(path: Path):
    return json.loads(json.dumps(YAML(typ="safe", pure=True).load(path.read_text()), default=str))


DOCUMENTS = [
    *[pytest.param(_plain(p), id=p.name) for p in SCENES],
    pytest.param(scene_dict(trials=10), id="bench-200"),
    pytest.param(incident_scene_dict(), id="bench-incident"),
    pytest.param(
        {
            "numbers": [0, -0, 12, -7, 1.5, -0.25, 1e5, 1.5e-3, 10**22, 2.5e300],
            "strings": ["", "a\"b", "back\\slash", "tab\tnl\nuni é ☃", "\u00e9/", "ends with \\"],
            "literals": [True, False, None],
            "nested": {"a": {"b": [[], {}, [{}], {"c": [1, [2, [3]]]}]}, "dotted.key": {"x": 1}},
            "a.b": 1,
            "a": {"b": 2},
        },
        id="edge-values",
    ),
]


@pytest.mark.parametrize("doc", DOCUMENTS)
@pytest.mark.parametrize("indent", [None, 2, 4], ids=["one-line", "indent-2", "indent-4"])
def test_the_fast_path_reads_what_ruamel_reads(doc, indent):
    for text in (json.dumps(doc, indent=indent), json.dumps(doc, indent=indent, ensure_ascii=False)):
        fast = loader._json_tree(text, "s.json")
        assert fast is not None, "plain JSON takes the fast path"
        slow = loader._yaml_tree(text, "s.json")
        assert fast.data == slow.data
        assert fast.lines == slow.lines
        assert load_tree(text, "s.json").lines == slow.lines


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('{"a": 1, "a": 2}', id="duplicate-key"),
        pytest.param('{"a": 1,}', id="trailing-comma"),
        pytest.param('{"a": NaN}', id="nan"),
        pytest.param('{"a": 01}', id="leading-zero"),
        pytest.param('{"a": "\\ud83d\\ude00"}', id="surrogate-pair"),
        pytest.param('{"a": "x\\x41"}', id="yaml-only-escape"),
        pytest.param('{"a": 1}\r\n', id="crlf"),
        pytest.param('{\t"a": 1}', id="tab"),
        pytest.param('{"a": 1} # a comment', id="yaml-comment"),
        pytest.param('{"a": \x85 1}', id="nel"),
        pytest.param("{a: 1}", id="flow-yaml"),
        pytest.param("a: 1", id="block-yaml"),
        pytest.param('["a"]', id="not-an-object"),
        pytest.param('{"a": [1, 2}', id="unbalanced"),
    ],
)
def test_what_the_fast_path_is_not_sure_of_goes_to_ruamel(text):
    assert loader._json_tree(text, "s.json") is None
    try:
        slow = loader._yaml_tree(text, "s.json")
    except SceneInvalid as exc:
        with pytest.raises(SceneInvalid) as info:
            load_tree(text, "s.json")
        assert info.value.lines() == exc.lines()
    else:
        loaded = load_tree(text, "s.json")
        assert (loaded.data, loaded.lines) == (slow.data, slow.lines)


def test_a_duplicate_key_in_json_still_names_both_lines():
    text = '{\n  "scene": "x",\n  "scene": "y"\n}\n'
    with pytest.raises(SceneInvalid) as info:
        load_tree(text, "s.json")
    assert info.value.lines() == ["s.json:3: scene: duplicate key 'scene' (first on line 2)"]
