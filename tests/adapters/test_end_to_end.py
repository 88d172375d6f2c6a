"""End to end, for each adapter: its example agent served on loopback, registered in the console,
a test with tool-usage checks launched and run by a REAL qcluster worker (one for the module).

The example servers (adapters/ai-sdk/examples/serve.mjs, adapters/python/examples/serve.py) are
started once per module as subprocesses on port 0 (tests/adapters/examples.py). Both are the same
deterministic order desk: a message with an order id like EC-1042 makes the agent call
``lookup_order`` with ``{"orderId": "EC-1042"}`` and answer "Order EC-1042 is shipped."; any other
message gets an answer without tools (``toolCalls: []``).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from agents.services import create_agent
from checks.services import create_check, create_test, create_test_set
from runs import services
from runs.models import Sample
from tests.adapters.examples import ADAPTERS, ExampleServer
from tests.support.workers import QclusterProcess, run_finished, start_qcluster

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

SECRET = "s3cret"
ANSWER = "Order EC-1042 is shipped."
NO_ORDER_ANSWER = "I can look up orders for you. Please send an order id like EC-1042."
LOOKUP = {"name": "lookup_order", "status": "succeeded", "input": {"orderId": "EC-1042"}}
# Two ways of asking about the same order (the second in lower case, inside small talk).
ORDER_SCENARIOS = [
    "Where is order EC-1042?",
    "Hello there! Any news on ec-1042, the order I placed last week?",
]


@pytest.fixture(scope="module")
def example_server() -> Iterator:
    """``example_server(adapter, secret=None)``: a running example (one per adapter and secret).

    All are stopped with SIGTERM after the module; each must exit with status 0.
    """
    started: dict[tuple[str, str | None], ExampleServer] = {}

    def get(adapter: str, secret: str | None = None) -> ExampleServer:
        key = (adapter, secret)
        if key not in started:
            started[key] = ExampleServer.start(adapter, secret=secret)
        return started[key]

    yield get
    problems = []
    for (adapter, secret), server in started.items():
        code = server.stop()
        if code != 0:
            problems.append(f"{adapter} example (secret={secret!r}) exited with {code} on SIGTERM:\n"
                            f"{server.stderr()}")
        server.close()
    assert not problems, "\n".join(problems)


@pytest.fixture(scope="module")
def module_qcluster(django_db_setup) -> Iterator[QclusterProcess]:
    """One real qcluster for the module's tests (each start costs ~1 CPU-s and seconds of wall time).

    Every test waits until its runs have finished, so none leaves work for the next; the database is
    emptied between tests (transactional), and every test's agents and runs are new rows."""
    from django_q.conf import Conf

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Conf, "SYNC", False)  # tests.settings runs tasks inline; the worker must get them
        worker = start_qcluster()
        try:
            yield worker
        finally:
            worker.kill()
            worker.log_path.unlink(missing_ok=True)


@pytest.fixture
def qcluster(module_qcluster, transactional_db, request) -> Iterator[QclusterProcess]:
    """The module's qcluster, running; its log is printed after a test that failed."""
    assert module_qcluster.alive(), f"the module's qcluster exited:\n{module_qcluster.log()[-4000:]}"
    yield module_qcluster
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        sys.stderr.write(f"\n--- qcluster {module_qcluster.pid} log ---\n{module_qcluster.log()[-6000:]}\n")


def _register(team, admin_user, server: ExampleServer, name: str, headers: dict | None = None):
    return create_agent(team=team, by=admin_user, name=name, endpoint_url=server.url + "/", headers=headers,
                        timeout_s=10.0, retries=1, max_concurrency=4)


def _order_checks(agent, by) -> dict[str, object]:
    return {
        "looked up": create_check(
            agent=agent, by=by, name="Looked up EC-1042", kind="tool_usage",
            config={"tool": "lookup_order", "mode": "at_least", "count": 1,
                    "inputs": [{"field": "orderId", "op": "equals", "value": "EC-1042"}]},
        ),
        "no refund": create_check(agent=agent, by=by, name="No refund", kind="tool_usage",
                                  config={"tool": "issue_refund", "mode": "at_most", "count": 0}),
        "mentions": create_check(agent=agent, by=by, name="Mentions the order", kind="text_includes",
                                 config={"text": "EC-1042"}),
    }


def _test_of(agent, by, scenarios: list[str], checks: dict) -> object:
    test_set = create_test_set(agent=agent, by=by, name="Orders")
    attached = [{"check": c.pk, "required": True} for c in checks.values()]
    return create_test(test_set=test_set, by=by, name="Order status", scenarios=scenarios, checks=attached,
                       samples_per_scenario=1)


def _tool_call_fields(sample: Sample) -> list[dict]:
    return [{k: call.get(k) for k in ("name", "status", "input")} for call in sample.tool_calls]


def _order_desk_run(adapter, example_server, team, admin_user, member, scenarios: list[str]):
    """The adapter's example registered as an agent, the order checks on ``scenarios``, run by the worker."""
    agent = _register(team, admin_user, example_server(adapter), f"Order desk ({adapter})")
    test = _test_of(agent, member, scenarios, _order_checks(agent, member))
    return run_finished(services.launch_run(test=test, by=member).pk)


def _results(sample: Sample, looked_up: str, called: str) -> dict[str, object]:
    """The sample's results by check name, asserting the three outcomes (the lookup check's is ``looked_up``,
    the others pass) and how the lookup check's explanation ends (``called``)."""
    results = {r.check_version.name: r for r in sample.results.select_related("check_version")}
    assert {name: r.outcome for name, r in results.items()} == {
        "Looked up EC-1042": looked_up, "No refund": "pass", "Mentions the order": "pass"}
    assert results["Looked up EC-1042"].explanation == (
        f'Expected lookup_order with orderId equal to "EC-1042" to be called at least 1 time, {called}.')
    return results


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_a_test_with_tool_usage_checks_passes_end_to_end(adapter, example_server, qcluster, team, admin_user,
                                                         member):
    run = _order_desk_run(adapter, example_server, team, admin_user, member, ORDER_SCENARIOS)

    assert (run.status, run.result, run.done_samples, run.total_samples) == ("completed", "pass", 2, 2)
    samples = list(run.samples.order_by("scenario_index"))
    assert [s.request["scenario"]["input"] for s in samples] == ORDER_SCENARIOS
    for sample in samples:
        assert (sample.outcome, sample.error, sample.output) == ("pass", "", ANSWER)
        assert _tool_call_fields(sample) == [LOOKUP]
        assert sample.tool_calls[0]["output"] == {"found": True, "orderId": "EC-1042", "status": "shipped"}
        results = _results(sample, "pass", "and it was called 1 time")
        assert results["Looked up EC-1042"].evidence == [0]  # the call's index in the sample's tool calls
        assert results["No refund"].explanation == (
            "Expected issue_refund to be called at most 0 times, and it was called 0 times.")
        assert all(r.required for r in results.values())


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_a_turn_without_tools_fails_the_lookup_check_determinately(adapter, example_server, qcluster, team,
                                                                   admin_user, member):
    """No order id: the agent calls no tool and reports ``toolCalls: []``, so "at least 1" FAILS (not
    indeterminate), even though the answer mentions EC-1042 (a text check alone would pass)."""
    run = _order_desk_run(adapter, example_server, team, admin_user, member, ["Hello there"])

    assert (run.status, run.result) == ("completed", "fail")
    sample = run.samples.get()
    assert (sample.outcome, sample.error, sample.output) == ("fail", "", NO_ORDER_ANSWER)
    assert sample.tool_calls == []  # reported, and empty: determinate evidence of no calls
    looked_up = _results(sample, "fail", "but it was called 0 times")["Looked up EC-1042"]
    assert looked_up.evidence == []
    assert looked_up.details == {"count": 0, "calls_of_tool": 0}


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_the_agents_shared_secret_is_sent_and_a_wrong_one_is_refused(adapter, example_server, qcluster, team,
                                                                    admin_user, member):
    server = example_server(adapter, secret=SECRET)
    headers = {"right": {"Authorization": f"Bearer {SECRET}"}, "wrong": {"Authorization": "Bearer nope"},
               "none": None}
    runs = {}
    for which, agent_headers in headers.items():
        agent = _register(team, admin_user, server, f"Order desk ({adapter}, {which} secret)", agent_headers)
        test = _test_of(agent, member, ORDER_SCENARIOS[:1], _order_checks(agent, member))
        runs[which] = services.launch_run(test=test, by=member).pk

    finished = {which: run_finished(pk) for which, pk in runs.items()}

    assert (finished["right"].status, finished["right"].result) == ("completed", "pass")
    right = finished["right"].samples.get()
    assert (right.outcome, right.output) == ("pass", ANSWER) and _tool_call_fields(right) == [LOOKUP]
    assert "Authorization" not in str(right.request)  # the body is stored, never the headers
    for which in ("wrong", "none"):
        run = finished[which]
        assert (run.status, run.result) == ("completed", "error")
        sample = run.samples.get()
        assert sample.outcome == "error" and "401" in sample.error, sample.error
        assert sample.tool_calls is None and sample.output == ""
        assert [a["status_code"] for a in sample.attempts] == [401]  # a 401 is not retried
        assert {r.outcome for r in sample.results.all()} == {"error"}
        for result in sample.results.all():
            assert result.explanation.startswith("Not evaluated: the agent call failed (")
            assert "401" in result.explanation
