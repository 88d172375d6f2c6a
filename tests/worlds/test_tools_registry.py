"""A tool is one module (and, when long, private ``_`` modules of its own) plus one import line in
worlds/engine/tools/__init__.py."""

import ast
from pathlib import Path

import pytest

from worlds.engine import load_scene
from worlds.engine import schema as registry
from worlds.engine.refs import KINDS
from worlds.engine.schema import Field, RecordKind, StateCheck, Tool, get_tool, register

TOOLS = Path(registry.__file__).parent / "tools"


def test_each_tool_module_is_imported_on_its_own_line():
    # A private module (_slack_web.py, _git.py) belongs to the tool module that imports it.
    modules = sorted(p.stem for p in TOOLS.glob("*.py") if not p.stem.startswith("_"))
    tree = ast.parse((TOOLS / "__init__.py").read_text())
    imported = [
        a.name
        for n in tree.body
        if isinstance(n, ast.ImportFrom) and n.level == 1 and not n.module
        for a in n.names
    ]
    assert sorted(imported) == modules
    assert [t.name for t in registry.all_tools()] == ["slack", "github", "datadog", "pagerduty", "okta"]


def test_every_record_kind_of_the_reference_is_declared():
    declared = {r.kind for t in registry.all_tools() for r in t.records}
    declared |= {
        f.record for t in registry.all_tools() for r in t.records for f in r.fields.values() if f.record
    }
    assert declared | {"fault", "person"} == KINDS


def test_a_second_tool_with_the_same_name_is_refused():
    with pytest.raises(ValueError, match="already registered"):
        register(Tool(name="slack"))
    with pytest.raises(KeyError, match="unknown tool 'jira'"):
        get_tool("jira")


@pytest.fixture
def jira():
    tool = register(
        Tool(
            name="jira",
            records=(RecordKind("issue", "tickets", {"title": Field("str", required=True)}),),
            state_checks={
                "ticket": StateCheck(
                    {"ticket": Field("ref", required=True, kinds=("jira.issue",))}, scalar="ticket"
                )
            },
        )
    )
    yield tool
    del registry._REGISTRY["jira"]


def test_a_registered_tool_is_validated_like_the_others(jira):
    text = """\
scene: s
task: t
world:
  jira:
    tickets: { t1: { title: Broken } }
checks:
  - { id: a, state: { jira.ticket: $t1 } }
"""
    scene = load_scene(text)
    assert scene.records["t1"].kind == "issue" and scene.records["t1"].tool == "jira"
    assert scene.checks[0].spec == {"check": "jira.ticket", "ticket": "t1"}
