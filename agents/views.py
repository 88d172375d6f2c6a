"""Agent pages: list, register, edit, detail (overview tab), ping and archive."""

from __future__ import annotations

import functools

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.template.backends.utils import csrf_input
from django.template.defaultfilters import timesince_filter
from django.utils.safestring import SafeString
from django.views.decorators.http import require_POST

from agents import services
from agents.api import ping_agent
from agents.forms import AgentForm
from agents.models import Agent
from agents.netpolicy import redact_url
from core.htmx import is_fragment_request
from core.templatetags.names import esc, trunc, truncate
from core.urls import RowUrls
from core.views import count_related, flag_param, forbidden, newest_related, table_row
from teams.access import page_flags
from teams.views import archive_or_restore, saved_or_errors

PAGE_SIZE = 25


# What a row of the agent list reads of an agent (with its counts and newest run, agent_list's annotations).
AGENT_ROW_COLUMNS = (
    *("id", "name", "kind", "archived_at", "description", "protocol", "endpoint_url"),
    *("check_count", "test_set_count", "last_run_id", "last_run_result", "last_run_status", "last_run_at"),
)


# The URL formers of the rows, made once a page.
AgentUrls = functools.partial(
    RowUrls,
    agent="agents:agent-detail",
    archive="agents:agent-archive",
    checks="checks:check-list",
    run="runs:run-detail",
)


def _agent_row(a: tuple, *, csrf: str | None, urls: RowUrls) -> SafeString:
    """One row of the agent list (an AGENT_ROW_COLUMNS tuple), as agents/agent_list.html drew it (Python,
    not the engine); `csrf` is the CSRF input of the Restore form, for admins (None: no Restore button)."""
    pk, name, kind, archived_at, about, protocol, endpoint_url, checks, test_sets = a[:9]
    run_id, result, status, run_at = a[9:]
    tags = ' <span class="tag">workforce</span>' if kind == "workforce" else ""
    tags += ' <span class="tag warn">archived</span>' if archived_at else ""
    restore = ""
    if archived_at and csrf is not None:
        restore = (
            f'<form method="post" action="{esc(urls.archive(pk))}" class="inline-form">{csrf}'
            '<input type="hidden" name="restore" value="1">'
            '<button type="submit" class="small">Restore</button></form>'
        )
    description = ""
    if about:
        description = f'<div class="muted small">{esc(truncate(about, 90))}</div>'
    last = '<span class="muted">never</span>'
    if run_id:
        shown = esc(result or status)
        last = f'<a href="{esc(urls.run(run_id))}"><span class="badge {shown}">{shown}</span></a>'
        last += f' <span class="muted small">{esc(timesince_filter(run_at))} ago</span>'
    shown_url = redact_url(endpoint_url)  # Agent.shown_endpoint_url
    return table_row(
        f'<td><a href="{esc(urls.agent(pk))}"><strong>{trunc(name)}</strong></a>{tags}'
        f"\n        {restore}"
        f"\n        {description}</td>",
        f"<td>{esc(protocol)}</td>",
        f"<td><code>{esc(truncate(shown_url, 48))}</code></td>",
        f'<td class="num"><a href="{esc(urls.checks(pk))}">{checks or 0}</a></td>',
        f'<td class="num">{test_sets or 0}</td>',
        f"<td>{last}</td>",
    )


@login_required
def agent_list(request: HttpRequest) -> HttpResponse:
    team = request.team
    archived, filter_error = flag_param(request, "archived")
    team_agents = Agent.objects.visible_to(request.user).filter(team=team)
    counts = team_agents.aggregate(
        active=Count("pk", filter=Q(archived_at__isnull=True)),
        archived=Count("pk", filter=Q(archived_at__isnull=False)),
    )
    agents = (
        team_agents.filter(archived_at__isnull=not archived)
        .annotate(
            check_count=count_related(Agent, "checks", archived_at__isnull=True),
            test_set_count=count_related(Agent, "test_sets", archived_at__isnull=True),
            **newest_related(
                Agent, "runs", last_run_id="pk", last_run_result="result", last_run_status="status",
                last_run_at="created_at",
            ),
        )
        .order_by("name", "pk")
        .values_list(*AGENT_ROW_COLUMNS)
    )
    page = Paginator(agents, PAGE_SIZE).get_page(request.GET.get("page"))
    flags = page_flags(request.user, team)
    listed = list(page.object_list)
    csrf = str(csrf_input(request)) if flags["can_admin"] and any(a[3] for a in listed) else None
    urls = AgentUrls()
    rows = [{"row": _agent_row(a, csrf=csrf, urls=urls)} for a in listed]
    context = {
        "page": page,
        "agents": rows,
        "team": team,
        "archived": archived,
        "counts": counts,
        "filter_error": filter_error,
        "query": "archived=1" if archived else "",
        **flags,
    }
    return render(request, "agents/agent_list.html", context, status=400 if filter_error else 200)


@login_required
def agent_create(request: HttpRequest) -> HttpResponse:
    team = request.team
    if team is None or not page_flags(request.user, team)["can_admin"]:
        return forbidden(request, "Only team admins can register agents.")
    return _form_page(
        request,
        AgentForm(request.POST or None),
        lambda form: services.create_agent(team=team, by=request.user, **form.service_kwargs()),
        message=lambda agent: f"Agent {agent.name} registered. Ping it to test the connection.",
        team=team,
    )


def _form_page(request: HttpRequest, form: AgentForm, save, *, message, **context) -> HttpResponse:
    """The register and edit form: a valid POST goes to `save(form)` (see saved_or_errors)."""
    if request.method == "POST" and form.is_valid():
        done = saved_or_errors(request, form, lambda: save(form), message=message)
        if done is not None:
            return done
    return render(request, "agents/agent_form.html", {"form": form, **context})


def _agent_for(request: HttpRequest, pk: int) -> Agent:
    """An agent of one of the user's teams, else 404."""
    return get_object_or_404(
        Agent.objects.visible_to(request.user).select_related("team").prefetch_related("nodes"), pk=pk
    )


@login_required
def agent_detail(request: HttpRequest, pk: int) -> HttpResponse:
    agent = _agent_for(request, pk)
    return render(request, "agents/agent_detail.html", _detail_context(request, agent))


def _detail_context(request: HttpRequest, agent: Agent, **extra) -> dict:
    runs = (
        agent.runs.select_related("test_version", "launched_by")
        .order_by("-created_at", "-id")[:5]
    )
    counts = agent.checks.filter(archived_at__isnull=True).aggregate(checks=Count("pk"))
    test_sets = (
        agent.test_sets.filter(archived_at__isnull=True)
        .annotate(test_count=Count("tests", filter=Q(tests__archived_at__isnull=True)))
        .order_by("name", "pk")
    )
    return {
        "agent": agent,
        "runs": runs,
        "check_count": counts["checks"],
        "test_sets": test_sets,
        "tab": "overview",
        **page_flags(request.user, agent.team),
        **extra,
    }


@login_required
def agent_edit(request: HttpRequest, pk: int) -> HttpResponse:
    agent = _agent_for(request, pk)
    if not page_flags(request.user, agent.team)["can_admin"]:
        return forbidden(request, "Only team admins can change agents.")
    return _form_page(
        request,
        AgentForm(request.POST or None, agent=agent),
        lambda form: services.update_agent(agent=agent, by=request.user, **form.service_kwargs()),
        message=lambda saved: f"Agent {saved.name} saved.",
        agent=agent,
        team=agent.team,
    )


@require_POST
@login_required
def agent_ping(request: HttpRequest, pk: int) -> HttpResponse:
    """Call the agent once with a "ping" scenario; show its reply or the error in place."""
    agent = _agent_for(request, pk)
    if not page_flags(request.user, agent.team)["can_edit"]:
        return forbidden(request, "Viewers cannot ping agents.")
    result = ping_agent(agent)  # the same call as POST /api/v1/agents/{id}/ping/
    if is_fragment_request(request):
        return render(request, "agents/_ping_result.html", {"agent": agent, "ping": result})
    return render(request, "agents/agent_detail.html", _detail_context(request, agent, ping=result))


@require_POST
@login_required
def agent_archive(request: HttpRequest, pk: int) -> HttpResponse:
    agent = _agent_for(request, pk)
    return archive_or_restore(
        request, agent, services.archive_agent, note="; its runs and checks stay readable",
        archived_to="agents:agent-list",
    )
