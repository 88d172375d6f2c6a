"""REST API v1 shapes of agents. Serializers validate and shape; agents.services writes."""

from __future__ import annotations

from rest_framework import serializers

from agents.models import Agent, AgentKind, NodeKind, Protocol
from agents.netpolicy import redact_url
from core.api import VisibleRelatedField
from core.rows import datetime_text
from teams.models import Team


class NodeSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    kind = serializers.ChoiceField(choices=NodeKind.choices, default=NodeKind.SUBAGENT)


class AgentSerializer(serializers.ModelSerializer):
    """An agent as the API shows it. Header values are secrets: only their names are ever returned."""

    team = serializers.IntegerField(source="team_id", read_only=True)
    nodes = NodeSerializer(many=True, read_only=True)
    header_names = serializers.ListField(child=serializers.CharField(), read_only=True)
    endpoint_url = serializers.CharField(source="shown_endpoint_url", read_only=True)

    class Meta:
        model = Agent
        fields = [
            "id",
            "team",
            "name",
            "description",
            "kind",
            "protocol",
            "endpoint_url",
            "model_name",
            "header_names",
            "timeout_s",
            "retries",
            "max_concurrency",
            "nodes",
            "created_at",
            "updated_at",
            "archived_at",
        ]
        read_only_fields = fields


# What the agents list reads of each agent, in this order (agent_rows draws its rows from them).
AGENT_ROW_COLUMNS = (
    *("id", "team_id", "name", "description", "kind", "protocol", "endpoint_url", "model_name"),
    *("header_names", "timeout_s", "retries", "max_concurrency", "created_at", "updated_at", "archived_at"),
)


def agent_rows(page: list[tuple], nodes: dict[int, list[tuple]]) -> list[dict]:
    """AgentSerializer's body of each agent of `page` (AGENT_ROW_COLUMNS tuples) with its nodes (`nodes`:
    agent id → (name, kind) tuples), without a model instance or DRF's per-field dispatch."""
    when = datetime_text()
    rows = []
    for row in page:
        pk, team, name, description, kind, protocol, url, model, headers, timeout, retries, most = row[:12]
        created, updated, archived = row[12:]
        rows.append(
            {
                "id": pk,
                "team": team,
                "name": name,
                "description": description,
                "kind": kind,
                "protocol": protocol,
                "endpoint_url": redact_url(url),  # Agent.shown_endpoint_url
                "model_name": model,
                "header_names": None if headers is None else [None if h is None else str(h) for h in headers],
                "timeout_s": float(timeout),
                "retries": retries,
                "max_concurrency": most,
                "nodes": [{"name": node, "kind": node_kind} for node, node_kind in nodes[pk]],
                "created_at": when(created),
                "updated_at": when(updated),
                "archived_at": when(archived),
            }
        )
    return rows


class AgentWriteSerializer(serializers.Serializer):
    """Create (`team` optional when you belong to one team) or change an agent.

    `headers` is write-only: on update, leave it out to keep the stored values, send `{}` to clear them.
    `nodes`, when sent, replaces the workforce's node list.
    """

    team = VisibleRelatedField(Team, noun="Team", required=False)
    name = serializers.CharField(max_length=100)
    description = serializers.CharField(required=False, allow_blank=True, max_length=10_000)
    kind = serializers.ChoiceField(choices=AgentKind.choices, required=False)
    protocol = serializers.ChoiceField(choices=Protocol.choices, required=False)
    endpoint_url = serializers.CharField(
        max_length=500, help_text="http:// or https:// URL the console POSTs to (openai-chat: the base URL)."
    )
    model_name = serializers.CharField(required=False, allow_blank=True, max_length=200)
    headers = serializers.DictField(
        child=serializers.CharField(allow_blank=True, max_length=8192, trim_whitespace=False),
        required=False,
        write_only=True,
        help_text="Header names to values, sent with every call (e.g. an API key). Never returned.",
    )
    timeout_s = serializers.FloatField(required=False, min_value=0.1, max_value=600)
    retries = serializers.IntegerField(required=False, min_value=0, max_value=10)
    max_concurrency = serializers.IntegerField(required=False, min_value=1, max_value=200)
    nodes = NodeSerializer(many=True, required=False, max_length=200)

    def validate_headers(self, value: dict) -> dict:
        if len(value) > 50:
            raise serializers.ValidationError("at most 50 headers")
        return value

    def validate(self, attrs: dict) -> dict:
        if self.instance is not None and "team" in attrs:
            if attrs["team"].pk != self.instance.team_id:
                raise serializers.ValidationError({"team": "an agent cannot move to another team"})
            attrs.pop("team")
        return attrs


class PingResultSerializer(serializers.Serializer):
    ok = serializers.BooleanField()
    status_code = serializers.IntegerField(allow_null=True)
    latency_ms = serializers.FloatField()
    output = serializers.CharField(allow_null=True)
    error = serializers.CharField(allow_null=True)
