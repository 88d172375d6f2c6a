"""Pages for live tasks, monitor dashboards and one-off evaluations. Writes go through monitors.services.

Every list reads a fixed number of queries whatever the number of rows (counts come from DB
aggregates); another team's object is a 404; a write the role does not allow is a 403 page.
"""

from __future__ import annotations

import functools
import json
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count, QuerySet
from django.db.models.functions import Left
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.defaultfilters import floatformat
from django.urls import reverse
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_POST

from agents.models import Agent
from checks.models import Check
from core.errors import DomainError
from core.ids import id_from_text
from core.templatetags.names import esc, local_time, trunc, truncate
from core.urls import RowUrls, pk_url_former
from core.views import forbidden, table_row
from monitors import services as monitoring
from monitors.forms import SORT_LABELS, LaunchEvaluationForm, MonitorForm, TaskFilterForm
from monitors.models import Evaluation, Monitor, Task
from runs.models import CheckResult
from teams.access import page_flags
from teams.views import saved_or_errors

TASKS_PER_PAGE = 50
GRID_ROWS_PER_PAGE = 50
WINDOWS = {"hour": [1, 2, 7], "day": [7, 30, 90]}
HTMX_STOP_POLLING = 286


# ---------------------------------------------------------------- helpers


def _is_fragment(request: HttpRequest) -> bool:
    htmx = getattr(request, "htmx", None)
    return bool(htmx) and not htmx.boosted


def _page_or_fragment(request: HttpRequest, template: str, fragment: str, context: dict, status: int = 200):
    """The whole page, or only `template#fragment` for an HTMX (non-boosted) request."""
    if _is_fragment(request):
        return render(request, f"{template}#{fragment}", context, status=status)
    return render(request, template, context, status=status)


def _team_agents(request: HttpRequest) -> QuerySet[Agent]:
    return (
        Agent.objects.visible_to(request.user)
        .filter(team=request.team, archived_at__isnull=True)
        .order_by("name", "pk")
    )


def _apply_errors(form, exc: DomainError) -> None:
    for key, message in exc.errors.items():
        head = key.split(".", 1)[0]
        if head in form.fields and head != key:
            form.add_error(head, message)  # e.g. checks.0.check: its message names the check
        elif key in form.fields:
            form.add_error(key, message)
        else:
            form.add_error(None, message if key == "__all__" else f"{key}: {message}")


def _pretty(value) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False, default=str)


# ---------------------------------------------------------------- tasks


@login_required
def task_list(request: HttpRequest) -> HttpResponse:
    """Tasks of the current team, filtered, 50 a page, with selection for a one-off evaluation.

    Queries: session, user, team, agents (filter choices), role, count, page.
    """
    team = request.team
    agents = list(_team_agents(request).values_list("pk", "name"))  # the filter picker shows names
    form = TaskFilterForm(request.GET or None, agent_choices=agents)
    valid = form.is_bound and form.is_valid()
    filters = form.filters() if valid else monitoring.TaskFilters()
    sort = form.ordering() if valid else monitoring.DEFAULT_TASK_SORT
    tasks = monitoring.sort_tasks(
        monitoring.filter_tasks(Task.objects.visible_to(request.user).filter(agent__team=team), filters)
        .annotate(preview=Left("output", 160)),
        sort,
    ).values_list(*TASK_ROW_COLUMNS)
    page = Paginator(tasks, TASKS_PER_PAGE).get_page(request.GET.get("page"))
    params = filters.as_params()
    sorted_params = params if sort == monitoring.DEFAULT_TASK_SORT else {**params, "sort": sort}
    flags = page_flags(request.user, team)
    can_edit, url = flags.get("can_edit"), pk_url_former("monitors:task-detail")
    rows = [{"row": _task_row(t, can_edit, url)} for t in page.object_list]
    context = {
        "form": form,
        "page": page,
        "tasks": rows,
        "filter_params": params,
        "sort_links": _sort_links(params, sort),
        "sort_label": SORT_LABELS[sort],
        "query": urlencode(sorted_params),
        "agents": agents,
        **flags,
    }
    return _page_or_fragment(request, "monitors/task_list.html", "task-results", context)


# What a row of the tasks list reads of a task (with its output's first 160 characters as `preview`).
TASK_ROW_COLUMNS = ("id", "external_id", "completed_at", "has_failures", "sampled", "agent__name", "preview")


def _task_row(t: tuple, can_edit: bool, url) -> SafeString:
    """One row of the tasks list (a TASK_ROW_COLUMNS tuple), as the template would draw it (50 a page:
    Python, not the engine); `url` forms a task's URL (pk_url_former("monitors:task-detail"))."""
    pk, external_id, completed_at, has_failures, sampled, agent_name, preview = t
    pick = ""
    if can_edit:
        pick = (
            f'<td><input type="checkbox" name="task" value="{pk}" id="task-{pk}" '
            f'aria-label="Select task {esc(external_id)}"></td>'
        )
    completed = local_time(completed_at, "Y-m-d H:i:s")
    mark = '<span class="badge fail">Failures</span>' if has_failures else ""
    mark = mark or ('<span class="tag">sampled</span>' if sampled else "")
    return table_row(
        pick,
        f'<td><a href="{esc(url(pk))}">{esc(external_id)}</a></td>',
        f"<td>{trunc(agent_name)}</td>",
        f'<td class="small">{esc(completed)}</td>',
        f'<td class="small">{esc(truncate(preview, 120))}</td>',
        f"<td>{mark}</td>",
        indent=6,
        tail=6,
    )


def _sort_links(params: dict[str, str], sort: str) -> dict[str, dict[str, str]]:
    """Per sortable column: the query string its header links to (same column again reverses it)
    and its aria-sort value."""
    links = {}
    for key in ("external_id", "agent", "completed_at"):
        state = "ascending" if sort == key else "descending" if sort == f"-{key}" else ""
        following = f"-{key}" if state == "ascending" else key
        links[key] = {"query": urlencode({**params, "sort": following}), "aria_sort": state}
    return links


@login_required
def task_detail(request: HttpRequest, pk: int) -> HttpResponse:
    task = get_object_or_404(Task.objects.visible_to(request.user).select_related("agent"), pk=pk)
    results = (
        CheckResult.objects.filter(task=task)
        .select_related("check_version", "monitor", "evaluation")
        .order_by("-created_at", "-id")
    )
    context = {
        "task": task,
        "results": results,
        "tool_calls_json": None if task.tool_calls is None else _pretty(task.tool_calls),
        "trace_json": None if task.trace is None else _pretty(task.trace),
        "metadata_json": _pretty(task.metadata or {}),
    }
    return render(request, "monitors/task_detail.html", context)


# ---------------------------------------------------------------- one-off evaluations


def _selection(
    request: HttpRequest, data
) -> tuple[Agent | None, list[int] | None, monitoring.TaskFilters | None, str]:
    """Read the tasks chosen on the task list: explicit ids (`task`) or "all matching" (`all=1` + filters).

    Returns (agent, task_ids, filters, problem). Only the user's visible tasks count.
    """
    visible = Task.objects.visible_to(request.user).filter(agent__team=request.team)
    if data.get("all") == "1":
        form = TaskFilterForm(data, agents=list(_team_agents(request)))
        if not form.is_valid():
            return None, None, None, "The filters are not valid any more; go back to the task list."
        filters = form.filters()
        if filters.agent is None:
            # order_by(): Task's default ordering would add completed_at to the DISTINCT, so one
            # agent's tasks would read as several "agents".
            agent_ids = list(
                monitoring.filter_tasks(visible, filters)
                .order_by()
                .values_list("agent_id", flat=True)
                .distinct()[:2]
            )
            if len(agent_ids) != 1:
                return (
                    None,
                    None,
                    None,
                    "Filter the task list to one agent before selecting all matching tasks.",
                )
            filters = monitoring.TaskFilters(**{**filters.__dict__, "agent": agent_ids[0]})
        agent = _team_agents(request).filter(pk=filters.agent).first()
        if agent is None:
            return None, None, None, "That agent does not exist."
        return agent, None, filters, ""
    raw = data.getlist("task")
    ids = sorted({i for i in map(id_from_text, raw) if i is not None})
    if not ids:
        return None, None, None, "Select at least one task (or all matching tasks) on the task list."
    agent_ids = set(visible.filter(pk__in=ids).values_list("agent_id", flat=True).distinct())
    if len(agent_ids) != 1:
        return (
            None,
            None,
            None,
            (
                "The selected tasks belong to several agents; an evaluation runs the checks of one agent."
                if agent_ids
                else "None of the selected tasks exist."
            ),
        )
    agent = _team_agents(request).filter(pk=agent_ids.pop()).first()
    if agent is None:
        return None, None, None, "That agent is archived."
    return agent, ids, None, ""


@login_required
def evaluation_create(request: HttpRequest) -> HttpResponse:
    """Step 2 of "select tasks -> choose checks -> launch": pick the checks for the selected tasks."""
    data = request.POST if request.method == "POST" else request.GET
    agent, task_ids, filters, problem = _selection(request, data)
    if problem:
        messages.error(request, problem)
        return redirect("monitors:task-list")
    roles = page_flags(request.user, agent.team)
    checks = list(Check.objects.filter(agent=agent, archived_at__isnull=True).order_by("name", "id"))
    form = LaunchEvaluationForm(request.POST if request.method == "POST" else None, checks=checks)
    if request.method == "POST":
        if not roles["can_edit"]:
            return forbidden(request, "Viewers can read evaluations but not launch them.")
        if form.is_valid():
            done = saved_or_errors(
                request,
                form,
                lambda: monitoring.launch_evaluation(
                    agent=agent,
                    by=request.user,
                    check_ids=form.cleaned_data["checks"],
                    task_ids=task_ids,
                    filters=filters,
                    name=form.cleaned_data["name"],
                ),
                message="Evaluation launched; results appear as the checks run.",
                errors=_apply_errors,
            )
            if done is not None:
                return done
    if filters is not None:
        count = monitoring.filter_tasks(Task.objects.filter(agent=agent), filters).count()
        hidden = [("all", "1"), *filters.as_params().items()]
    else:
        count = len(task_ids or [])
        hidden = [("task", str(t)) for t in task_ids or []]
    context = {
        "form": form,
        "agent": agent,
        "count": count,
        "hidden": hidden,
        "filters": filters,
        "back_query": urlencode(filters.as_params()) if filters else "",
        **roles,
    }
    return render(request, "monitors/evaluation_create.html", context)


@login_required
def evaluation_list(request: HttpRequest) -> HttpResponse:
    evaluations = (
        Evaluation.objects.visible_to(request.user)
        .filter(agent__team=request.team)
        .select_related("agent", "created_by")
        .annotate(task_count=Count("tasks", distinct=True))
        .order_by("-created_at", "-id")
    )
    page = Paginator(evaluations, 25).get_page(request.GET.get("page"))
    return render(request, "monitors/evaluation_list.html", {"page": page, "evaluations": page.object_list})


@login_required
def evaluation_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """The task x check grid, a page of tasks at a time; polls while the evaluation runs."""
    evaluation = get_object_or_404(
        Evaluation.objects.visible_to(request.user)
        .select_related("agent", "created_by")
        .annotate(task_count=Count("tasks", distinct=True)),
        pk=pk,
    )
    task_ids = evaluation.tasks.order_by("-completed_at", "-id").values_list("pk", flat=True)
    page = Paginator(task_ids, GRID_ROWS_PER_PAGE).get_page(request.GET.get("page"))
    grid = monitoring.evaluation_grid(evaluation, list(page.object_list))
    total = evaluation.task_count * len(grid.versions)
    columns = [(v, grid.counts.get(v.pk, {})) for v in grid.versions]
    running = evaluation.status != Evaluation.Status.COMPLETED
    context = {
        "evaluation": evaluation,
        "grid": grid,
        "columns": columns,
        "page": page,
        "running": running,
        "done": grid.done,
        "total": total,
        "percent": int(grid.done * 100 / total) if total else 100,
        "query": "",
    }
    response = _page_or_fragment(request, "monitors/evaluation_detail.html", "evaluation-grid", context)
    if _is_fragment(request) and not running and request.GET.get("poll"):
        response.status_code = HTMX_STOP_POLLING
    return response


# ---------------------------------------------------------------- monitors


@login_required
def monitor_list(request: HttpRequest) -> HttpResponse:
    """Monitors of the current team, optionally of one agent. Queries: session, user, team, agents, role,
    count, page, checks (prefetch)."""
    team = request.team
    agents = list(_team_agents(request).values_list("pk", "name"))
    monitors = (
        Monitor.objects.visible_to(request.user)
        .filter(agent__team=team)
        .order_by("agent__name", "name", "id")
        .values_list(*MONITOR_ROW_COLUMNS)  # what a row shows
    )
    agent_id = request.GET.get("agent") or ""
    if (wanted := id_from_text(agent_id)) is not None:
        monitors = monitors.filter(agent_id=wanted)
    else:
        agent_id = ""
    page = Paginator(monitors, 50).get_page(request.GET.get("page"))
    listed = list(page.object_list)
    checks = _list_checks([m[0] for m in listed])
    urls, rates = MonitorUrls(), {}
    rows = [{"row": _monitor_row(m, checks[m[0]], urls, rates)} for m in listed]
    context = {
        "page": page,
        "monitors": rows,
        "agents": agents,
        "agent_options": _agent_options(agents, agent_id),
        "agent_id": agent_id,
        "query": urlencode({"agent": agent_id}) if agent_id else "",
        **page_flags(request.user, team),
    }
    return render(request, "monitors/monitor_list.html", context)


def _agent_options(agents: list[tuple[int, str]], selected: str) -> SafeString:
    """The agent picker's options after "All agents", as monitors/monitor_list.html drew them: `agents`
    are (pk, name) pairs, `selected` the chosen pk as text ("" for none)."""
    return mark_safe(  # noqa: S308 - the names are escaped here
        "".join(
            f'<option value="{pk}"{" selected" if selected == str(pk) else ""}>{esc(name)}</option>'
            for pk, name in agents
        )
    )


def _list_checks(monitor_ids: list[int]) -> dict[int, list[tuple[str, int]]]:
    """Each monitor's checks as (name, version) pairs, by name: one query for the page (what a prefetch
    of the checks costs, without a model instance per check); none for no monitors."""
    listed: dict[int, list[tuple[str, int]]] = {pk: [] for pk in monitor_ids}
    if not monitor_ids:
        return listed
    pairs = (
        Monitor.checks.through.objects.filter(monitor_id__in=monitor_ids)
        .order_by("check__name", "check_id")
        .values_list("monitor_id", "check__name", "check__version")
    )
    for monitor_id, name, version in pairs:
        listed[monitor_id].append((name, version))
    return listed


# What a row of the monitors list reads of a monitor.
MONITOR_ROW_COLUMNS = ("id", "name", "sample_rate", "active", "agent_id", "agent__name")


# The URL formers of the rows, made once a page.
MonitorUrls = functools.partial(RowUrls, monitor="monitors:monitor-detail", agent="agents:agent-detail")


def _monitor_row(m: tuple, checks: list[tuple[str, int]], urls: RowUrls, rates: dict) -> SafeString:
    """One row of the monitors list (a MONITOR_ROW_COLUMNS tuple and its (name, version) checks), as the
    template would draw it (50 a page: Python, not the engine). `rates` keeps the page's sample rates
    as shown (floatformat, ~40 calls a value, once per distinct rate)."""
    pk, name, sample_rate, active, agent_id, agent_name = m
    tag = '{} <span class="tag">v{}</span>'
    shown = ", ".join(tag.format(trunc(check), version) for check, version in checks)
    status = '<span class="badge idle">Paused</span>'
    status = '<span class="badge running">Active</span>' if active else status
    rate = rates.get(sample_rate)
    if rate is None:
        rate = rates[sample_rate] = conditional_escape(floatformat(sample_rate, "-2"))
    return table_row(
        f'<td><a href="{esc(urls.monitor(pk))}">{trunc(name)}</a></td>',
        f'<td><a href="{esc(urls.agent(agent_id))}">{trunc(agent_name)}</a></td>',
        f'<td class="num">{rate} %</td>',
        f'<td class="small">{shown or '<span class="muted">none</span>'}</td>',
        f"<td>{status}</td>",
        indent=2,
    )


def _monitor_fields(form: MonitorForm) -> dict:
    """The monitor a valid form describes, as create_monitor and update_monitor take it."""
    return {key: form.cleaned_data[key] for key in ("name", "checks", "sample_rate", "active")}


def _monitor_form_context(request, *, form, agent, monitor=None):
    return {"form": form, "agent": agent, "monitor": monitor}


@login_required
def monitor_create(request: HttpRequest) -> HttpResponse:
    team = request.team
    if not page_flags(request.user, team)["can_edit"]:
        return forbidden(request, "Viewers can read monitors but not create them.")
    agents = list(_team_agents(request))
    data = request.POST if request.method == "POST" else request.GET
    raw_agent = data.get("agent") or ""
    agent = next((a for a in agents if str(a.pk) == raw_agent), agents[0] if agents else None)
    checks = (
        list(Check.objects.filter(agent=agent, archived_at__isnull=True).order_by("name", "id"))
        if agent
        else []
    )
    if request.method == "POST":
        form = MonitorForm(request.POST, agents=agents, checks=checks)
        if form.is_valid():
            done = saved_or_errors(
                request,
                form,
                lambda: monitoring.create_monitor(agent=agent, by=request.user, **_monitor_fields(form)),
                message=lambda monitor: (
                    f"Monitor {monitor.name} created; it samples tasks ingested from now on."
                ),
                errors=_apply_errors,
            )
            if done is not None:
                return done
    else:
        form = MonitorForm(
            agents=agents,
            checks=checks,
            initial={"agent": agent.pk if agent else None, "name": data.get("name", "")},
        )
    context = _monitor_form_context(request, form=form, agent=agent)
    return _page_or_fragment(request, "monitors/monitor_form.html", "monitor-form", context)


def _monitor_for(request: HttpRequest, pk: int) -> Monitor:
    return get_object_or_404(
        Monitor.objects.visible_to(request.user).select_related("agent", "agent__team"), pk=pk
    )


@login_required
def monitor_edit(request: HttpRequest, pk: int) -> HttpResponse:
    monitor = _monitor_for(request, pk)
    if not page_flags(request.user, monitor.agent.team)["can_edit"]:
        return forbidden(request, "Viewers can read monitors but not change them.")
    agent = monitor.agent
    checks = list(Check.objects.filter(agent=agent, archived_at__isnull=True).order_by("name", "id"))
    if request.method == "POST":
        form = MonitorForm(
            request.POST, agents=[agent], checks=checks, editing=True, initial={"agent": agent.pk}
        )
        if form.is_valid():
            done = saved_or_errors(
                request,
                form,
                lambda: monitoring.update_monitor(monitor=monitor, by=request.user, **_monitor_fields(form)),
                message=lambda saved: f"Monitor {saved.name} saved.",
                errors=_apply_errors,
            )
            if done is not None:
                return done
    else:
        form = MonitorForm(
            agents=[agent],
            checks=checks,
            editing=True,
            initial={
                "agent": agent.pk,
                "name": monitor.name,
                "sample_rate": monitor.sample_rate,
                "checks": list(monitor.checks.values_list("pk", flat=True)),
                "active": monitor.active,
            },
        )
    return render(
        request,
        "monitors/monitor_form.html",
        _monitor_form_context(request, form=form, agent=agent, monitor=monitor),
    )


@require_POST
@login_required
def monitor_delete(request: HttpRequest, pk: int) -> HttpResponse:
    monitor = _monitor_for(request, pk)
    monitoring.delete_monitor(monitor=monitor, by=request.user)
    messages.success(request, f"Monitor {monitor.name} deleted.")
    return redirect(reverse("monitors:monitor-list") + f"?agent={monitor.agent_id}")


@login_required
def monitor_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """The dashboard: pass rate per check version over time (chart + table), volume, latest failures.

    A bounded number of queries whatever the number of tasks and results: every count is a DB
    aggregate per bucket (see monitors.services.monitor_dashboard).
    """
    monitor = _monitor_for(request, pk)
    bucket = request.GET.get("bucket") if request.GET.get("bucket") in monitoring.BUCKETS else "hour"
    windows = WINDOWS[bucket]
    raw_days = request.GET.get("days") or ""
    days = int(raw_days) if raw_days.isdigit() and int(raw_days) in windows else windows[1]
    attached = list(
        Check.objects.filter(monitors=monitor)
        .order_by("name", "id")
        .only("id", "name", "version", "kind", "archived_at", "current_version_id")
    )
    board = monitoring.monitor_dashboard(monitor, bucket=bucket, days=days, checks=attached)
    failures = list(monitoring.latest_failures(monitor))
    rows = []
    for start in reversed(board.buckets):
        cells = []
        for s in board.series:
            c = s.points.get(start)
            determinate = (c["pass"] + c["fail"]) if c else 0
            cells.append(
                {"counts": c, "rate": round(c["pass"] * 100 / determinate, 1) if determinate else None}
            )
        rows.append({"start": start, "volume": board.volume.get(start, {}), "cells": cells})
    totals = []
    for s in board.series:
        t = s.totals
        determinate = t["pass"] + t["fail"]
        totals.append(
            {
                "series": s,
                "counts": t,
                "rate": round(t["pass"] * 100 / determinate, 1) if determinate else None,
            }
        )
    context = {
        "monitor": monitor,
        "board": board,
        "rows": rows,
        "totals": totals,
        "failures": failures,
        "attached": attached,
        "bucket": bucket,
        "days": days,
        "windows": windows,
        "chart": board.chart_data(),
        **page_flags(request.user, monitor.agent.team),
    }
    return _page_or_fragment(request, "monitors/monitor_detail.html", "dashboard", context)
