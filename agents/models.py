"""Teams, members, agents, workforce nodes and ingested live tasks."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from django.urls import reverse

from evalconsole.crypto import decrypt_json, encrypt_json


class Role(models.TextChoices):
    VIEWER = "viewer", "Viewer"
    MEMBER = "member", "Member"
    ADMIN = "admin", "Admin"


ROLE_RANK = {Role.VIEWER: 0, Role.MEMBER: 1, Role.ADMIN: 2}


class TeamQuerySet(models.QuerySet):
    def visible_to(self, user) -> TeamQuerySet:
        if not getattr(user, "is_authenticated", False):
            return self.none()
        return self.filter(memberships__user=user)


class Team(models.Model):
    name = models.CharField(max_length=100)
    slug = models.SlugField(max_length=60, unique=True)
    judge_monthly_token_budget = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="AI judge tokens per calendar month; empty = the site default."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = TeamQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "user"], name="membership_unique_team_user")]
        ordering = ["team__name", "user__username"]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.role})"

    def allows(self, role: str) -> bool:
        return ROLE_RANK[Role(self.role)] >= ROLE_RANK[Role(role)]


class TeamScopedQuerySet(models.QuerySet):
    """Objects reachable through `team_path`; every page and endpoint reads through these."""

    team_path = "team"

    def visible_to(self, user):
        if not getattr(user, "is_authenticated", False):
            return self.none()
        return self.filter(**{f"{self.team_path}__memberships__user": user})

    def editable_by(self, user, role: str = Role.MEMBER):
        if not getattr(user, "is_authenticated", False):
            return self.none()
        allowed = [r for r, rank in ROLE_RANK.items() if rank >= ROLE_RANK[Role(role)]]
        return self.filter(
            **{f"{self.team_path}__memberships__user": user, f"{self.team_path}__memberships__role__in": allowed}
        )

    def for_team(self, team):
        return self.filter(**{self.team_path: team})


class AgentKind(models.TextChoices):
    AGENT = "agent", "Agent"
    WORKFORCE = "workforce", "Workforce"


class Protocol(models.TextChoices):
    EVALCONSOLE = "evalconsole", "evalconsole/1 (JSON with output and toolCalls)"
    OPENAI_CHAT = "openai-chat", "OpenAI chat completions"


class AgentQuerySet(TeamScopedQuerySet):
    team_path = "team"


class Agent(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="agents")
    name = models.CharField(max_length=100)
    description = models.TextField(blank=True)
    kind = models.CharField(max_length=10, choices=AgentKind.choices, default=AgentKind.AGENT)
    protocol = models.CharField(max_length=20, choices=Protocol.choices, default=Protocol.EVALCONSOLE)
    endpoint_url = models.URLField(max_length=500)
    model_name = models.CharField(max_length=200, blank=True, help_text="Model sent with the openai-chat protocol.")
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

    objects = AgentQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["team", "name"], name="agent_unique_team_name")]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("agents:agent-detail", args=[self.pk])

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


class TaskQuerySet(TeamScopedQuerySet):
    team_path = "agent__team"


class Task(models.Model):
    """A completed live conversation of an agent, ingested from production."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="tasks")
    external_id = models.CharField(max_length=200)
    messages = models.JSONField(default=list, blank=True, help_text="The transcript: [{role, content}].")
    output = models.TextField(blank=True, default="")
    tool_calls = models.JSONField(null=True, blank=True)
    trace = models.JSONField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    latency_ms = models.FloatField(null=True, blank=True)
    completed_at = models.DateTimeField()
    ingested_at = models.DateTimeField(auto_now_add=True)
    sampled = models.BooleanField(default=False, help_text="Picked by a monitor's sample rate.")
    has_failures = models.BooleanField(default=False)

    objects = TaskQuerySet.as_manager()

    class Meta:
        ordering = ["-completed_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["agent", "external_id"], name="task_unique_agent_external_id")
        ]
        indexes = [
            models.Index(fields=["agent", "-completed_at"], name="task_agent_completed"),
            models.Index(fields=["completed_at"], name="task_completed"),
        ]

    def __str__(self) -> str:
        return f"{self.agent} task {self.external_id}"



