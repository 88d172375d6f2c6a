"""`evalconsole`: the command-line client for CI jobs (standard library + httpx; no Django).

    evalconsole run --test 12 --wait --junit report.xml
    evalconsole run --test-set 3 --wait --json
    evalconsole run --test 12 --trials 5 --wait     (5 runs in one batch; pass^k over all their samples)
    evalconsole run --test 12 --test 14 --wait      (two tests' runs launched as one batch)
    evalconsole scene run scene.yaml --agent http://127.0.0.1:8787/   (evalconsole/scene_cli.py)

The server and token come from EVALCONSOLE_URL and EVALCONSOLE_TOKEN (or --url / --token).
Exit codes: 0 pass · 1 fail · 2 indeterminate, error or cancelled · 3 the client's own error (bad
arguments, bad token, unreachable server, unexpected answer, timeout), with one line on stderr.
Without --wait the runs are launched and the command exits 0 at once.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, NoReturn

import httpx

from evalconsole import scene_args

EXIT_PASS, EXIT_FAIL, EXIT_INCONCLUSIVE, EXIT_CLIENT = 0, 1, 2, 3
EXIT_PIPE = 141  # 128 + SIGPIPE: the reader of stdout went away
FINISHED = ("completed", "cancelled")
USER_AGENT = "evalconsole-cli/1"


class CliError(Exception):
    """The client's own failure: one line for stderr, exit code 3."""


# ----------------------------------------------------------------------------- HTTP


@dataclass
class Client:
    base_url: str
    token: str
    http: httpx.Client
    sleep: Callable[[float], None] = time.sleep

    @classmethod
    def create(
        cls,
        url: str,
        token: str,
        *,
        transport: httpx.BaseTransport | None = None,
        request_timeout: float = 30.0,
    ) -> Client:
        base = normalise_url(url)
        http = httpx.Client(
            base_url=base,
            headers={
                "Authorization": f"Bearer {token}",
                "Accept": "application/json",
                "User-Agent": USER_AGENT,
            },
            timeout=httpx.Timeout(request_timeout, connect=10.0),
            transport=transport,
            follow_redirects=False,
        )
        return cls(base_url=base, token=token, http=http)

    def request(self, method: str, path: str, *, body: Any = None, retries: int = 0) -> Any:
        """JSON answer of `method path`; retries connection errors, 429 and 502-504 `retries` times."""
        attempt = 0
        while True:
            try:
                response = self.http.request(method, path, json=body)
            except httpx.TimeoutException as exc:
                problem = f"the server at {self.base_url} did not answer in time ({type(exc).__name__})"
                response = None
            except httpx.TransportError as exc:
                problem = f"cannot reach the server at {self.base_url}: {exc or type(exc).__name__}"
                response = None
            if response is not None:
                if response.status_code in (429, 502, 503, 504) and attempt < retries:
                    problem = f"HTTP {response.status_code}"
                else:
                    return self._answer(method, path, response)
            if attempt >= retries:
                raise CliError(problem)
            attempt += 1
            delay = min(2.0**attempt, 30.0)
            if response is not None:
                delay = _retry_after(response, delay)
            self.sleep(delay)

    def _answer(self, method: str, path: str, response: httpx.Response) -> Any:
        status = response.status_code
        try:
            data = response.json() if response.content else None
        except ValueError:
            data = None
            if status < 500:
                raise CliError(
                    f"the server at {self.base_url} did not answer JSON to {method} {path} (HTTP {status}); "
                    "is the URL the console's address?"
                ) from None
        if status < 400:
            return data
        detail = describe_error(data)
        if status == 401:
            raise CliError(
                f"the server refused the token (HTTP 401): {detail or 'not authenticated'}; "
                "check EVALCONSOLE_TOKEN / --token"
            )
        if status == 403:
            raise CliError(f"the token may not do this (HTTP 403): {detail or 'forbidden'}")
        if status == 404:
            raise CliError(f"not found (HTTP 404) at {path}: {detail or 'no such object among your teams'}")
        if status == 429:
            raise CliError(f"rate limited by the server (HTTP 429): {detail or 'too many requests'}")
        if status >= 500:
            raise CliError(f"the server failed (HTTP {status}) on {method} {path}")
        raise CliError(f"the server rejected the request (HTTP {status}): {detail or response.text[:200]}")

    def close(self) -> None:
        self.http.close()


def _retry_after(response: httpx.Response, default: float) -> float:
    try:
        return min(max(float(response.headers.get("Retry-After", "")), 0.5), 60.0)
    except ValueError:
        return default


def normalise_url(url: str) -> str:
    url = (url or "").strip().rstrip("/")
    for suffix in ("/api/v1", "/api"):
        if url.endswith(suffix):
            url = url[: -len(suffix)]
    if not url.startswith(("http://", "https://")):
        raise CliError(f"the server URL {url!r} must start with http:// or https://")
    return url


def describe_error(data: Any) -> str:
    """One line from a DRF error body: `detail`, or `field: message; field: message`."""
    if isinstance(data, dict):
        if isinstance(data.get("detail"), str):
            return data["detail"]
        parts = []
        for field, messages in data.items():
            text = "; ".join(str(m) for m in messages) if isinstance(messages, list) else str(messages)
            parts.append(text if field == "non_field_errors" else f"{field}: {text}")
        return "; ".join(parts)
    if isinstance(data, list):
        return "; ".join(str(item) for item in data)
    return "" if data is None else str(data)


# ----------------------------------------------------------------------------- launching and waiting


def launch(
    client: Client, *, tests: list[int], test_set: int | None, additional: list[int], trials: int = 1
) -> list[dict]:
    """Launch the runs: one test (N trials as one batch), several tests as one batch, or a test set."""
    body: dict[str, Any] = {"additional_checks": additional} if additional else {}
    if len(tests) == 1 and trials > 1:
        body = {"test": tests[0], "trials": trials, **body}
        answer = client.request("POST", "/api/v1/runs/trials/", body=body)
    elif len(tests) == 1:
        return [client.request("POST", "/api/v1/runs/", body={"test": tests[0], **body})]
    elif tests:
        answer = client.request("POST", "/api/v1/runs/batch/", body={"tests": tests, **body})
    else:
        answer = client.request("POST", f"/api/v1/test-sets/{test_set}/runs/", body=body)
    return list(answer.get("runs", [])) if isinstance(answer, dict) else []


def wait(
    client: Client,
    runs: list[dict],
    *,
    timeout: float,
    poll: float | Callable[[list[dict], float], float],
    progress: Callable[[str], None],
    clock: Callable[[], float] = time.monotonic,
) -> list[dict]:
    """Poll every run until it completes or is cancelled; CliError after `timeout` seconds. `poll` is
    the seconds between polls, or a function of (the runs as last read, seconds since the first poll)
    that gives them."""
    began = clock()
    deadline = began + timeout
    current = {run["id"]: run for run in runs}
    last_line: dict[int, str] = {}
    while True:
        for run_id, run in list(current.items()):
            if run.get("status") in FINISHED:
                continue
            current[run_id] = run = client.request("GET", f"/api/v1/runs/{run_id}/", retries=5)
            line = (
                f"run {run_id} ({run.get('name', '')}): {run.get('status')} "
                f"{run.get('done_samples', 0)}/{run.get('total_samples', 0)} samples"
            )
            if last_line.get(run_id) != line:
                progress(line)
                last_line[run_id] = line
        pending = [r for r in current.values() if r.get("status") not in FINISHED]
        if not pending:
            return [current[run["id"]] for run in runs]
        if clock() >= deadline:
            names = ", ".join(
                f"run {r['id']} ({r.get('status')}, {r.get('done_samples', 0)}/"
                f"{r.get('total_samples', 0)} samples)"
                for r in pending
            )
            raise CliError(f"timed out after {timeout:g} s waiting for {names}")
        pause = poll(list(current.values()), clock() - began) if callable(poll) else poll
        client.sleep(max(0.0, min(pause, deadline - clock())))


def fetch_samples(client: Client, run_id: int) -> list[dict]:
    samples: list[dict] = []
    path = f"/api/v1/runs/{run_id}/samples/?page_size=200"
    for _ in range(1000):
        page = client.request("GET", path, retries=5)
        samples.extend(page.get("results", []))
        following = page.get("next")
        if not following:
            break
        path = following
    return samples


# ----------------------------------------------------------------------------- outcomes


def run_outcome(run: dict) -> str:
    """pass, fail, indeterminate, error or cancelled."""
    if run.get("status") == "cancelled":
        return "cancelled"
    return run.get("result") or "error"


def exit_code(outcomes: Iterable[str]) -> int:
    outcomes = list(outcomes)
    if not outcomes:
        return EXIT_INCONCLUSIVE
    if "fail" in outcomes:
        return EXIT_FAIL
    if all(o == "pass" for o in outcomes):
        return EXIT_PASS
    return EXIT_INCONCLUSIVE


def scenario_outcome(scenario: dict) -> str:
    if scenario.get("determinate", 0) and scenario.get("meets_threshold") is False:
        return "fail"
    if scenario.get("done", 0) and scenario.get("errored", 0) == scenario.get("done", 0):
        return "error"
    if not scenario.get("enough_valid", False):
        return "indeterminate"
    return "pass"


def _rate(value: Any) -> str:
    return "-" if value is None else f"{value:g}%"


def _figure(value: Any) -> str:
    text = f"{float(value):.2f}".rstrip("0").rstrip(".")
    return text or "0"


def _ks(figures: Any) -> list[tuple[int, Any]]:
    """A `pass_hat_k` / `pass_at_k` object's (k, value) pairs in k order (bad keys are skipped)."""
    if not isinstance(figures, dict):
        return []
    pairs = [(int(k), v) for k, v in figures.items() if str(k).isdigit() and isinstance(v, int | float)]
    return sorted(pairs)


def consistency_text(item: dict) -> str:
    """pass^k of a run or scenario for every k it has, e.g. "pass^1 0.6 · pass^2 0.3 · pass^3 0.1"."""
    pairs = _ks(item.get("pass_hat_k"))
    if not pairs:
        return "pass^k -: no determinate samples"
    return " · ".join(f"pass^{k} {_figure(v)}" for k, v in pairs)


def batch_lines(batch: dict) -> list[str]:
    """The trials' pooled consistency, per test of the batch (`GET runs/batches/{batch}/`)."""
    lines = []
    for test in batch.get("tests", []):
        runs = ", ".join(str(r) for r in test.get("runs", []))
        lines.append(
            f"Batch {batch.get('batch', '')} · {test.get('name', '')} · "
            f"{len(test.get('runs', []))} runs ({runs}), "
            f"samples pooled: {consistency_text(test)}"
        )
        for s in test.get("scenarios", []):
            lines.append(
                f"  {s.get('name', '')} ({s.get('determinate', 0)} determinate): {consistency_text(s)}"
            )
    return lines


def flaky_text(check: dict, scenarios: list[dict]) -> str:
    names = {s.get("index"): s.get("name", "") for s in scenarios}
    flaky = [names.get(i, f"scenario {i}") for i in check.get("flaky_scenarios") or []]
    return f" · FLAKY (passed and failed on {', '.join(flaky)})" if flaky else ""


def summary_lines(run: dict) -> list[str]:
    outcome = run_outcome(run).upper()
    lines = [
        f"Run {run['id']} · {run.get('name', '')} v{run.get('test_version', '?')} · {outcome} "
        f"({run.get('done_samples', 0)}/{run.get('total_samples', 0)} samples)"
    ]
    for s in run.get("scenarios", []):
        lines.append(
            f"  {scenario_outcome(s).upper():<13} {s.get('name', '')}: "
            f"{s.get('passed', 0)}/{s.get('determinate', 0)} passed "
            f"({_rate(s.get('pass_rate'))}, needs {s.get('required_pass_rate', 100)}%), "
            f"{s.get('errored', 0)} errored, {s.get('indeterminate', 0)} indeterminate; {consistency_text(s)}"
        )
    for c in run.get("checks", []):
        role = "required" if c.get("required") else "advisory"
        lines.append(
            f"  check {c.get('name', '')} v{c.get('version', '?')} ({role}): {c.get('passed', 0)} passed, "
            f"{c.get('failed', 0)} failed, {c.get('errored', 0)} errored, "
            f"{c.get('indeterminate', 0)} indeterminate{flaky_text(c, run.get('scenarios', []))}"
        )
    lines.append(f"  consistency, mean over scenarios: {consistency_text(run)}")
    if run.get("url"):
        lines.append(f"  {run['url']}")
    return lines


# ----------------------------------------------------------------------------- JUnit


def junit_xml(runs: list[dict], samples_by_run: dict[int, list[dict]]) -> ET.ElementTree:
    """One <testsuite> per run; one <testcase> per scenario and per check, failures with explanations."""
    root = ET.Element("testsuites", name="evalconsole")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for run in runs:
        samples = samples_by_run.get(run["id"], [])
        suite = ET.SubElement(root, "testsuite", name=f"{run.get('name', '')} (run {run['id']})")
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        props = ET.SubElement(suite, "properties")
        for key in ("id", "test", "test_version", "status", "result", "url", "determinate"):
            ET.SubElement(
                props,
                "property",
                name=f"run.{key}",
                value=str(run.get(key) if run.get(key) is not None else ""),
            )
        _figure_properties(props, "run.", run)
        classname = f"evalconsole.{_slug(run.get('name', 'test'))}"
        cancelled = run.get("status") == "cancelled"
        for s in run.get("scenarios", []):
            case = ET.SubElement(
                suite, "testcase", classname=classname, name=f"scenario: {s.get('name', '')}"
            )
            counts["tests"] += 1
            case_props = ET.SubElement(case, "properties")
            ET.SubElement(case_props, "property", name="determinate", value=str(s.get("determinate", 0)))
            _figure_properties(case_props, "", s)
            outcome = scenario_outcome(s)
            text = (
                f"{s.get('passed', 0)} of {s.get('determinate', 0)} determinate samples passed "
                f"({_rate(s.get('pass_rate'))}; required {s.get('required_pass_rate', 100)}%); "
                f"{s.get('errored', 0)} errored, {s.get('indeterminate', 0)} indeterminate, "
                f"minimum valid {s.get('min_valid', 1)}"
            )
            details = _scenario_details(samples, s.get("index"))
            if outcome == "fail":
                counts["failures"] += 1
                ET.SubElement(
                    case, "failure", message=f"pass rate below the required rate: {text}", type="fail"
                ).text = details or text
            elif outcome == "error" or (outcome == "indeterminate" and cancelled):
                counts["errors"] += 1
                message = "run cancelled" if cancelled else "every sample errored"
                ET.SubElement(case, "error", message=f"{message}: {text}", type=outcome).text = (
                    details or text
                )
            elif outcome == "indeterminate":
                counts["errors"] += 1
                ET.SubElement(
                    case,
                    "error",
                    message=f"indeterminate: too few valid samples: {text}",
                    type="indeterminate",
                ).text = details or text
            else:
                ET.SubElement(case, "system-out").text = text
        for c in run.get("checks", []):
            label = f"check: {c.get('name', '')} v{c.get('version', '?')}"
            if not c.get("required", True):
                label += " (advisory)"
            case = ET.SubElement(suite, "testcase", classname=classname, name=label)
            counts["tests"] += 1
            ET.SubElement(
                ET.SubElement(case, "properties"),
                "property",
                name="flaky",
                value=str(bool(c.get("flaky"))).lower(),
            )
            explanations = _check_explanations(samples, c.get("check_version"))
            text = (
                f"{c.get('passed', 0)} passed, {c.get('failed', 0)} failed, {c.get('errored', 0)} errored, "
                f"{c.get('indeterminate', 0)} indeterminate{flaky_text(c, run.get('scenarios', []))}"
            )
            body = "\n".join([text, *explanations])
            if not c.get("required", True):
                ET.SubElement(case, "system-out").text = f"advisory (not counted): {body}"
            elif c.get("failed", 0):
                counts["failures"] += 1
                first = next((e for e in explanations if e.split(": ", 2)[1:2] == ["fail"]), text)
                ET.SubElement(case, "failure", message=_one_line(first), type="fail").text = body
            elif c.get("errored", 0) or c.get("indeterminate", 0):
                counts["errors"] += 1
                ET.SubElement(
                    case,
                    "error",
                    message=_one_line(explanations[0] if explanations else text),
                    type="error" if c.get("errored", 0) else "indeterminate",
                ).text = body
            else:
                ET.SubElement(case, "system-out").text = body
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
    for key, value in totals.items():
        if key != "skipped":
            root.set(key, str(value))
    ET.indent(root)
    return ET.ElementTree(root)


def _figure_properties(props: ET.Element, prefix: str, item: dict) -> None:
    """`<prefix>pass_hat_k.<k>` and `<prefix>pass_at_k.<k>` properties, one per k the item has."""
    for field in ("pass_hat_k", "pass_at_k"):
        for k, value in _ks(item.get(field)):
            ET.SubElement(props, "property", name=f"{prefix}{field}.{k}", value=_figure(value))


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in text).strip("_") or "test"


def _one_line(text: str) -> str:
    return " ".join(str(text).split())[:500]


def _scenario_details(samples: list[dict], index: Any) -> str:
    lines = []
    for sample in samples:
        if sample.get("scenario_index") != index or sample.get("outcome") in (None, "pass"):
            continue
        where = f"sample {sample.get('scenario_index')}.{sample.get('sample_index')}"
        if sample.get("error"):
            lines.append(f"{where}: {sample.get('outcome')}: {_one_line(sample['error'])}")
        for result in sample.get("results", []):
            if result.get("outcome") != "pass" and result.get("required", True):
                lines.append(
                    f"{where}: {result.get('outcome')}: {result.get('name')}: "
                    f"{_one_line(result.get('explanation', ''))}"
                )
    return "\n".join(lines)


def _check_explanations(samples: list[dict], check_version: Any) -> list[str]:
    lines = []
    for sample in samples:
        for result in sample.get("results", []):
            if result.get("check_version") == check_version and result.get("outcome") != "pass":
                lines.append(
                    f"sample {sample.get('scenario_index')}.{sample.get('sample_index')}: "
                    f"{result.get('outcome')}: {_one_line(result.get('explanation', ''))}"
                )
    return lines


# ----------------------------------------------------------------------------- command line


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse exits 2; ours is 3 with one line
        self.exit(EXIT_CLIENT, f"{self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="evalconsole", description="Launch evalconsole runs from CI and gate on their result."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    run = sub.add_parser(
        "run",
        help="launch a run of a test (or every test of a test set)",
        description="Launch runs; with --wait, wait for them, print a per-scenario summary and exit "
        "0 pass, 1 fail, 2 indeterminate/error/cancelled, 3 client error.",
    )
    target = run.add_mutually_exclusive_group(required=True)
    target.add_argument(
        "--test",
        type=int,
        action="append",
        metavar="ID",
        help="launch this test (repeat it to launch several tests as one batch)",
    )
    target.add_argument("--test-set", type=int, metavar="ID", help="launch every test of this test set")
    run.add_argument(
        "--trials",
        type=int,
        default=1,
        metavar="N",
        help="with --test: launch N runs of it as one batch; "
        "with --wait, also print pass^k over all their samples",
    )
    run.add_argument(
        "--additional-check",
        type=int,
        action="append",
        default=[],
        metavar="ID",
        help="also run this library check (repeatable)",
    )
    run.add_argument("--wait", action="store_true", help="wait for the runs and exit with their result")
    run.add_argument(
        "--timeout",
        type=float,
        default=1800.0,
        metavar="S",
        help="with --wait: give up after S seconds (exit 3; default 1800)",
    )
    run.add_argument("--poll", type=float, default=2.0, metavar="S", help="seconds between status checks (2)")
    run.add_argument("--junit", metavar="FILE", help="with --wait: write a JUnit XML report to FILE")
    run.add_argument("--json", action="store_true", help="print the runs as JSON on stdout instead of text")
    run.add_argument("--url", default=None, help="console URL (default: $EVALCONSOLE_URL)")
    run.add_argument("--token", default=None, help="API token (default: $EVALCONSOLE_TOKEN)")
    scene_args.add_parser(sub)
    return parser


def main(argv: list[str] | None = None, *, transport: httpx.BaseTransport | None = None) -> int:
    """The command line. A reader that goes away (``evalconsole scene explain results/ | head``) ends it
    quietly with 141, what a shell reports for a command stopped by SIGPIPE, instead of a traceback."""
    try:
        code = _main(argv, transport=transport)
        sys.stdout.flush()  # here, not at exit, where a closed pipe could no longer be answered
    except BrokenPipeError:
        # Nothing more can be written; point stdout at /dev/null so that the interpreter's own flush at
        # exit does not fail again and print "Exception ignored".
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return EXIT_PIPE
    return code


def _main(argv: list[str] | None, *, transport: httpx.BaseTransport | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "scene":
        from evalconsole import scene_cli  # noqa: PLC0415

        return scene_cli.main(args)
    if args.command != "run":
        parser.print_help(sys.stderr)
        return EXIT_CLIENT
    try:
        return _run(args, transport=transport)
    except CliError as exc:
        print(f"evalconsole: {exc}", file=sys.stderr)
        return EXIT_CLIENT
    except KeyboardInterrupt:
        print("evalconsole: interrupted", file=sys.stderr)
        return EXIT_CLIENT


def _run(args: argparse.Namespace, *, transport: httpx.BaseTransport | None) -> int:
    url = args.url or os.environ.get("EVALCONSOLE_URL", "")
    token = args.token or os.environ.get("EVALCONSOLE_TOKEN", "")
    if not url:
        raise CliError("no server URL: set EVALCONSOLE_URL or pass --url")
    if not token:
        raise CliError("no API token: set EVALCONSOLE_TOKEN or pass --token")
    tests = args.test or []
    if any(test < 1 for test in tests) or (args.test_set is not None and args.test_set < 1):
        raise CliError("--test / --test-set takes a positive id")
    if args.timeout <= 0 or args.poll <= 0:
        raise CliError("--timeout and --poll take a positive number of seconds")
    if args.trials < 1:
        raise CliError("--trials takes a positive number of runs")
    if args.trials > 1 and len(tests) != 1:
        raise CliError("--trials needs exactly one --test (it runs one test several times)")
    if args.junit and not args.wait:
        raise CliError("--junit needs --wait (the report is written when the runs finish)")

    client = Client.create(url, token, transport=transport)
    try:
        runs = launch(
            client, tests=tests, test_set=args.test_set, additional=args.additional_check, trials=args.trials
        )
        if not runs:
            raise CliError("the server launched no runs")
        for run in runs:
            print(
                f"launched run {run['id']} ({run.get('name', '')})"
                + (f": {run['url']}" if run.get("url") else ""),
                file=sys.stderr,
            )
        if not args.wait:
            if args.json:
                print(json.dumps({"runs": runs}, indent=2))
            else:
                for run in runs:
                    print(f"{run['id']}\t{run.get('status')}\t{run.get('name', '')}")
            return EXIT_PASS
        finished = wait(
            client,
            runs,
            timeout=args.timeout,
            poll=args.poll,
            progress=lambda line: print(line, file=sys.stderr, flush=True),
        )
        outcomes = [run_outcome(run) for run in finished]
        code = exit_code(outcomes)
        if args.junit:
            samples = {run["id"]: fetch_samples(client, run["id"]) for run in finished}
            try:
                junit_xml(finished, samples).write(args.junit, encoding="utf-8", xml_declaration=True)
            except OSError as exc:
                raise CliError(f"cannot write the JUnit report {args.junit}: {exc.strerror or exc}") from exc
        batch = None
        if args.trials > 1 and finished[0].get("batch"):
            batch = client.request("GET", f"/api/v1/runs/batches/{finished[0]['batch']}/", retries=5)
        if args.json:
            overall = {EXIT_PASS: "pass", EXIT_FAIL: "fail"}.get(code, "inconclusive")
            document = {"result": overall, "exit_code": code, "runs": finished}
            if batch is not None:
                document["batch"] = batch
            print(json.dumps(document, indent=2))
        else:
            for run in finished:
                print("\n".join(summary_lines(run)))
            if batch is not None:
                print("\n".join(batch_lines(batch)))
        return code
    finally:
        client.close()


if __name__ == "__main__":
    sys.exit(main())
