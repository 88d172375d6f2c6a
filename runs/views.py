"""Run pages: launcher, run list, the live run page and the side-by-side comparison."""

from __future__ import annotations

import functools
import statistics
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Prefetch
from django.db.models.functions import Lower
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString
from django.views.decorators.http import require_POST

from agents.models import Agent
from checks import kinds
from checks.judge import judge_configured
from checks.kinds import Outcome
from checks.kinds.ai_judge import SKIPPED_NO_KEY
from checks.models import Check, Test, TestCheck, TestSet, scenario_name, scenario_names
from core.errors import Rejected, ValidationFailed
from core.htmx import HTMX_STOP_POLLING, page_or_fragment, target_fragment
from core.listing import parse_search, parse_sort
from core.templatetags.names import esc, local_time, trunc
from core.urls import RowUrls
from core.views import forbidden, table_row
from runs import services
from runs.compare import (
    TREND_RUNS,
    batch_groups,
    compare_runs,
    consistency_text,
    consistency_trend,
    pretty,
    run_figures,
    sample_diff,
    scenario_diff,
    scenario_rows,
)
from runs.consistency import columns, shown_ks, summary_figures
from runs.forms import LaunchForm, RunFilterForm
from runs.models import CheckResult, Run, RunCheck, Sample
from teams.access import page_flags
from worlds.display import sample_world

PAGE_SIZE = 25
NOT_COUNTED = (Outcome.ERROR, Outcome.INDETERMINATE)
JUDGE_KIND = "ai_judge"

FAILURES = (Outcome.FAIL, Outcome.ERROR)  # the run page's "failures only" filter
TRUE, FALSE = ("1", "true", "on", "yes"), ("", "0", "false", "off", "no")
# The runs list's sortable columns (?sort=agent, ?sort=-launched, ...); the primary key breaks ties.
RUN_COLUMNS = {
    "run": (),
    "agent": (Lower("agent__name"),),
    "test": (Lower("test__name"),),
    "status": ("status",),
    "result": ("result",),
    "launched": ("created_at",),
}


# ---------------------------------------------------------------- launcher


@login_required
def run_launch(request: HttpRequest) -> HttpResponse:
    """Launch one test (`?test=`) or every test of a set (`?test_set=`), with additional checks."""
    source = request.POST if request.method == "POST" else request.GET
    test = test_set = None
    if str(source.get("test", "")).isdigit():
        test = get_object_or_404(
            Test.objects.visible_to(request.user).select_related("test_set__agent__team", "current_version"),
            pk=source["test"],
        )
        test_set, agent = test.test_set, test.test_set.agent
        tests = [test]
    elif str(source.get("test_set", "")).isdigit():
        test_set = get_object_or_404(
            TestSet.objects.visible_to(request.user).select_related("agent__team"), pk=source["test_set"]
        )
        agent = test_set.agent
        tests = list(
            Test.objects.filter(test_set=test_set, archived_at__isnull=True)
            .select_related("current_version")
            .order_by("name", "pk")
        )
    else:
        messages.info(request, "Pick a test to run from a test set.")
        return redirect("checks:testset-list")
    if not page_flags(request.user, agent.team)["can_edit"]:
        return forbidden(request, "Viewers cannot launch runs.")
    attached_rows = list(
        TestCheck.objects.filter(test_version__in=[t.current_version_id for t in tests]).values_list(
            "library_check_id", "library_check__kind", "library_check__name"
        )
    )
    attached = {pk for pk, _kind, _name in attached_rows}
    judge_ready = judge_configured()
    # Without a judge key every AI judge check is skipped: indeterminate on every sample.
    judges = {name for _pk, kind, name in attached_rows if kind == JUDGE_KIND}
    skipped_judges = [] if judge_ready else sorted(judges)
    library = list(
        Check.objects.filter(agent=agent, archived_at__isnull=True)
        .exclude(pk__in=attached)
        .select_related("current_version")
        .order_by("kind", "name", "pk")
    )
    labels = dict(kinds.kind_choices())
    for check in library:
        check.kind_label = labels.get(check.kind, check.kind)
        check.judge_skipped = check.kind == JUDGE_KIND and not judge_ready
    form = LaunchForm(request.POST or None, library=library)
    archived_problem = services.archived_test_set_problem(test_set) if test_set.archived_at else ""
    if request.method == "POST" and form.is_valid():
        try:
            if test is not None and form.trial_count() > 1:
                runs = services.launch_trials(
                    test=test,
                    by=request.user,
                    trials=form.trial_count(),
                    additional_checks=form.additional_checks(),
                )
            elif test is not None:
                runs = [
                    services.launch_run(
                        test=test, by=request.user, additional_checks=form.additional_checks()
                    )
                ]
            else:
                runs = services.launch_test_set(
                    test_set=test_set, by=request.user, additional_checks=form.additional_checks()
                )
        except Rejected as exc:
            for key, message in exc.errors.items():
                field = "additional" if key.startswith("additional_checks") else None
                form.add_error("trials" if key == "trials" else field, message)
        else:
            if len(runs) == 1:
                return redirect(runs[0])
            what = f"trials of {test.name}" if test is not None else f"runs of {test_set.name}"
            messages.success(request, f"Launched {len(runs)} {what}.")
            return redirect(f"{reverse('runs:run-list')}?batch={runs[0].batch}")
    selected = set(form.data.getlist("additional")) if form.is_bound else set()
    advisory = set(form.data.getlist("advisory")) if form.is_bound else set()
    context = {
        "form": form,
        "test": test,
        "test_set": test_set,
        "agent": agent,
        "tests": tests,
        "library": library,
        "selected": {int(x) for x in selected if x.isdigit()},
        "advisory": {int(x) for x in advisory if x.isdigit()},
        "total_samples": sum(t.current_version.total_samples for t in tests if t.current_version),
        "skipped_judges": skipped_judges,
        "archived_problem": archived_problem,
        "max_trials": services.max_trials(),
    }
    return render(request, "runs/run_launch.html", context)


# ---------------------------------------------------------------- list


FILTER_LABELS = {
    "agent": "agent",
    "test": "test",
    "result": "result",
    "status": "status",
    "date_from": "from",
    "date_to": "to",
    "batch": "batch",
}


def _active_filters(form: RunFilterForm, query) -> list[dict]:
    """The filters in effect, each with the query string that drops it ("Filtered by batch … · clear")."""
    if not form.is_bound or not form.is_valid():
        return []
    rows = []
    for name, label in FILTER_LABELS.items():
        value = form.cleaned_data.get(name)
        if value in (None, ""):
            continue
        if name in ("result", "status"):
            value = dict(form.fields[name].choices).get(value, value)
        elif name.startswith("date_"):
            value = value.isoformat()
        elif name == "test":
            value = value.name
        rest = QueryDict(mutable=True)
        for key in query:
            kept = [v for v in query.getlist(key) if v]
            if kept and key != name:
                rest.setlist(key, kept)
        rows.append({"label": label, "value": str(value), "clear": rest.urlencode()})
    return rows


# What a row of the runs list reads (a tuple a run: no model instances of runs, agents, tests, versions,
# users).
RUN_ROW_COLUMNS = (
    *("id", "status", "result", "done_samples", "total_samples", "summary", "created_at"),
    *("agent_id", "agent__name", "test_id", "test__name", "test_version__number", "test_version__scenarios"),
    "launched_by__username",
)
ACTIVE = frozenset({Run.Status.QUEUED.value, Run.Status.RUNNING.value})  # Run.is_active


@login_required
def run_list(request: HttpRequest) -> HttpResponse:
    team = request.team
    # The pickers and the rows read only what the page shows (an agent's headers, a test's scenarios
    # and the like are JSON and text a page of 25 runs would decode for nothing).
    agents = (
        Agent.objects.visible_to(request.user)
        .filter(team=team)
        .defer("description", "headers_encrypted", "header_names")
        .order_by("name", "pk")
    )
    tests = (
        Test.objects.visible_to(request.user)
        .filter(test_set__agent__team=team)
        .select_related("test_set__agent")
        .only("name", "test_set__agent__name")
        .order_by("test_set__agent__name", "name", "pk")
    )
    form = RunFilterForm(request.GET or None, agents=agents, tests=tests)
    sort = parse_sort(request.GET.get("sort"), RUN_COLUMNS, default="-launched")
    search, search_error = parse_search(request.GET.get("q"))
    runs = (
        Run.objects.visible_to(request.user)
        .filter(agent__team=team)
        .search(search)
        .order_by(*sort.order_by())
    )
    runs = form.filter(runs).values_list(*RUN_ROW_COLUMNS)
    page = Paginator(runs, PAGE_SIZE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    listed = list(page.object_list)
    urls = RunUrls()
    rows = [{"row": _run_row(r, urls)} for r in listed]
    # Rows refresh themselves (every 2 s) only while a run on this page is queued or running.
    polling = any(r[1] in ACTIVE for r in listed)
    context = {
        "page": page, "runs": rows, "query": query.urlencode(), "polling": polling,
        "sort": sort, "sorts": sort.headers(request.GET),
    }
    if target_fragment(request, ["run-rows"]) == "run-rows":
        status = 200 if polling else HTMX_STOP_POLLING
        return render(request, "runs/run_list.html#run-rows", context, status=status)
    agent = form.cleaned_data.get("agent") if form.is_bound and form.is_valid() else None
    batch = form.cleaned_data.get("batch") if form.is_bound and form.is_valid() else ""
    context.update(
        {
            "form": form,
            "agent": agent,
            "tab": "runs",
            "filtered": any(v for k, v in request.GET.items() if k not in ("sort", "page")),
            "active_filters": _active_filters(form, query),
            "search": search,
            "search_error": search_error,
            "batches": batch_consistency(request.user, batch) if batch else [],
        }
    )
    return render(request, "runs/run_list.html", context)


# The URL formers of the rows, made once a page.
RunUrls = functools.partial(
    RowUrls,
    run="runs:run-detail",
    agent="agents:agent-detail",
    test="checks:test-detail",
)


def _run_row(r: tuple, urls: RowUrls) -> SafeString:
    """One row of the runs list (a RUN_ROW_COLUMNS tuple), as the template would draw it (Python, not the
    engine); its consistency is pass^k at the largest k the run has, from its stored counts (no query)."""
    pk, status, result, done, total, summary, created_at, agent_id, agent, test_id, test, number = r[:12]
    scenarios, launched_by = r[12:]
    consistency = consistency_text(summary_figures(summary, len(scenarios or [])).run)
    result = f'<span class="badge {esc(result)}">{esc(result)}</span>' if result else ""
    launched = local_time(created_at, "Y-m-d H:i")
    by = f" · {esc(launched_by)}" if launched_by else ""
    return table_row(
        f'<td><a href="{esc(urls.run(pk))}"><strong>#{pk}</strong></a></td>',
        f'<td><a href="{esc(urls.agent(agent_id))}">{trunc(agent)}</a></td>',
        f'<td><a href="{esc(urls.test(test_id))}">{trunc(test)}</a>'
        f' <span class="muted small">v{number}</span></td>',
        f'<td><span class="badge {esc(status)}">{esc(status)}</span></td>',
        f"<td>{result or '<span class=\"muted\">—</span>'}</td>",
        f'<td class="num">{done} / {total}</td>',
        f'<td class="small consistency">{conditional_escape(consistency)}</td>',
        f'<td class="small">{esc(launched)}{by}</td>',
        attrs=f' data-run="{pk}"',
    )


def batch_consistency(user, batch: str) -> list[dict]:
    """Per test of a batch (a trials launch, or a test set's): every scenario's samples of all the
    batch's runs of that test, pooled, with pass^k and pass@k over them. One query."""
    runs = Run.objects.visible_to(user).filter(batch=batch).select_related("test", "test_version")
    tables = []
    for group in batch_groups(list(runs)):
        ks = shown_ks(group.samples_per_scenario * len(group.runs))
        cells = columns(group.figures.scenarios, ks)
        tables.append(
            {
                "test": group.test,
                "prefix": f"batch-{group.test.pk}",
                "runs": group.runs,
                "done": group.complete,
                "rows": [{"name": name, **cell} for name, cell in zip(group.names, cells, strict=True)],
                "total": {
                    "consistency": group.figures.run,
                    "cells": columns([group.figures.run], ks)[0]["cells"],
                    "k_max": len(ks),
                },
            }
        )
    return tables


# ---------------------------------------------------------------- the run page


def _run_for(request: HttpRequest, pk: int) -> Run:
    return get_object_or_404(
        Run.objects.visible_to(request.user).select_related(
            "agent__team", "test__test_set", "test_version", "launched_by", "launched_by_token"
        ),
        pk=pk,
    )


def _progress_context(request: HttpRequest, run: Run) -> dict:
    first_error = ""
    if run.result == Outcome.ERROR:  # say why, next to the result (one query, finished runs only)
        first_error = (
            Sample.objects.filter(run=run, outcome=Outcome.ERROR).exclude(error="")
            .order_by("scenario_index", "sample_index").values_list("error", flat=True).first()
        ) or ""
    scenarios = scenario_rows(run)
    return {
        "run": run,
        "scenarios": scenarios,
        "figures": run_figures(scenarios),
        "percent": run.progress_percent,
        "first_error": first_error,
        **page_flags(request.user, run.agent.team),
    }


def _tool_calls(raw: Any) -> dict:
    """Tool calls as reported, for display: unknown (key missing), a list, or malformed."""
    if raw is None:
        return {"state": "unknown", "items": []}
    if not isinstance(raw, list):
        return {"state": "malformed", "raw": pretty(raw), "items": []}
    items = []
    for index, call in enumerate(raw):
        if isinstance(call, dict):
            items.append(
                {
                    "index": index,
                    "name": str(call.get("name", "")),
                    "status": str(call.get("status", "")),
                    "node": str(call.get("node") or ""),
                    "input": pretty(call.get("input")),
                    "output": pretty(call.get("output")),
                    "error": pretty(call.get("error")),
                }
            )
        else:
            items.append(
                {
                    "index": index,
                    "name": "",
                    "status": "",
                    "node": "",
                    "input": pretty(call),
                    "output": "",
                    "error": "not an object",
                }
            )
    return {"state": "list", "items": items}


def _trace(raw: Any) -> dict:
    if raw is None:
        return {"state": "unknown", "items": []}
    if not isinstance(raw, list):
        return {"state": "malformed", "raw": pretty(raw), "items": []}
    items = [
        {
            "method": str(e.get("method", "")),
            "path": str(e.get("path", "")),
            "status": str(e.get("status", "")),
            "tool": str(e.get("tool") or ""),
        }
        if isinstance(e, dict)
        else {"method": "", "path": pretty(e), "status": "", "tool": ""}
        for e in raw
    ]
    return {"state": "list", "items": items}


def _messages(sample: Sample, scenario: dict) -> list[dict]:
    transcript = sample.transcript if isinstance(sample.transcript, list) and sample.transcript else None
    if transcript is None:
        transcript = list(scenario.get("messages") or [])
        if sample.status == Sample.Status.DONE and sample.output:
            transcript.append({"role": "assistant", "content": sample.output})
    rows = []
    for message in transcript:
        if isinstance(message, dict):
            role = str(message.get("role", ""))
            content = message.get("content")
            rows.append(
                {
                    "role": role if role in ("user", "assistant", "system", "tool") else "other",
                    "label": role or "message",
                    "content": pretty(content),
                }
            )
        else:
            rows.append({"role": "other", "label": "message", "content": pretty(message)})
    return rows


def _wording(expected: str, actual: str, explanation: str) -> tuple[bool, bool]:
    """(show the Expected/Actual pair, show the explanation): the same words are never shown twice.

    The kinds' sentence ("Expected <expected>, but <actual>.") already holds the pair, so it is shown
    alone; a judge's reason is already part of its actual ("the judge answered pass: <reason>"), so the
    pair is shown alone."""
    explanation = explanation.strip()
    if not explanation:
        return bool(expected or actual), False
    if not (expected or actual) or (expected and expected in explanation):
        return False, True
    reason = explanation.partition(": ")[2] or explanation  # "Pass by 2/3 judge votes: <reason>"
    return True, not (explanation in actual or reason in actual)


def _result_view(result: CheckResult, run_check: RunCheck | None) -> dict:
    details = result.details if isinstance(result.details, dict) else {}
    judge = details.get("judge") if isinstance(details.get("judge"), dict) else None
    other = {k: v for k, v in details.items() if k != "judge"}
    version = result.check_version
    show_pair, show_explanation = _wording(result.expected, result.actual, result.explanation)
    return {
        "name": version.name,
        "number": version.number,
        "check_id": version.parent_id,
        "kind": version.kind,
        "required": result.required,
        "additional": bool(run_check and run_check.additional),
        "outcome": result.outcome,
        "expected": result.expected,
        "actual": result.actual,
        "explanation": result.explanation,
        "show_pair": show_pair,
        "show_explanation": show_explanation,
        "evidence": [e for e in (result.evidence or []) if isinstance(e, int | str)],
        "judge": [(k, pretty(v)) for k, v in judge.items()] if judge else None,
        "details": pretty(other) if other else "",
    }


def _samples(run: Run, run_checks: list[RunCheck]) -> list[dict]:
    by_version = {rc.check_version_id: rc for rc in run_checks}
    samples = (
        Sample.objects.filter(run=run)
        .select_related("world__scene_version")
        .prefetch_related(
            Prefetch("results", queryset=CheckResult.objects.select_related("check_version").order_by("id")),
            "world__entries",
            "world__tool_states",
        )
        .order_by("scenario_index", "sample_index")
    )
    scenarios = run.test_version.scenarios
    position = {rc.check_version_id: rc.position for rc in run_checks}
    rows = []
    for sample in samples:
        scenario = scenarios[sample.scenario_index] if sample.scenario_index < len(scenarios) else {}
        results = sorted(sample.results.all(), key=lambda r: position.get(r.check_version_id, 999))
        done = sample.status == Sample.Status.DONE and bool(sample.outcome)
        rows.append(
            {
                "sample": sample,
                "scenario": scenario_name(scenario, sample.scenario_index),
                "done": done,
                "not_counted": done and sample.outcome in NOT_COUNTED,
                "messages": _messages(sample, scenario),
                "tool_calls": _tool_calls(sample.tool_calls) if done else {"state": "pending", "items": []},
                "trace": _trace(sample.trace),
                "attempts": [a for a in (sample.attempts or []) if isinstance(a, dict)],
                "results": [_result_view(r, by_version.get(r.check_version_id)) for r in results],
                "world": sample_world(sample.world, sample.world_checks or []),
            }
        )
    return rows


def _latency(samples: list[dict]) -> dict | None:
    timed = [
        (row["sample"].latency_ms, row["sample"]) for row in samples if row["sample"].latency_ms is not None
    ]
    if not timed:
        return None
    slowest = max(timed, key=lambda item: item[0])
    return {
        "median": statistics.median(ms for ms, _ in timed),
        "slowest": slowest[0],
        "slowest_sample": slowest[1],
        "count": len(timed),
    }


def _check_rates(run: Run, run_checks: list[RunCheck]) -> list[dict]:
    stats = (run.summary or {}).get("checks", {})
    names = scenario_names(run.test_version.scenarios)
    rows = []
    for rc in run_checks:
        counts = stats.get(str(rc.check_version_id), {})
        # Flaky = both outcomes on one scenario. Summaries saved before that rule have no
        # flaky_scenarios; their "flaky" mixed scenarios, so it is not shown.
        flaky_on = [
            names[i] for i in counts.get("flaky_scenarios") or () if isinstance(i, int) and i < len(names)
        ]
        rows.append(
            {
                "run_check": rc,
                "version": rc.check_version,
                "passed": counts.get("passed", 0),
                "failed": counts.get("failed", 0),
                "errored": counts.get("errored", 0),
                "indeterminate": counts.get("indeterminate", 0),
                "pass_rate": counts.get("pass_rate"),
                "flaky": bool(flaky_on),
                "flaky_on": flaky_on,
            }
        )
    return rows


def _judge_note(run_checks: list[RunCheck], samples: list[dict]) -> dict | None:
    """Why the run's AI judge checks are (or will be) indeterminate: no judge key. None: nothing to say."""
    names = [rc.check_version.name for rc in run_checks if rc.check_version.kind == JUDGE_KIND]
    if not names:
        return None
    skipped = sum(
        any(r["kind"] == JUDGE_KIND and r["actual"] == SKIPPED_NO_KEY for r in row["results"])
        for row in samples
    )
    configured = judge_configured()
    if configured and not skipped:
        return None
    return {"names": names, "skipped": skipped, "configured": configured}

def _failures_only(request: HttpRequest) -> tuple[bool, str]:
    """`?failures=1` shows failed and errored samples only; a value that is not a boolean says so."""
    raw = request.GET.get("failures", "")
    if raw.lower() in TRUE:
        return True, ""
    if raw.lower() in FALSE:
        return False, ""
    return False, f"failures={raw[:20]!r} is not a boolean (use 1 or 0): showing every sample."


def _diff_context(request: HttpRequest, run: Run) -> dict:
    """`?diff_a=<sample id>&diff_b=<sample id>`: the line diff of two samples' outputs, or why not."""
    if "diff_a" not in request.GET and "diff_b" not in request.GET:
        return {"diff": None, "diff_error": ""}
    try:
        diff = sample_diff(run, request.GET.get("diff_a"), request.GET.get("diff_b"))
    except ValidationFailed as exc:
        return {"diff": None, "diff_error": " ".join(exc.errors.values())}
    return {"diff": diff, "diff_error": ""}


@login_required
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = _run_for(request, pk)
    fragment = target_fragment(request, ["run-progress", "run-samples", "sample-diff"])
    if fragment == "sample-diff":
        context = {"run": run, **_diff_context(request, run)}
        return render(request, "runs/run_detail.html#sample-diff", context)
    if fragment == "run-progress":
        # Polled about every second while the run is active; 286 tells htmx to stop polling.
        response = render(
            request,
            "runs/run_detail.html#run-progress",
            _progress_context(request, run),
            status=200 if run.is_active else HTMX_STOP_POLLING,
        )
        seen = request.GET.get("seen", "")
        if seen != str(run.done_samples) or not run.is_active:
            response["HX-Trigger"] = "run-updated"
        return response
    run_checks = list(RunCheck.objects.filter(run=run).select_related("check_version").order_by("position"))
    samples = _samples(run, run_checks)
    failures_only, filter_error = _failures_only(request)
    failed = [row for row in samples if row["done"] and row["sample"].outcome in FAILURES]
    context = {
        **_progress_context(request, run),
        # Latency and counts stay over every sample; the filter narrows the list only.
        "samples": failed if failures_only else samples,
        "all_samples": len(samples),
        "failure_count": len(failed),
        "failures_only": failures_only,
        "filter_error": filter_error,
        "run_checks": run_checks,
        "latency": _latency(samples),
        "check_rates": _check_rates(run, run_checks),
        # Only asked when no library check is attached (the table's empty line says who judges then).
        "plays_scenes": not run_checks and run.run_scenes.exists(),
        "judge_note": _judge_note(run_checks, samples),
        "flaky": [s for s in scenario_rows(run) if s["flaky"]],
    }
    if fragment == "run-samples":
        return render(request, "runs/run_detail.html#run-samples", context)
    context.update(_diff_context(request, run), diff_choices=samples)
    context["compare_with"] = (
        Run.objects.filter(test=run.test)
        .exclude(pk=run.pk)
        .select_related("test_version")
        .order_by("-created_at", "-id")[:20]
    )
    return render(request, "runs/run_detail.html", context)


@require_POST
@login_required
def run_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    run = _run_for(request, pk)
    try:
        services.cancel_run(run=run, by=request.user)
    except Rejected as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Run {run.pk} cancelled; finished samples are kept.")
    return redirect(run)


# ---------------------------------------------------------------- compare


@login_required
def run_compare(request: HttpRequest) -> HttpResponse:
    a_id, b_id = request.GET.get("a", ""), request.GET.get("b", "")
    visible = Run.objects.visible_to(request.user).select_related(
        "test__test_set__agent__team", "test_version", "agent"
    )
    run_a = get_object_or_404(visible, pk=a_id) if a_id.isdigit() else None
    if run_a is None:
        messages.info(request, "Open a run and pick another run of the same test to compare with.")
        return redirect("runs:run-list")
    others = visible.filter(test=run_a.test).exclude(pk=run_a.pk).order_by("-created_at", "-id")[:50]
    if not b_id.isdigit():
        return render(request, "runs/run_compare.html", {"a": run_a, "b": None, "others": others})
    run_b = get_object_or_404(visible, pk=b_id)
    if run_b.test_id != run_a.test_id:
        return render(
            request,
            "runs/run_compare.html",
            {"a": run_a, "b": None, "others": others, "error": "Only runs of the same test can be compared."},
            status=400,
        )
    comparison = compare_runs(run_a, run_b)
    picked = {key: request.GET.get(key, "") for key in ("scenario", "sample_a", "sample_b")}
    try:
        diff, diff_error = scenario_diff(comparison, **picked), ""
    except ValidationFailed as exc:
        diff, diff_error = None, " ".join(exc.errors.values())
    context = {
        "a": comparison.a,
        "b": comparison.b,
        "others": others,
        "scenarios": comparison.scenarios,
        "versions": comparison.versions,
        "changed": comparison.changed,
        "comparison": comparison,
        "picked": picked,
        "diff": diff,
        "diff_error": diff_error,
    }
    fragment = target_fragment(request, ["output-diff"])
    return page_or_fragment(request, "runs/run_compare.html", fragment, context)


# ---------------------------------------------------------------- a test's runs over time


@login_required
def test_consistency(request: HttpRequest, pk: int) -> HttpResponse:
    """Each scenario's pass rate and pass^k across a test's recent runs, as a chart (the test page loads
    this region with htmx) with the check-version changes marked on its axis. Three queries: the test,
    its runs (+ test versions), their frozen check versions."""
    test = get_object_or_404(Test.objects.visible_to(request.user).select_related("test_set__agent"), pk=pk)
    recent = Run.objects.filter(test=test).select_related("test_version").order_by("-created_at", "-id")
    runs = list(recent[:TREND_RUNS])[::-1]
    versions: dict[int, list[tuple[int, str, int]]] = {}
    rows = RunCheck.objects.filter(run__in=[r.pk for r in runs]).values_list(
        "run_id", "check_version__parent_id", "check_version__name", "check_version__number"
    )
    for run_id, check_id, name, number in rows:
        versions.setdefault(run_id, []).append((check_id, name, number))
    context = {"test": test, "runs": runs, **consistency_trend(test, runs, versions)}
    return page_or_fragment(request, "runs/test_consistency.html", "test-consistency", context)
