# ruff: noqa: E501 - the reference's check examples are copied as written
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.support.scenes import REFERENCE_GITHUB_CHECKS, REFERENCE_PROCESS_CHECKS, REFERENCE_TRACE_CHECKS
from worlds.engine import load_scene

EXAMPLE = Path(__file__).parent / "scenes" / "example.yaml"


def test_worlds_md_example_loads_clean():
    scene = load_scene(EXAMPLE.read_text(), "example.yaml")
    assert scene.name == "support-export-question"
    assert scene.start == datetime(2026, 3, 2, 9, 0, tzinfo=UTC) and scene.per_call == timedelta(seconds=1)
    assert scene.trials == 1 and scene.pass_rate == 100 and scene.min_valid == 1
    assert scene.tools == ["slack", "github", "datadog", "pagerduty", "okta", "crm"]
    assert scene.required == ("answered", "asked_laura")


def test_example_is_normalised():
    scene = load_scene(EXAMPLE.read_text(), "example.yaml")
    question = scene.records["slack_question"]
    assert (question.tool, question.kind, question.line) == ("slack", "message", 17)
    assert question.fields["at"] == timedelta(minutes=-10)
    assert question.fields["channel"] == "slack_support" and question.fields["from"] == "slack_laura"
    repo = scene.world["github"]["repos"]["github_orders"].fields
    assert repo["collaborators"] == {"gh_ben": "admin", "gh_bot": "write"}
    assert repo["branches"] == {"main": "c_bad", "fix-runbook": "c_runbook"}
    assert scene.records["c_bad"].kind == "commit" and scene.records["c_bad"].fields["parent"] == "c_base"
    assert scene.records["pd_old"].fields["created"] == timedelta(hours=-2)
    assert scene.world["pagerduty"]["escalation_policies"]["ep_orders"].fields["rules"] == [["pd_mike"]]
    assert scene.other_tools["crm"].answers == {
        "GET /crm/customers/*": {"status": 200, "body": {"plan": "pro"}}
    }
    assert scene.people["ben"].decisions["fix_now"].after == (("laura", "beta_on"),)
    assert scene.people["mike"].decisions["severity"].asked_by == ("severity", "priority")
    [fault] = scene.faults
    assert fault.id == "exports_down" and fault.at == timedelta(0)
    assert fault.effects["datadog.monitor"] == {"monitor": "datadog_orders", "is": "Alert"}
    assert fault.resolved_when == {"check": "github.production", "repo": "github_orders", "commit": "c_base"}
    answered, asked = scene.checks
    assert answered.spec == {
        "check": "slack.message",
        "channel": "slack_support",
        "from": "slack_bot",
        "in_thread_of": "slack_question",
    }
    assert asked.kind == "revealed" and asked.spec == [("laura", "workspace"), ("laura", "beta_on")]


def test_the_same_scene_as_json_loads_the_same():
    import json

    from worlds.engine.loader import load_tree

    data = load_tree(EXAMPLE.read_text()).data
    from_json = load_scene(json.dumps(data, indent=2), "example.json")
    from_yaml = load_scene(EXAMPLE.read_text(), "example.yaml")
    assert from_json.checks == [
        c.__class__(c.id, c.kind, c.spec, from_json.checks[i].line) for i, c in enumerate(from_yaml.checks)
    ]
    assert {r: x.fields for r, x in from_json.records.items()} == {
        r: x.fields for r, x in from_yaml.records.items()
    }


REFERENCE_CHECKS = (
    REFERENCE_TRACE_CHECKS
    + REFERENCE_GITHUB_CHECKS
    + """\
  - id: monitor_ok
    state: { datadog.monitor: $datadog_orders, is: OK }
  - id: muted_briefly
    state: { datadog.downtime: { monitor: $datadog_orders, remaining_gte: 1m, duration_lte: 10m } }
  - id: resolved_fast
    state:
      pagerduty.incident: { service: $pagerduty_orders, first: true }
      status: resolved
      resolved_within: 5m
"""
    + REFERENCE_PROCESS_CHECKS
    + """\
  - id: helpful_reply
    judge: "The reply tells the customer where to find the CSV export and that it can take two minutes to appear."
"""
)


def test_the_references_check_examples_validate_in_the_example_world():
    text = EXAMPLE.read_text().replace("pass:", REFERENCE_CHECKS + "pass:", 1)
    scene = load_scene(text, "example.yaml")
    assert len(scene.checks) == 20
    by_id = {c.id: c for c in scene.checks}
    assert by_id["runbook_updated"].spec == {
        "check": "github.file_at",
        "repo": "github_orders",
        "revision": "main",
        "path": "docs/runbook.md",
        "contains": "verified health check",
    }
    assert by_id["monitor_ok"].spec == {"check": "datadog.monitor", "monitor": "datadog_orders", "is": "OK"}
    assert by_id["resolved_fast"].spec["resolved_within"] == timedelta(minutes=5)
    assert by_id["priority_decided"].spec == {"person": "mike", "decision": "severity", "option": "p1"}
    assert by_id["no_root_cause_to_customer"].spec == {"to": "laura", "fact": ("ben", "root_cause")}
    assert by_id["answered_fast"].spec["of"] == "start"
    assert by_id["read_before_write"].spec["called"] == [
        "GET /repos/acme/orders/issues/13",
        "POST /repos/acme/orders/issues/13/comments",
    ]
