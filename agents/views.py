"""Agent pages: list, register, edit, detail (overview tab), ping and archive."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count, OuterRef, Q, Subquery
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from agents import services
from agents.api import ping_agent
from agents.forms import AgentForm
from agents.models import Agent
from core.errors import DomainError, PermissionDenied
from core.htmx import is_fragment_request
from core.views import apply_errors, count_related, flag_param, reverse_model
from teams.access import page_flags
from teams.views import forbidden

PAGE_SIZE = 25


@login_required
def agent_list(request: HttpRequest) -> HttpResponse:
    team = request.team
    archived, filter_error = flag_param(request, "archived")
    last_run = reverse_model(Agent, "runs").objects.filter(agent=OuterRef("pk")).order_by("-created_at", "-id")
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
            last_run_id=Subquery(last_run.values("pk")[:1]),
            last_run_result=Subquery(last_run.values("result")[:1]),
            last_run_status=Subquery(last_run.values("status")[:1]),
            last_run_at=Subquery(last_run.values("created_at")[:1]),
        )
        .order_by("name", "pk")
    )
    page = Paginator(agents, PAGE_SIZE).get_page(request.GET.get("page"))
    context = {
        "page": page,
        "agents": page.object_list,
        "team": team,
        "archived": archived,
        "counts": counts,
        "filter_error": filter_error,
        "query": "archived=1" if archived else "",
        **page_flags(request.user, team),
    }
    return render(request, "agents/agent_list.html", context, status=400 if filter_error else 200)


@login_required
def agent_create(request: HttpRequest) -> HttpResponse:
    team = request.team
    if team is None or not page_flags(request.user, team)["can_admin"]:
        return forbidden(request, "Only team admins can register agents.")
    form = AgentForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            agent = services.create_agent(team=team, by=request.user, **form.service_kwargs())
        except PermissionDenied as exc:
            return forbidden(request, str(exc))
        except DomainError as exc:
            apply_errors(form, exc)
        else:
            messages.success(request, f"Agent {agent.name} registered. Ping it to test the connection.")
            return redirect(agent)
    return render(request, "agents/agent_form.html", {"form": form, "team": team})


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
    form = AgentForm(request.POST or None, agent=agent)
    if request.method == "POST" and form.is_valid():
        try:
            services.update_agent(agent=agent, by=request.user, **form.service_kwargs())
        except PermissionDenied as exc:
            return forbidden(request, str(exc))
        except DomainError as exc:
            apply_errors(form, exc)
        else:
            messages.success(request, f"Agent {agent.name} saved.")
            return redirect(agent)
    return render(request, "agents/agent_form.html", {"form": form, "agent": agent, "team": agent.team})


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
    restore = request.POST.get("restore") == "1"
    try:
        services.archive_agent(agent=agent, by=request.user, archived=not restore)
    except PermissionDenied as exc:
        return forbidden(request, str(exc))
    if restore:
        messages.success(request, f"Agent {agent.name} restored.")
        return redirect(agent)
    messages.success(request, f"Agent {agent.name} archived; its runs and checks stay readable.")
    return redirect("agents:agent-list")
