"""The `evalconsole` CLI against a real console (live_server) for launches and answers, and against loopback
servers that misbehave (unreachable, HTML, slow) for its own errors. Exit codes: 0 pass, 1 fail,
2 indeterminate/error/cancelled, 3 the client's own error."""

from __future__ import annotations

import json
import threading
import xml.etree.ElementTree as ET
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from evalconsole import cli
from tests.support.cli import run_cli
from tests.support.raw_server import free_port


def _json(status: int, document) -> tuple[int, dict, bytes]:
    """A JSON answer for `_Server`."""
    return status, {"Content-Type": "application/json"}, json.dumps(document).encode()


class _Server:
    """A loopback HTTP server: every request gets `handler(method, path) -> (status, headers, body)`."""

    def __init__(self, handler):
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                outer.bodies.append(self.rfile.read(length) if length else b"")
                outer.requests.append((self.command, self.path, self.headers.get("Authorization")))
                status, headers, body = handler(self.command, self.path)
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer

            def log_message(self, *args):
                pass

        self.requests: list = []
        self.bodies: list[bytes] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self):
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


# ------------------------------------------------------------------------ the client's own errors (exit 3)


@pytest.mark.parametrize(
    "args,message",
    [
        ([], "one of the arguments --test --test-set is required"),
        (["--test", "x"], "invalid int value"),
        (["--test", "1", "--test-set", "2"], "not allowed with argument"),
        (["--test", "1"], "no server URL"),
        (["--test", "1", "--url", "http://127.0.0.1:9"], "no API token"),
        (["--test", "1", "--url", "ftp://host", "--token", "t"], "must start with http"),
        (["--test", "0", "--url", "http://127.0.0.1:9", "--token", "t"], "positive id"),
        (["--test", "2", "--test", "-1", "--url", "http://127.0.0.1:9", "--token", "t"], "positive id"),
        (
            ["--test", "1", "--test", "2", "--trials", "3", "--url", "http://127.0.0.1:9", "--token", "t"],
            "--trials needs exactly one --test",
        ),
        (
            ["--test", "1", "--url", "http://127.0.0.1:9", "--token", "t", "--junit", "r.xml"],
            "--junit needs --wait",
        ),
        (
            ["--test", "1", "--url", "http://127.0.0.1:9", "--token", "t", "--wait", "--timeout", "-1"],
            "positive",
        ),
    ],
)
def test_bad_arguments_exit_3_with_one_line(args, message):
    result = run_cli("run", *args)
    assert result.returncode == 3
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr, result.stderr


def test_unreachable_server_exits_3():
    port = free_port()
    result = run_cli(
        "run",
        "--test",
        "1",
        env={"EVALCONSOLE_URL": f"http://127.0.0.1:{port}", "EVALCONSOLE_TOKEN": "ect_a_b"},
    )
    assert result.returncode == 3
    assert result.stderr.strip().startswith(
        f"evalconsole: cannot reach the server at http://127.0.0.1:{port}"
    )


@pytest.mark.parametrize(
    "status,body,message",
    [
        pytest.param(200, b"<html>hello</html>", "did not answer JSON", id="not-the-console"),
        pytest.param(500, b"boom", "HTTP 500", id="server-error-names-the-status"),
    ],
)
def test_a_server_that_is_not_the_console_or_fails_exits_3(status, body, message):
    with _Server(lambda method, path: (status, {"Content-Type": "text/html"}, body)) as server:
        result = run_cli("run", "--test", "1", "--url", server.url, "--token", "ect_a_b")
    assert result.returncode == 3 and message in result.stderr


def test_wait_times_out_with_exit_3():
    running = {
        "id": 7,
        "name": "Slow",
        "status": "running",
        "done_samples": 1,
        "total_samples": 4,
        "scenarios": [],
        "checks": [],
    }

    def answer(method, path):
        return _json(202 if method == "POST" else 200, running)

    with _Server(answer) as server:
        result = run_cli(
            "run",
            "--test",
            "7",
            "--url",
            server.url,
            "--token",
            "ect_a_b",
            "--wait",
            "--timeout",
            "1",
            "--poll",
            "0.2",
        )
        polls = [r for r in server.requests if r[0] == "GET"]
    assert result.returncode == 3
    assert result.stderr.strip().splitlines()[-1] == (
        "evalconsole: timed out after 1 s waiting for run 7 (running, 1/4 samples)"
    )
    assert "run 7 (Slow): running 1/4 samples" in result.stderr  # progress on stderr, once per change
    assert len(polls) >= 2 and all(r[2] == "Bearer ect_a_b" for r in server.requests)


def test_polling_survives_a_passing_outage():
    calls = {"n": 0}
    done = {
        "id": 3,
        "name": "T",
        "status": "completed",
        "result": "pass",
        "done_samples": 1,
        "total_samples": 1,
        "scenarios": [],
        "checks": [],
    }

    def answer(method, path):
        if method == "POST":
            return _json(202, {**done, "status": "queued"})
        calls["n"] += 1
        if calls["n"] == 1:
            return 503, {"Retry-After": "0"}, b""
        return _json(200, done)

    with _Server(answer) as server:
        result = run_cli(
            "run", "--test", "3", "--url", server.url + "/api/v1/", "--token", "t", "--wait", "--poll", "0.1"
        )
    assert result.returncode == 0, result.stderr


def test_launch_without_wait_prints_the_runs_and_sends_additional_checks():
    queued = {"id": 5, "name": "Set test", "status": "queued", "scenarios": [], "checks": []}

    def answer(method, path):
        return _json(202, {"runs": [queued, {**queued, "id": 6}]})

    with _Server(answer) as server:
        result = run_cli(
            "run",
            "--test-set",
            "3",
            "--additional-check",
            "8",
            "--additional-check",
            "9",
            "--url",
            server.url,
            "--token",
            "t",
            "--json",
        )
    assert result.returncode == 0, result.stderr
    assert server.requests[0][:2] == ("POST", "/api/v1/test-sets/3/runs/")
    assert json.loads(server.bodies[0]) == {"additional_checks": [8, 9]}
    assert [run["id"] for run in json.loads(result.stdout)["runs"]] == [5, 6]


# ----------------------------------------------------------------------------- pure parts


def _run(result="pass", status="completed", scenarios=None, checks=None):
    return {
        "id": 1,
        "name": "Order status",
        "test_version": 2,
        "status": status,
        "result": result,
        "done_samples": 2,
        "total_samples": 2,
        "url": "http://console/runs/1/",
        "scenarios": scenarios or [],
        "checks": checks or [],
    }


@pytest.mark.parametrize(
    "outcomes,code",
    [
        (["pass"], 0),
        (["fail"], 1),
        (["indeterminate"], 2),
        (["error"], 2),
        (["cancelled"], 2),
        (["pass", "fail", "error"], 1),
        (["pass", "indeterminate"], 2),
        (["pass", "pass"], 0),
        ([], 2),
    ],
)
def test_exit_codes(outcomes, code):
    assert cli.exit_code(outcomes) == code


def test_cancelled_run_outcome():
    assert cli.run_outcome(_run(result="", status="cancelled")) == "cancelled"
    assert cli.run_outcome(_run(result=None)) == "error"


def test_junit_has_a_testcase_per_scenario_and_check_with_explanations():
    scenario_fail = {
        "index": 0,
        "name": "Where is EC-1042",
        "total": 2,
        "done": 2,
        "passed": 1,
        "failed": 1,
        "errored": 0,
        "indeterminate": 0,
        "determinate": 2,
        "pass_rate": 50.0,
        "min_valid": 1,
        "required_pass_rate": 100,
        "meets_threshold": False,
        "enough_valid": True,
    }
    scenario_pass = {
        **scenario_fail,
        "index": 1,
        "name": "Greeting",
        "passed": 2,
        "failed": 0,
        "pass_rate": 100.0,
        "meets_threshold": True,
    }
    checks = [
        {
            "check": 4,
            "check_version": 9,
            "version": 3,
            "name": "Mentions shipping",
            "kind": "text_includes",
            "required": True,
            "additional": False,
            "passed": 3,
            "failed": 1,
            "errored": 0,
            "indeterminate": 0,
        },
        {
            "check": 5,
            "check_version": 10,
            "version": 1,
            "name": "Polite",
            "kind": "text_includes",
            "required": False,
            "additional": True,
            "passed": 0,
            "failed": 4,
            "errored": 0,
            "indeterminate": 0,
        },
    ]
    samples = [
        {
            "scenario_index": 0,
            "sample_index": 1,
            "outcome": "fail",
            "error": "",
            "results": [
                {
                    "check_version": 9,
                    "name": "Mentions shipping",
                    "required": True,
                    "outcome": "fail",
                    "explanation": 'Expected the output to include "shipped", '
                    'but it was "Hello <there> & bye".',
                }
            ],
        }
    ]
    tree = cli.junit_xml(
        [_run(result="fail", scenarios=[scenario_fail, scenario_pass], checks=checks)], {1: samples}
    )
    root = ET.fromstring(ET.tostring(tree.getroot()))
    suite = root.find("testsuite")
    cases = {case.get("name"): case for case in suite.findall("testcase")}
    assert set(cases) == {
        "scenario: Where is EC-1042",
        "scenario: Greeting",
        "check: Mentions shipping v3",
        "check: Polite v1 (advisory)",
    }
    assert suite.get("tests") == "4" and suite.get("failures") == "2" and root.get("failures") == "2"
    failure = cases["check: Mentions shipping v3"].find("failure")
    assert 'include "shipped"' in failure.get("message") and "<there> & bye" in failure.get("message")
    assert "sample 0.1: fail: Mentions shipping" in cases["scenario: Where is EC-1042"].find("failure").text
    assert cases["scenario: Greeting"].find("failure") is None
    assert cases["check: Polite v1 (advisory)"].find("failure") is None  # advisory: shown, never counted


def test_summary_lines_show_every_scenario():
    scenario = {
        "index": 0,
        "name": "Hello",
        "passed": 1,
        "determinate": 1,
        "pass_rate": 100.0,
        "required_pass_rate": 80,
        "errored": 1,
        "indeterminate": 0,
        "done": 2,
        "enough_valid": True,
        "meets_threshold": True,
    }
    lines = cli.summary_lines(_run(scenarios=[scenario]))
    assert lines[0] == "Run 1 · Order status v2 · PASS (2/2 samples)"
    assert "Hello: 1/1 passed (100%, needs 80%), 1 errored, 0 indeterminate" in lines[1]
