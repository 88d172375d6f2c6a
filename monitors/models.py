"""Live tasks ingested from production, monitors that evaluate a sample of them, one-off evaluations.

The tables keep the names they had before this app existed (agents_task, runs_monitor, runs_evaluation):
moving the models here changed no stored row.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from agents.models import Agent
from checks.models import Check, CheckVersion
from core.urls import DetailPage, NamedPage
from teams.models import TeamScopedQuerySet


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
        db_table = "agents_task"
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


class MonitorQuerySet(TeamScopedQuerySet):
    team_path = "agent__team"


class Monitor(NamedPage, models.Model):
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="monitors")
    name = models.CharField(max_length=200)
    checks = models.ManyToManyField(Check, related_name="monitors", blank=True)
    sample_rate = models.DecimalField(
        max_digits=5, decimal_places=2, default=10, help_text="Percent of tasks."
    )
    active = models.BooleanField(default=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    detail_route = "monitors:monitor-detail"
    objects = MonitorQuerySet.as_manager()

    class Meta:
        db_table = "runs_monitor"
        ordering = ["name", "id"]


class EvaluationQuerySet(TeamScopedQuerySet):
    team_path = "agent__team"


class Evaluation(DetailPage, models.Model):
    """A one-off run of chosen check versions over chosen completed tasks."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        COMPLETED = "completed", "Completed"

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="evaluations")
    name = models.CharField(max_length=200, blank=True)
    tasks = models.ManyToManyField(Task, related_name="evaluations")
    check_versions = models.ManyToManyField(CheckVersion, related_name="evaluations")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    detail_route = "monitors:evaluation-detail"
    objects = EvaluationQuerySet.as_manager()

    class Meta:
        db_table = "runs_evaluation"
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.name or f"Evaluation {self.pk}"
