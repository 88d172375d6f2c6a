"""pass^k end to end: a scripted agent (one scenario always passes, one passes 3 of 5) run for real,
its figures on the run page, in the API and in the CLI's JSON; compare flags a regression by name."""

from __future__ import annotations

import json
import re

import httpx
import pytest
from django.test import Client
from django.urls import reverse

from evalconsole import cli
from runs import queue
from runs.models import Run, RunCheck, Sample
from teams.services import issue_token
from tests import factories
from tests.support.page_fixtures import live_agent, login, run_now  # noqa: F401

pytestmark = pytest.mark.django_db

# By hand, for c passes of n = 5 determinate samples (pass^k = C(c, k) / C(n, k)):
#   Steady (c = 5): pass^1 = pass^3 = pass^5 = 1
#   Wobbly (c = 3): pass^1 = 3/5 = 0.6, pass^3 = C(3,3)/C(5,3) = 1/10 = 0.1, pass^5 = 0/1 = 0
#   the run, the mean of the two: pass^1 = 0.8, pass^3 = 0.55, pass^5 = 0.5
STEADY = {"1": 1.0, "3": 1.0, "5": 1.0}
WOBBLY = {"1": 0.6, "3": 0.1, "5": 0.0}
RUN = {"1": 0.8, "3": 0.55, "5": 0.5}


@pytest.fixture
def scripted_test(live_agent, member):
    check = factories.check(live_agent, member, name="Says DONE", config={"text": "DONE"})
    return factories.test(
        live_agent,
        member,
        name="Refunds",
        scenarios=[
            {"name": "Steady", "input": "Refund order EC-1042", "metadata": {"fake": {"outputs": ["DONE"]}}},
            {
                "name": "Wobbly",
                "input": "Refund order EC-2001",
                "metadata": {"fake": {"outputs": ["DONE", "no", "DONE", "no", "DONE"]}},
            },
        ],
        checks=[check],
        samples=5,
        rate=50,
    )


def _picked(figures: dict) -> dict:
    return {k: figures[k] for k in ("1", "3", "5")}


def _page_cells(html: str, scenario: str, figure: str = "pass^k") -> dict[str, str]:
    table = html.split('id="consistency-table"')[1].split("</table>")[0]
    row = re.search(
        rf'<tr data-scenario="{scenario}" data-figure="{re.escape(figure)}"[^>]*>(.*?)</tr>', table, re.S
    )
    return dict(re.findall(r'data-k="(\d+)"[^>]*>(?:<strong>)?([^<]+)<', row.group(1)))


def test_the_run_page_shows_pass_hat_k_computed_by_hand(login, member, scripted_test, run_now):
    run = run_now(scripted_test)
    assert sorted(Sample.objects.filter(run=run).values_list("scenario_index", "outcome")) == (
        [(0, "pass")] * 5 + [(1, "fail")] * 2 + [(1, "pass")] * 3
    )
    html = login(member).get(run.get_absolute_url()).content.decode()
    assert _page_cells(html, "0") == {"1": "1", "2": "1", "3": "1", "4": "1", "5": "1"}
    assert _page_cells(html, "1") == {"1": "0.6", "2": "0.3", "3": "0.1", "4": "0", "5": "0"}
    assert _page_cells(html, "all") == {"1": "0.8", "2": "0.65", "3": "0.55", "4": "0.5", "5": "0.5"}
    assert _page_cells(html, "1", "pass@k") == {"1": "0.6", "2": "0.9", "3": "1", "4": "1", "5": "1"}
    # The check both passed and failed on Wobbly: flaky there (and not on Steady).
    rates = html.split('id="check-rates"')[1].split("</table>")[0]
    assert 'title="Both passed and failed on Wobbly">flaky</span>' in rates
    # The run list shows the run's pass^k at its largest k.
    listing = login(member).get(reverse("runs:run-list")).content.decode()
    assert '<td class="small consistency">pass^5 0.5</td>' in listing


def test_the_api_gives_pass_hat_k_and_pass_at_k_per_scenario_and_for_the_run(member, scripted_test, run_now):
    run = run_now(scripted_test)
    secret = issue_token(user=member, name="ci").secret
    body = Client().get(f"/api/v1/runs/{run.pk}/", HTTP_AUTHORIZATION=f"Bearer {secret}").json()
    steady, wobbly = body["scenarios"]
    assert (steady["name"], steady["determinate"], _picked(steady["pass_hat_k"])) == ("Steady", 5, STEADY)
    assert (wobbly["name"], wobbly["determinate"], _picked(wobbly["pass_hat_k"])) == ("Wobbly", 5, WOBBLY)
    assert wobbly["pass_hat_k"] == {"1": 0.6, "2": 0.3, "3": 0.1, "4": 0.0, "5": 0.0}
    assert wobbly["pass_at_k"] == {"1": 0.6, "2": 0.9, "3": 1.0, "4": 1.0, "5": 1.0}
    assert _picked(body["pass_hat_k"]) == RUN and body["determinate"] == 10
    assert body["pass_at_k"] == {"1": 0.8, "2": 0.95, "3": 1.0, "4": 1.0, "5": 1.0}
    (check,) = body["checks"]
    assert (check["passed"], check["failed"], check["flaky"], check["flaky_scenarios"]) == (8, 2, True, [1])


def _django_transport(client: Client, capture):
    """The CLI's HTTP calls answered by the test client; a launch's work runs when its request ends."""

    def handle(request: httpx.Request) -> httpx.Response:
        with capture(execute=True):
            answer = client.generic(
                request.method,
                request.url.raw_path.decode(),
                data=request.content,
                content_type="application/json",
                HTTP_AUTHORIZATION=request.headers["authorization"],
                HTTP_ACCEPT="application/json",
            )
        return httpx.Response(
            answer.status_code, content=answer.content, headers={"content-type": answer["Content-Type"]}
        )

    return httpx.MockTransport(handle)


def test_the_cli_json_and_summary_carry_the_figures(
    member, scripted_test, capsys, django_capture_on_commit_callbacks
):
    secret = issue_token(user=member, name="ci").secret
    argv = ["run", "--test", str(scripted_test.pk), "--wait", "--json", "--poll", "0.01"]
    argv += ["--url", "http://testserver", "--token", secret]
    code = cli.main(argv, transport=_django_transport(Client(), django_capture_on_commit_callbacks))
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["result"] == "pass"  # 3 of 5 meets the 50 % the test requires
    (run,) = out["runs"]
    assert _picked(run["pass_hat_k"]) == RUN
    assert [_picked(s["pass_hat_k"]) for s in run["scenarios"]] == [STEADY, WOBBLY]
    lines = cli.summary_lines(run)
    assert any(
        "Wobbly: 3/5 passed" in line and "pass^1 0.6 · pass^2 0.3 · pass^3 0.1" in line for line in lines
    )
    assert (
        "  consistency, mean over scenarios: pass^1 0.8 · pass^2 0.65 · pass^3 0.55 · pass^4 0.5 · pass^5 0.5"
        in lines
    )
    assert any(
        "check Says DONE v1 (required): 8 passed, 2 failed" in line and "FLAKY" in line for line in lines
    )
    props = {
        p.get("name"): p.get("value")
        for p in cli.junit_xml([run], {}).getroot().iter("property")
        if p.get("name", "").startswith("run.pass")
    }
    assert (props["run.pass_hat_k.1"], props["run.pass_hat_k.3"], props["run.pass_hat_k.5"]) == (
        "0.8",
        "0.55",
        "0.5",
    )


def _finish(run, outcomes: list[str]) -> None:
    """Record finished samples (scenario by scenario) as a worker would, then finalise the run."""
    run_checks = list(RunCheck.objects.filter(run=run).select_related("check_version"))
    for sample, outcome in zip(run.samples.order_by("scenario_index", "sample_index"), outcomes, strict=True):
        Sample.objects.filter(pk=sample.pk).update(status=Sample.Status.DONE, outcome=outcome, tool_calls=[])
        factories.check_results(sample, run_checks, outcome=outcome)
    queue.finalise_run(run=run)


def test_compare_flags_a_regression_naming_the_scenario(login, member, scripted_test):
    from runs import services

    before = services.launch_run(test=scripted_test, by=member)
    _finish(before, ["pass"] * 10)
    after = services.launch_run(test=scripted_test, by=member)
    _finish(after, ["pass"] * 5 + ["pass", "fail", "pass", "fail", "pass"])
    html = login(member).get(reverse("runs:run-compare"), {"a": after.pk, "b": before.pk}).content.decode()
    alert = html.split('id="regressions"')[1].split("</div>")[0]
    assert '<li data-scenario="Wobbly">' in alert and "Steady" not in alert
    assert "pass^1 1 → 0.6" in alert and "pass^3 1 → 0.1" in alert and "pass^5 1 → 0" in alert
    row = html.split('<tr data-scenario="Wobbly" class="regressed">')[1].split("</tr>")[0]
    assert '<span class="badge fail">regression</span>' in row
    # The other way round (an improvement) is no regression.
    back = services.launch_run(test=scripted_test, by=member)
    _finish(back, ["pass"] * 10)
    html = login(member).get(reverse("runs:run-compare"), {"a": after.pk, "b": back.pk}).content.decode()
    assert 'id="regressions"' not in html, html.split('id="regressions"')[1][:600]
    assert "No scenario's pass^k dropped." in html


# --- trials: one test run N times as one batch --------------------------------------------------------


# Three trials of the scripted test: Wobbly passes 3 of 5 in each, 9 of 15 pooled. By hand:
#   pass^1 = 9/15 = 0.6; pass^2 = C(9,2)/C(15,2) = 36/105 = 0.3429; pass^10 = 0 (only 9 passes); Steady: 1
#   the batch: pass^1 = (1 + 0.6) / 2 = 0.8, pass^2 = (1 + 36/105) / 2 = 0.6714
def test_trials_from_the_launcher_make_one_batch_with_pooled_pass_hat_k(
    login, member, scripted_test, django_capture_on_commit_callbacks
):
    client = login(member)
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(reverse("runs:run-launch"), {"test": scripted_test.pk, "trials": "3"})
    runs = list(scripted_test.runs.order_by("pk"))
    assert len(runs) == 3 and len({r.batch for r in runs}) == 1 and runs[0].batch
    assert all(
        r.total_samples == 10 and r.status == "completed" for r in runs
    )  # each within the per-run limit
    assert answer.status_code == 302 and answer["Location"].endswith(f"?batch={runs[0].batch}")
    html = client.get(answer["Location"]).content.decode()
    assert "Batch of 3 runs of" in html
    table = html.split(f'id="batch-{scripted_test.pk}-table"')[1].split("</table>")[0]
    wobbly = re.search(r'<tr data-scenario="1" data-figure="pass\^k">(.*?)</tr>', table, re.S).group(1)
    cells = dict(re.findall(r'data-k="(\d+)"[^>]*>([^<]+)<', wobbly))
    assert (cells["1"], cells["2"], cells["10"], cells["15"]) == ("0.6", "0.34", "0", "0")
    assert '<td class="num" rowspan="2">15</td>' in wobbly  # n: the pooled determinate samples
    mean = re.search(r'<tr data-scenario="all" data-figure="pass\^k">(.*?)</tr>', table, re.S).group(1)
    assert dict(re.findall(r'data-k="(\d+)"[^>]*><strong>([^<]+)<', mean))["2"] == "0.67"


def test_trials_over_the_limit_are_refused_naming_the_field(login, member, scripted_test, settings):
    settings.EVALCONSOLE_MAX_TRIALS = 4
    html = (
        login(member)
        .post(reverse("runs:run-launch"), {"test": scripted_test.pk, "trials": "5"})
        .content.decode()
    )
    assert 'id="trials-error"' in html and "trials must be a whole number from 1 to 4" in html
    assert not scripted_test.runs.exists()


def test_trials_over_the_api_and_the_batch_figures(member, scripted_test, django_capture_on_commit_callbacks):
    secret = issue_token(user=member, name="ci").secret
    auth = {"HTTP_AUTHORIZATION": f"Bearer {secret}"}
    api = Client()
    with django_capture_on_commit_callbacks(execute=True):
        answer = api.post(
            "/api/v1/runs/trials/",
            {"test": scripted_test.pk, "trials": 3},
            content_type="application/json",
            **auth,
        )
    assert answer.status_code == 202
    body = answer.json()
    assert len(body["runs"]) == 3 and {r["batch"] for r in body["runs"]} == {body["batch"]}
    batch = api.get(f"/api/v1/runs/batches/{body['batch']}/", **auth).json()
    (test,) = batch["tests"]
    assert test["complete"] and test["runs"] == [r["id"] for r in body["runs"]] and test["determinate"] == 30
    steady, wobbly = test["scenarios"]
    assert (
        wobbly["determinate"] == 15
        and wobbly["pass_hat_k"]["1"] == 0.6
        and wobbly["pass_hat_k"]["2"] == 0.3429
    )
    assert set(wobbly["pass_hat_k"]) == {str(k) for k in range(1, 16)} and steady["pass_hat_k"]["15"] == 1.0
    assert test["pass_hat_k"]["2"] == 0.6714
    # Over the limit: a 400 naming the field; trials sent to runs/ say where they go; unknown batch: 404.
    over = api.post(
        "/api/v1/runs/trials/",
        {"test": scripted_test.pk, "trials": 11},
        content_type="application/json",
        **auth,
    )
    assert over.status_code == 400 and "trials" in over.json()
    wrong = api.post(
        "/api/v1/runs/", {"test": scripted_test.pk, "trials": 3}, content_type="application/json", **auth
    )
    assert wrong.status_code == 400 and "runs/trials/" in wrong.json()["trials"][0]
    assert api.get("/api/v1/runs/batches/nosuchbatch/", **auth).status_code == 404


def test_cli_trials_print_the_batch(member, scripted_test, capsys, django_capture_on_commit_callbacks):
    secret = issue_token(user=member, name="ci").secret
    argv = ["run", "--test", str(scripted_test.pk), "--trials", "2", "--wait", "--json", "--poll", "0.01"]
    argv += ["--url", "http://testserver", "--token", secret]
    code = cli.main(argv, transport=_django_transport(Client(), django_capture_on_commit_callbacks))
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and len(out["runs"]) == 2
    (test,) = out["batch"]["tests"]
    # Wobbly 6 of 10 pooled: pass^2 = C(6,2)/C(10,2) = 15/45 = 0.3333
    assert test["scenarios"][1]["pass_hat_k"]["2"] == 0.3333
    lines = cli.batch_lines(out["batch"])
    assert lines[0].startswith(f"Batch {out['batch']['batch']} · Refunds · 2 runs")
    assert "  Wobbly (10 determinate): pass^1 0.6 · pass^2 0.33" in lines[2]


# --- the test page's chart across runs ---------------------------------------------------------------


def test_the_test_page_charts_pass_rate_and_pass_hat_k_with_check_version_changes(
    login, member, scripted_test
):
    from checks.services import edit_check
    from runs import services

    first = services.launch_run(test=scripted_test, by=member)
    _finish(first, ["pass"] * 10)
    check = scripted_test.current_version.attached_checks.get().library_check
    edit_check(check=check, by=member, config={"text": "DONE", "case_sensitive": False})
    second = services.launch_run(test=scripted_test, by=member)
    _finish(second, ["pass"] * 5 + ["pass", "fail", "pass", "fail", "pass"])
    client = login(member)
    page = client.get(scripted_test.get_absolute_url()).content.decode()
    url = reverse("runs:test-consistency", args=[scripted_test.pk])
    assert f'hx-get="{url}" hx-trigger="load"' in page and "vendor/uplot-1.6.32/uPlot.iife.min.js" in page
    fragment = client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert fragment.lstrip().startswith('<section class="card" id="test-consistency"')
    data = json.loads(
        fragment.split('id="consistency-chart-data" type="application/json">')[1].split("</script>")[0]
    )
    assert data["k"] == 5 and data["labels"] == [f"#{first.pk}", f"#{second.pk}"]
    assert data["marks"] == [{"x": 1, "text": "Says DONE v1→v2"}]
    steady, wobbly = data["series"]
    assert steady == {"label": "Steady", "rate": [100.0, 100.0], "hat": [100.0, 100.0]}
    assert wobbly == {"label": "Wobbly", "rate": [100.0, 60.0], "hat": [100.0, 0.0]}  # pass^5 of 3/5 is 0
    row = fragment.split(f'<tr data-run="{second.pk}">')[1].split("</tr>")[0]
    assert "Says DONE v1→v2" in row and "60 % · 0" in row


def test_consistency_reads_do_not_grow_with_samples_or_runs(login, member, scripted_test, live_agent):
    """The pages and endpoint showing pass^k read the runs' stored counts, never their samples."""
    from runs import services
    from tests.support.queries import query_count

    client = login(member)
    secret = issue_token(user=member, name="ci").secret
    check = factories.check(live_agent, member, name="Mentions order", config={"text": "EC-1042"})
    small = factories.test(live_agent, member, name="Small", scenarios=["EC-1042"], checks=[check], samples=1)
    counts = {}
    for test, outcomes in ((small, ["pass"]), (scripted_test, ["pass"] * 7 + ["fail"] * 3)):
        runs = []
        for _ in range(2 if test is small else 5):
            run = services.launch_run(test=test, by=member)
            _finish(run, outcomes)
            runs.append(run)
        urls = {
            "run page": runs[-1].get_absolute_url(),
            "compare": f"{reverse('runs:run-compare')}?a={runs[0].pk}&b={runs[-1].pk}",
            "trend": reverse("runs:test-consistency", args=[test.pk]),
            "batch": f"{reverse('runs:run-list')}?batch=b-{test.pk}",
        }
        Run.objects.filter(pk__in=[r.pk for r in runs]).update(batch=f"b-{test.pk}")
        counts[test.name] = {name: query_count(lambda u=u: client.get(u)) for name, u in urls.items()}
        auth = {"HTTP_AUTHORIZATION": f"Bearer {secret}"}
        Client().get(f"/api/v1/runs/{runs[-1].pk}/", **auth)
        counts[test.name]["api"] = query_count(
            lambda r=runs[-1], a=auth: Client().get(f"/api/v1/runs/{r.pk}/", **a)
        )
    # 1 scenario x 1 sample and 2 runs, against 2 scenarios x 5 samples and 5 runs: the same queries
    assert counts["Small"] == counts["Refunds"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--test", "1", "--trials", "0"], "--trials takes a positive number"),
        (["--test-set", "1", "--trials", "2"], "--trials needs exactly one --test"),
    ],
)
def test_cli_trials_bad_arguments_exit_3_with_one_line(capsys, args, message):
    code = cli.main(["run", *args, "--url", "http://127.0.0.1:9", "--token", "t"])
    assert code == cli.EXIT_CLIENT and message in capsys.readouterr().err
