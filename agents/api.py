"""REST API v1: agents (CRUD, ping). Thin: visible_to() reads, agents.services writes."""

from __future__ import annotations

import django_filters
from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.response import Response

from agents import services
from agents.models import Agent, AgentKind, Node, Protocol
from agents.serializers import (
    AGENT_ROW_COLUMNS,
    AgentSerializer,
    AgentWriteSerializer,
    PingResultSerializer,
    agent_rows,
)
from core.api import ArchivedFilterSet
from core.rows import plain_list, related_rows
from teams.api import TeamScopedViewSet, default_team


class AgentFilter(ArchivedFilterSet):
    kind = django_filters.ChoiceFilter(choices=AgentKind.choices)
    protocol = django_filters.ChoiceFilter(choices=Protocol.choices)

    class Meta:
        model = Agent
        fields = ["kind", "protocol", "archived"]


NODE = ("name", "kind")  # what NodeSerializer shows of a node


@extend_schema_view(
    list=extend_schema(
        summary="List agents", description="Active agents of your teams (`?archived=true`: archived)."
    ),
    retrieve=extend_schema(summary="Show an agent"),
    destroy=extend_schema(summary="Archive an agent", description="Admins only. Runs and results stay."),
)
class AgentViewSet(TeamScopedViewSet):
    serializer_class = AgentSerializer
    filterset_class = AgentFilter

    def get_queryset(self) -> QuerySet[Agent]:
        agents = Agent.objects.visible_to(self.request.user).order_by("name", "id")
        return agents if self.action == "list" else agents.prefetch_related("nodes")  # list: as tuples


    @extend_schema(
        summary="Register an agent", request=AgentWriteSerializer, responses={201: AgentSerializer}
    )
    def create(self, request, *args, **kwargs):
        data = self._body(AgentWriteSerializer)
        team = data.pop("team", None) or default_team(request.user)
        agent = services.create_agent(team=team, by=request.user, **data)
        return self._show(agent, status.HTTP_201_CREATED)

    @extend_schema(summary="Change an agent", request=AgentWriteSerializer, responses={200: AgentSerializer})
    def update(self, request, *args, **kwargs):
        agent = self.get_object()
        data = self._body(AgentWriteSerializer, agent, partial=kwargs.get("partial", False))
        headers = data.pop("headers", None)
        nodes = data.pop("nodes", None)
        services.update_agent(agent=agent, by=request.user, headers=headers, nodes=nodes, **data)
        return self._show(agent)

    @extend_schema(
        summary="Change some fields of an agent",
        request=AgentWriteSerializer,
        responses={200: AgentSerializer},
    )
    def partial_update(self, request, *args, **kwargs):
        return self.update(request, *args, partial=True, **kwargs)

    def perform_destroy(self, instance: Agent) -> None:
        services.archive_agent(agent=instance, by=self.request.user)

    @extend_schema(
        summary="Test the connection",
        description="Calls the agent once with a `ping` scenario (no retries). Agent faults are reported in "
        "the body (`ok: false`), never as an HTTP error of this endpoint.",
        request=None,
        responses={200: OpenApiResponse(PingResultSerializer)},
    )
    @action(detail=True, methods=["post"])
    def ping(self, request, pk=None):
        agent = self.get_object()
        result = ping_agent(agent)
        return Response(PingResultSerializer(result).data)

    # Last in the class: the name `list` would hide the builtin from the class body below it.
    def list(self, request, *args, **kwargs):
        agents = self.filter_queryset(self.get_queryset()).values_list(*AGENT_ROW_COLUMNS)
        nodes = Node.objects.all()

        def draw(page):
            return agent_rows(page, related_rows(page, nodes, "agent", NODE))

        return plain_list(self, agents, draw)


def ping_agent(agent: Agent):
    """One ping through agents.protocols, built like the worker's calls (URL policy at connect time).

    No retries, and at most 30 s, so the HTTP request that asked for it stays short.
    """
    import dataclasses

    from agents import protocols
    from agents.targets import target_for

    target = target_for(agent)
    target = dataclasses.replace(target, timeout_s=min(target.timeout_s, 30.0), retries=0)
    with protocols.make_sync_client(allow_private=target.allow_private) as client:
        return protocols.ping_sync(target, client=client)
