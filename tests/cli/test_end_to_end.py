"""End to end with only the API and the CLI: a live console, a real qcluster worker, the loopback demo agent.

Register the agent, add checks, a test set and two tests over HTTP with a token, then gate on them with
`evalconsole run --wait --junit`: exit 1 for the failing test, 0 for the passing one, 1 for the whole set,
and JUnit files that parse.
"""

from __future__ import annotations

import subprocess
import xml.etree.ElementTree as ET

import httpx
import pytest

from tests.support.cli import run_cli
from tests.support.workers import qcluster, qcluster_factory  # noqa: F401  (fixtures)

pytestmark = pytest.mark.worker


@pytest.fixture
def demo_agent():
    from agents.demo_agent import DemoAgent

    with DemoAgent() as agent:
        yield agent


@pytest.fixture
def console(live_server, admin_user):
    """An httpx client on the live console with a token made by `manage.py create_api_token`."""
    import io

    from django.core.management import call_command

    out = io.StringIO()
    call_command("create_api_token", admin_user.username, "--name", "ci", stdout=out)
    token = out.getvalue().strip()
    with httpx.Client(
        base_url=f"{live_server.url}/api/v1", headers={"Authorization": f"Bearer {token}"}, timeout=30
    ) as client:
        client.token = token
        client.console_url = live_server.url
        yield client


def create(console, path: str, **fields) -> dict:
    """POST `fields` to the API collection at `path`; the created object."""
    response = console.post(path, json=fields)
    assert response.status_code in (201, 202), response.text
    return response.json()


def cli(console, *args: str) -> subprocess.CompletedProcess:
    """`evalconsole run *args` against the live console, with its URL and token from the environment."""
    env = {"EVALCONSOLE_URL": console.console_url, "EVALCONSOLE_TOKEN": console.token}
    return run_cli("run", *args, env=env, timeout=180)


def junit(path) -> ET.Element:
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    return root


def test_gate_ci_on_runs_with_the_cli(console, demo_agent, qcluster, tmp_path):  # noqa: F811
    agent = create(console, "/agents/", name="Demo shop bot", endpoint_url=demo_agent.url, timeout_s=10)

    def check(name: str, kind: str, config: dict) -> dict:
        return create(console, "/checks/", agent=agent["id"], name=name, kind=kind, config=config)

    shipped = check("Says it shipped", "text_includes", {"text": "has shipped"})
    looked_up = check(
        "Looks up the order",
        "tool_usage",
        {
            "tool": "lookup_order",
            "mode": "exactly",
            "count": 1,
            "inputs": [{"field": "orderId", "op": "equals", "value": "EC-1042"}],
        },
    )
    refunded = check("Promises a refund", "text_includes", {"text": "refund issued"})
    test_set = create(console, "/test-sets/", agent=agent["id"], name="Order desk")
    scenarios = [
        {"name": "Where is EC-1042", "input": "Where is my order EC-1042?"},
        {"name": "Status, politely", "messages": [{"role": "user", "content": "Hi! Status of EC-1042?"}]},
    ]
    passing = create(
        console,
        "/tests/",
        test_set=test_set["id"],
        name="Order status",
        scenarios=scenarios,
        samples_per_scenario=2,
        checks=[{"check": shipped["id"]}, {"check": looked_up["id"]}],
    )
    failing = create(
        console,
        "/tests/",
        test_set=test_set["id"],
        name="Refund promise",
        scenarios=scenarios[:1],
        checks=[{"check": refunded["id"]}, {"check": shipped["id"], "required": False}],
    )

    # The failing test: exit 1, JUnit with the explanation of the failed check.
    report = tmp_path / "failing.xml"
    result = cli(
        console,
        "--test",
        str(failing["id"]),
        "--wait",
        "--junit",
        str(report),
        "--poll",
        "0.2",
        "--timeout",
        "120",
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "FAIL" in result.stdout and "Where is EC-1042" in result.stdout
    assert "samples" in result.stderr  # progress while waiting
    root = junit(report)
    cases = {case.get("name"): case for case in root.iter("testcase")}
    assert set(cases) == {
        "scenario: Where is EC-1042",
        "check: Promises a refund v1",
        "check: Says it shipped v1 (advisory)",
    }
    failure = cases["check: Promises a refund v1"].find("failure")
    assert failure is not None and "refund issued" in failure.get("message")
    assert cases["scenario: Where is EC-1042"].find("failure") is not None
    assert root.get("failures") == "2"

    # The passing test: exit 0, every testcase green.
    report = tmp_path / "passing.xml"
    result = cli(console, "--test", str(passing["id"]), "--wait", "--junit", str(report), "--poll", "0.2")
    assert result.returncode == 0, result.stdout + result.stderr
    root = junit(report)
    assert [case.get("name") for case in root.iter("testcase")] == [
        "scenario: Where is EC-1042",
        "scenario: Status, politely",
        "check: Says it shipped v1",
        "check: Looks up the order v1",
    ]
    assert root.get("failures") == "0" and root.get("errors") == "0"
    assert not list(root.iter("failure"))

    # The whole set as JSON: one failing test fails the job.
    result = cli(console, "--test-set", str(test_set["id"]), "--wait", "--json", "--poll", "0.2")
    assert result.returncode == 1, result.stderr
    import json

    document = json.loads(result.stdout)
    assert document["result"] == "fail" and document["exit_code"] == 1
    assert sorted((run["name"], run["result"]) for run in document["runs"]) == [
        ("Order status", "pass"),
        ("Refund promise", "fail"),
    ]

    # Two tests named on the command line are launched as one batch: one launch, one wake-up.
    both = ("--test", str(passing["id"]), "--test", str(failing["id"]))
    result = cli(console, *both, "--wait", "--json", "--poll", "0.2")
    assert result.returncode == 1, result.stderr
    document = json.loads(result.stdout)
    assert [(run["name"], run["result"]) for run in document["runs"]] == [
        ("Order status", "pass"),
        ("Refund promise", "fail"),
    ]
    assert len({run["batch"] for run in document["runs"]}) == 1 and document["runs"][0]["batch"]

    # The runs the CLI launched are in the API, with their exact check versions.
    runs = console.get("/runs/", params={"test": passing["id"], "status": "completed"}).json()
    assert runs["count"] == 3 and all(run["result"] == "pass" for run in runs["results"])
    samples = console.get(f"/runs/{runs['results'][0]['id']}/samples/").json()
    assert samples["count"] == 4 and all(s["outcome"] == "pass" for s in samples["results"])
    assert all(len(s["results"]) == 2 for s in samples["results"])


def test_the_cli_reports_a_bad_token_and_an_unknown_test(console, live_server):
    bad = run_cli(
        "run", "--test", "1", "--url", live_server.url, "--token", "ect_0123456789ab_nope", timeout=60
    )
    assert bad.returncode == 3 and "refused the token (HTTP 401)" in bad.stderr
    missing = cli(console, "--test", "999999")
    assert missing.returncode == 3 and "Test 999999 does not exist" in missing.stderr
    batch = cli(console, "--test", "999999", "--test", "999998")
    assert batch.returncode == 3, batch.stderr
    assert "tests" in batch.stderr and "does not exist" in batch.stderr
