"""Agent pages: list, register, edit, detail (overview tab), ping and archive."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.template.backends.utils import csrf_input
from django.template.defaultfilters import timesince_filter
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_POST

from agents import services
from agents.api import ping_agent
from agents.forms import AgentForm
from agents.models import Agent
from core.htmx import is_fragment_request
from core.templatetags.names import esc, trunc, truncate
from core.urls import pk_url
from core.views import count_related, flag_param, newest_related
from teams.access import page_flags
from teams.views import archive_or_restore, forbidden, saved_or_errors

PAGE_SIZE = 25


def _agent_row(a: Agent, *, csrf: str | None) -> SafeString:
    """One row of the agent list, as agents/agent_list.html drew it (Python, not the engine); `csrf` is
    the CSRF input of the Restore form, for admins (None: no Restore button)."""
    tags = ' <span class="tag">workforce</span>' if a.kind == "workforce" else ""
    tags += ' <span class="tag warn">archived</span>' if a.archived_at else ""
    restore = ""
    if a.archived_at and csrf is not None:
        action = esc(pk_url("agents:agent-archive", a.pk))
        restore = (
            f'<form method="post" action="{action}" class="inline-form">{csrf}'
            '<input type="hidden" name="restore" value="1">'
            '<button type="submit" class="small">Restore</button></form>'
        )
    description = ""
    if a.description:
        description = f'<div class="muted small">{esc(truncate(a.description, 90))}</div>'
    last = '<span class="muted">never</span>'
    if a.last_run_id:
        shown = esc(a.last_run_result or a.last_run_status)
        ago = esc(timesince_filter(a.last_run_at))
        run_url = esc(pk_url("runs:run-detail", a.last_run_id))
        last = f'<a href="{run_url}"><span class="badge {shown}">{shown}</span></a>'
        last += f' <span class="muted small">{ago} ago</span>'
    url, checks_url = esc(pk_url("agents:agent-detail", a.pk)), esc(pk_url("checks:check-list", a.pk))
    return mark_safe(  # noqa: S308 - every value is escaped above or here
        "\n    <tr>"
        f'\n      <td><a href="{url}"><strong>{trunc(a.name)}</strong></a>{tags}'
        f"\n        {restore}"
        f"\n        {description}</td>"
        f"\n      <td>{esc(a.protocol)}</td>"
        f"\n      <td><code>{esc(truncate(a.shown_endpoint_url, 48))}</code></td>"
        f'\n      <td class="num"><a href="{checks_url}">{esc(a.check_count or 0)}</a></td>'
        f'\n      <td class="num">{esc(a.test_set_count or 0)}</td>'
        f"\n      <td>{last}</td>"
        "\n    </tr>\n  "
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
    )
    page = Paginator(agents, PAGE_SIZE).get_page(request.GET.get("page"))
    flags = page_flags(request.user, team)
    rows = list(page.object_list)
    csrf = str(csrf_input(request)) if flags["can_admin"] and any(a.archived_at for a in rows) else None
    for a in rows:
        a.row = _agent_row(a, csrf=csrf)
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
