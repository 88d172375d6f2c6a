"""Agents (HTTP endpoints) and the nodes of a workforce."""

from __future__ import annotations

from django.db import models

from core.crypto import decrypt_json, encrypt_json
from core.urls import NamedPage
from teams.models import Team, TeamScopedQuerySet


class AgentKind(models.TextChoices):
    AGENT = "agent", "Agent"
    WORKFORCE = "workforce", "Workforce"


class Protocol(models.TextChoices):
    EVALCONSOLE = "evalconsole", "evalconsole/1 (JSON with output and toolCalls)"
    OPENAI_CHAT = "openai-chat", "OpenAI chat completions"


class AgentQuerySet(TeamScopedQuerySet):
    team_path = "team"


# An agent's columns that no list shows (its description, its headers): a list that joins the agent
# defers them, and decodes no JSON nor text it would throw away.
UNLISTED_FIELDS = ("description", "headers_encrypted", "header_names")


class Agent(NamedPage, models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="agents")
    name = models.CharField(max_length=100)
    description = models.TextField(blank=True)
    kind = models.CharField(max_length=10, choices=AgentKind.choices, default=AgentKind.AGENT)
    protocol = models.CharField(max_length=20, choices=Protocol.choices, default=Protocol.EVALCONSOLE)
    endpoint_url = models.URLField(max_length=500)
    model_name = models.CharField(
        max_length=200, blank=True, help_text="Model sent with the openai-chat protocol."
    )
    headers_encrypted = models.TextField(blank=True, default="", editable=False)
    header_names = models.JSONField(default=list, blank=True, editable=False)
    timeout_s = models.FloatField(default=30.0)
    retries = models.PositiveSmallIntegerField(default=2)
    max_concurrency = models.PositiveSmallIntegerField(default=10, help_text="Agent calls in flight at once.")
    # Adaptive limit (AIMD, runs/limiter.py): halved when the agent answers 429, grown back by successes.
    # Empty = max_concurrency. Shared by every worker process through the database.
    concurrency_window = models.FloatField(null=True, blank=True, editable=False)
    window_decreased_at = models.DateTimeField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    archived_at = models.DateTimeField(null=True, blank=True)

    detail_route = "agents:agent-detail"
    objects = AgentQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["team", "name"], name="agent_unique_team_name")]

    @property
    def shown_endpoint_url(self) -> str:
        """endpoint_url for pages and the API: a user name or password in it is masked (saving refuses
        them, but a URL stored before that check may hold one)."""
        from agents.netpolicy import redact_url

        return redact_url(self.endpoint_url)

    # Headers are write-only: code that calls the agent reads them, nothing displays them.
    def set_headers(self, headers: dict[str, str]) -> None:
        self.headers_encrypted = encrypt_json(headers) if headers else ""
        self.header_names = sorted(headers)

    def get_headers(self) -> dict[str, str]:
        return dict(decrypt_json(self.headers_encrypted, {}) or {})


class NodeKind(models.TextChoices):
    SUBAGENT = "agent", "Sub-agent"
    TOOL = "tool", "Tool"


class Node(models.Model):
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="nodes")
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=10, choices=NodeKind.choices, default=NodeKind.SUBAGENT)

    class Meta:
        ordering = ["agent", "name"]
        constraints = [models.UniqueConstraint(fields=["agent", "name"], name="node_unique_agent_name")]

    def __str__(self) -> str:
        return f"{self.agent}/{self.name}"
