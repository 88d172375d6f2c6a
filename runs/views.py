"""Run pages: launcher, run list, the live run page and the side-by-side comparison."""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from agents.models import Agent
from checks import kinds
from checks.models import Check, Test, TestCheck, TestSet
from checks.services import version_diff
from core.errors import DomainError, PermissionDenied
from core.htmx import HTMX_STOP_POLLING, target_fragment
from runs import services
from runs.forms import LaunchForm, RunFilterForm
from runs.models import CheckResult, Outcome, Run, RunCheck, Sample
from teams.access import page_flags
from teams.views import forbidden

PAGE_SIZE = 25
NOT_COUNTED = (Outcome.ERROR, Outcome.INDETERMINATE)


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
    attached = set(
        TestCheck.objects.filter(test_version__in=[t.current_version_id for t in tests]).values_list(
            "library_check_id", flat=True
        )
    )
    library = list(
        Check.objects.filter(agent=agent, archived_at__isnull=True)
        .exclude(pk__in=attached)
        .select_related("current_version")
        .order_by("kind", "name", "pk")
    )
    labels = dict(kinds.kind_choices())
    for check in library:
        check.kind_label = labels.get(check.kind, check.kind)
    form = LaunchForm(request.POST or None, library=library)
    archived_problem = services.archived_test_set_problem(test_set) if test_set.archived_at else ""
    if request.method == "POST" and form.is_valid():
        try:
            if test is not None:
                runs = [
                    services.launch_run(
                        test=test, by=request.user, additional_checks=form.additional_checks()
                    )
                ]
            else:
                runs = services.launch_test_set(
                    test_set=test_set, by=request.user, additional_checks=form.additional_checks()
                )
        except PermissionDenied as exc:
            return forbidden(request, str(exc))
        except DomainError as exc:
            for key, message in exc.errors.items():
                form.add_error("additional" if key.startswith("additional_checks") else None, message)
        else:
            if len(runs) == 1:
                return redirect(runs[0])
            messages.success(request, f"Launched {len(runs)} runs of {test_set.name}.")
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
        "archived_problem": archived_problem,
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


@login_required
def run_list(request: HttpRequest) -> HttpResponse:
    team = request.team
    agents = Agent.objects.visible_to(request.user).filter(team=team).order_by("name", "pk")
    tests = (
        Test.objects.visible_to(request.user)
        .filter(test_set__agent__team=team)
        .select_related("test_set__agent")
        .order_by("test_set__agent__name", "name", "pk")
    )
    form = RunFilterForm(request.GET or None, agents=agents, tests=tests)
    runs = (
        Run.objects.visible_to(request.user)
        .filter(agent__team=team)
        .select_related("agent", "test", "test_version", "launched_by")
        .order_by("-created_at", "-id")
    )
    runs = form.filter(runs)
    page = Paginator(runs, PAGE_SIZE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    rows = list(page.object_list)
    # Rows refresh themselves (every 2 s) only while a run on this page is queued or running.
    polling = any(r.is_active for r in rows)
    context = {"page": page, "runs": rows, "query": query.urlencode(), "polling": polling}
    if target_fragment(request, ["run-rows"]) == "run-rows":
        status = 200 if polling else HTMX_STOP_POLLING
        return render(request, "runs/run_list.html#run-rows", context, status=status)
    agent = form.cleaned_data.get("agent") if form.is_bound and form.is_valid() else None
    context.update(
        {
            "form": form,
            "agent": agent,
            "tab": "runs",
            "filtered": bool(query),
            "active_filters": _active_filters(form, query),
        }
    )
    return render(request, "runs/run_list.html", context)


# ---------------------------------------------------------------- the run page


def _run_for(request: HttpRequest, pk: int) -> Run:
    return get_object_or_404(
        Run.objects.visible_to(request.user).select_related(
            "agent__team", "test__test_set", "test_version", "launched_by", "launched_by_token"
        ),
        pk=pk,
    )


def _scenarios(run: Run) -> list[dict]:
    """Per-scenario counts from the run's summary (kept current by the workers) plus names."""
    specs = run.test_version.scenarios
    counted = {s.get("index"): s for s in (run.summary or {}).get("scenarios", []) if isinstance(s, dict)}
    rows = []
    for index, spec in enumerate(specs):
        counts = counted.get(index, {})
        rows.append(
            {
                "index": index,
                "name": spec.get("name") or f"Scenario {index + 1}",
                "total": counts.get("total", run.test_version.samples_per_scenario),
                "done": counts.get("done", 0),
                "passed": counts.get("passed", 0),
                "failed": counts.get("failed", 0),
                "errored": counts.get("errored", 0),
                "indeterminate": counts.get("indeterminate", 0),
                "determinate": counts.get("determinate", 0),
                "pass_rate": counts.get("pass_rate"),
                "required_pass_rate": counts.get("required_pass_rate", run.test_version.required_pass_rate),
                "min_valid": counts.get("min_valid", run.test_version.min_valid_per_scenario),
                "meets_threshold": counts.get("meets_threshold"),
                "enough_valid": counts.get("enough_valid", False),
                "flaky": counts.get("flaky", False),
            }
        )
    return rows


def _progress_context(request: HttpRequest, run: Run) -> dict:
    return {
        "run": run,
        "scenarios": _scenarios(run),
        "percent": run.progress_percent,
        **page_flags(request.user, run.agent.team),
    }


def _pretty(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False)


def _tool_calls(raw: Any) -> dict:
    """Tool calls as reported, for display: unknown (key missing), a list, or malformed."""
    if raw is None:
        return {"state": "unknown", "items": []}
    if not isinstance(raw, list):
        return {"state": "malformed", "raw": _pretty(raw), "items": []}
    items = []
    for index, call in enumerate(raw):
        if isinstance(call, dict):
            items.append(
                {
                    "index": index,
                    "name": str(call.get("name", "")),
                    "status": str(call.get("status", "")),
                    "node": str(call.get("node") or ""),
                    "input": _pretty(call.get("input")),
                    "output": _pretty(call.get("output")),
                    "error": _pretty(call.get("error")),
                }
            )
        else:
            items.append(
                {
                    "index": index,
                    "name": "",
                    "status": "",
                    "node": "",
                    "input": _pretty(call),
                    "output": "",
                    "error": "not an object",
                }
            )
    return {"state": "list", "items": items}


def _trace(raw: Any) -> dict:
    if raw is None:
        return {"state": "unknown", "items": []}
    if not isinstance(raw, list):
        return {"state": "malformed", "raw": _pretty(raw), "items": []}
    items = [
        {
            "method": str(e.get("method", "")),
            "path": str(e.get("path", "")),
            "status": str(e.get("status", "")),
            "tool": str(e.get("tool") or ""),
        }
        if isinstance(e, dict)
        else {"method": "", "path": _pretty(e), "status": "", "tool": ""}
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
                    "content": _pretty(content),
                }
            )
        else:
            rows.append({"role": "other", "label": "message", "content": _pretty(message)})
    return rows


def _result_view(result: CheckResult, run_check: RunCheck | None) -> dict:
    details = result.details if isinstance(result.details, dict) else {}
    judge = details.get("judge") if isinstance(details.get("judge"), dict) else None
    other = {k: v for k, v in details.items() if k != "judge"}
    version = result.check_version
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
        "evidence": [e for e in (result.evidence or []) if isinstance(e, int | str)],
        "judge": [(k, _pretty(v)) for k, v in judge.items()] if judge else None,
        "details": _pretty(other) if other else "",
    }


def _samples(run: Run, run_checks: list[RunCheck]) -> list[dict]:
    by_version = {rc.check_version_id: rc for rc in run_checks}
    samples = (
        Sample.objects.filter(run=run)
        .prefetch_related(
            Prefetch("results", queryset=CheckResult.objects.select_related("check_version").order_by("id"))
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
                "scenario": scenario.get("name") or f"Scenario {sample.scenario_index + 1}",
                "done": done,
                "not_counted": done and sample.outcome in NOT_COUNTED,
                "messages": _messages(sample, scenario),
                "tool_calls": _tool_calls(sample.tool_calls) if done else {"state": "pending", "items": []},
                "trace": _trace(sample.trace),
                "attempts": [a for a in (sample.attempts or []) if isinstance(a, dict)],
                "results": [_result_view(r, by_version.get(r.check_version_id)) for r in results],
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
    rows = []
    for rc in run_checks:
        counts = stats.get(str(rc.check_version_id), {})
        rows.append(
            {
                "run_check": rc,
                "version": rc.check_version,
                "passed": counts.get("passed", 0),
                "failed": counts.get("failed", 0),
                "errored": counts.get("errored", 0),
                "indeterminate": counts.get("indeterminate", 0),
                "pass_rate": counts.get("pass_rate"),
                "flaky": counts.get("flaky", False),
            }
        )
    return rows


@login_required
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = _run_for(request, pk)
    fragment = target_fragment(request, ["run-progress", "run-samples"])
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
    context = {
        **_progress_context(request, run),
        "samples": samples,
        "run_checks": run_checks,
        "latency": _latency(samples),
        "check_rates": _check_rates(run, run_checks),
        "flaky": [s for s in _scenarios(run) if s["flaky"]],
    }
    if fragment == "run-samples":
        return render(request, "runs/run_detail.html#run-samples", context)
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
    except PermissionDenied as exc:
        return forbidden(request, str(exc))
    except DomainError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Run {run.pk} cancelled; finished samples are kept.")
    return redirect(run)


# ---------------------------------------------------------------- compare


def _outcome_table(run: Run) -> dict[tuple[int, int], dict[str, int]]:
    """(scenario index, library check id) → outcome counts, from the run's check results."""
    table: dict[tuple[int, int], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    rows = CheckResult.objects.filter(sample__run=run).values_list(
        "sample__scenario_index", "check_version__parent_id", "outcome"
    )
    for scenario_index, check_id, outcome in rows:
        table[(scenario_index, check_id)][outcome] += 1
    return table


def _counts_text(counts: dict[str, int] | None) -> str:
    if not counts:
        return "not run"
    order = [Outcome.PASS, Outcome.FAIL, Outcome.ERROR, Outcome.INDETERMINATE]
    return ", ".join(f"{counts[o]} {o}" for o in order if counts.get(o))


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
    # Older run on the left, so "before → after" reads naturally.
    if (run_b.created_at, run_b.pk) < (run_a.created_at, run_a.pk):
        run_a, run_b = run_b, run_a
    scen_a, scen_b = _scenarios(run_a), _scenarios(run_b)
    by_name_b = {s["name"]: s for s in scen_b}
    matched, used_b = [], set()
    for s in scen_a:
        other = by_name_b.get(s["name"])
        if (
            other is None
            and s["index"] < len(scen_b)
            and scen_b[s["index"]]["name"] not in {x["name"] for x in scen_a}
        ):
            other = scen_b[s["index"]]
        if other is not None:
            used_b.add(other["index"])
        matched.append(
            {
                "name": s["name"],
                "a": s,
                "b": other,
                "a_index": s["index"],
                "b_index": other["index"] if other else None,
            }
        )
    for s in scen_b:
        if s["index"] not in used_b:
            matched.append({"name": s["name"], "a": None, "b": s, "a_index": None, "b_index": s["index"]})
    for row in matched:
        ra = row["a"]["pass_rate"] if row["a"] else None
        rb = row["b"]["pass_rate"] if row["b"] else None
        row["delta"] = round(rb - ra, 2) if ra is not None and rb is not None else None

    rc_a = {
        rc.check_version.parent_id: rc
        for rc in RunCheck.objects.filter(run=run_a).select_related("check_version")
    }
    rc_b = {
        rc.check_version.parent_id: rc
        for rc in RunCheck.objects.filter(run=run_b).select_related("check_version")
    }
    version_rows = []
    for check_id in sorted(set(rc_a) | set(rc_b), key=lambda c: (rc_a.get(c) or rc_b.get(c)).position):
        va = rc_a[check_id].check_version if check_id in rc_a else None
        vb = rc_b[check_id].check_version if check_id in rc_b else None
        if va is not None and vb is not None and va.pk == vb.pk:
            continue
        changes = version_diff(va, vb) if va is not None and vb is not None else []
        version_rows.append(
            {
                "name": (vb or va).name,
                "check_id": check_id,
                "a": va,
                "b": vb,
                "changes": [
                    {"field": f, "before": _pretty(x) or "—", "after": _pretty(y) or "—"}
                    for f, x, y in changes
                ],
            }
        )

    table_a, table_b = _outcome_table(run_a), _outcome_table(run_b)
    names = {cid: (rc_b.get(cid) or rc_a.get(cid)).check_version.name for cid in set(rc_a) | set(rc_b)}
    changed = []
    for row in matched:
        for check_id in sorted(names, key=lambda c: names[c]):
            ca = table_a.get((row["a_index"], check_id)) if row["a_index"] is not None else None
            cb = table_b.get((row["b_index"], check_id)) if row["b_index"] is not None else None
            if _counts_text(ca) != _counts_text(cb):
                changed.append(
                    {
                        "scenario": row["name"],
                        "check": names[check_id],
                        "check_id": check_id,
                        "a": _counts_text(ca),
                        "b": _counts_text(cb),
                    }
                )
    context = {
        "a": run_a,
        "b": run_b,
        "others": others,
        "scenarios": matched,
        "versions": version_rows,
        "changed": changed,
    }
    return render(request, "runs/run_compare.html", context)
