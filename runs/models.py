"""Runs, their samples, and the check results of samples and of live tasks."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from agents.models import Agent
from checks.kinds import Outcome
from checks.models import CheckVersion, Test, TestVersion
from core.ids import id_from_text
from core.urls import DetailPage
from teams.models import TeamScopedQuerySet


class RunQuerySet(TeamScopedQuerySet):
    team_path = "agent__team"

    def active(self):
        return self.filter(status__in=[Run.Status.QUEUED, Run.Status.RUNNING])

    def search(self, text: str):
        """Runs whose test, test version or agent name contains `text`; `#12` or `12` is also run 12."""
        if not text:
            return self
        match = Q(test__name__icontains=text) | Q(test_version__name__icontains=text)
        match |= Q(agent__name__icontains=text)
        number = id_from_text(text.removeprefix("#"))
        if number is not None:
            match |= Q(pk=number)
        return self.filter(match)


class Run(DetailPage, models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        COMPLETED = "completed", "Completed"
        CANCELLED = "cancelled", "Cancelled"

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="runs")
    test = models.ForeignKey(Test, on_delete=models.CASCADE, related_name="runs")
    test_version = models.ForeignKey(TestVersion, on_delete=models.PROTECT, related_name="runs")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    result = models.CharField(max_length=15, choices=Outcome.choices, blank=True, default="")
    launched_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    launched_by_token = models.ForeignKey(
        "teams.ApiToken", on_delete=models.SET_NULL, null=True, blank=True, related_name="runs"
    )
    batch = models.CharField(max_length=40, blank=True, default="", help_text="Runs launched together.")
    total_samples = models.PositiveIntegerField(default=0)
    done_samples = models.PositiveIntegerField(default=0)
    # The pure engine's RunSummary.as_dict(): per-scenario counts, pass rates, per-check rates.
    summary = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    detail_route = "runs:run-detail"
    objects = RunQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["agent", "-created_at"], name="run_agent_created"),
            models.Index(fields=["test", "-created_at"], name="run_test_created"),
            models.Index(fields=["status"], name="run_status"),
        ]

    def __str__(self) -> str:
        return f"Run {self.pk} of {self.test_version}"

    @property
    def is_active(self) -> bool:
        return self.status in (self.Status.QUEUED, self.Status.RUNNING)

    @property
    def progress_percent(self) -> int:
        return int(self.done_samples * 100 / self.total_samples) if self.total_samples else 100


class RunCheck(models.Model):
    """The exact check version a run used, frozen at launch."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="run_checks")
    check_version = models.ForeignKey(CheckVersion, on_delete=models.PROTECT, related_name="run_checks")
    required = models.BooleanField(default=True)
    additional = models.BooleanField(default=False, help_text="Picked at launch, not attached to the test.")
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["run", "position"]
        constraints = [models.UniqueConstraint(fields=["run", "check_version"], name="runcheck_unique")]

    def __str__(self) -> str:
        how = "required" if self.required else "advisory"
        return f"{self.check_version} ({how}{', added at launch' if self.additional else ''})"


class RunScene(models.Model):
    """The exact scene version a scenario of a run plays, frozen at launch (as RunCheck for checks)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="run_scenes")
    scenario_index = models.PositiveSmallIntegerField()
    scene_version = models.ForeignKey(
        "worlds.SceneVersion", on_delete=models.PROTECT, related_name="run_scenes"
    )

    class Meta:
        ordering = ["run", "scenario_index"]
        constraints = [
            models.UniqueConstraint(fields=["run", "scenario_index"], name="runscene_unique_scenario")
        ]

    def __str__(self) -> str:
        return f"{self.scene_version} (scenario {self.scenario_index} of run {self.run_id})"


class Sample(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        CANCELLED = "cancelled", "Cancelled"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="samples")
    scenario_index = models.PositiveSmallIntegerField()
    sample_index = models.PositiveSmallIntegerField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    outcome = models.CharField(max_length=15, choices=Outcome.choices, blank=True, default="")
    request = models.JSONField(
        null=True, blank=True, help_text="The body sent to the agent (never its headers)."
    )
    output = models.TextField(blank=True, default="")
    tool_calls = models.JSONField(null=True, blank=True)
    trace = models.JSONField(null=True, blank=True)
    transcript = models.JSONField(default=list, blank=True)
    latency_ms = models.FloatField(null=True, blank=True)
    attempts = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True, default="")
    claimed_by = models.CharField(max_length=100, blank=True, default="")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    executions = models.PositiveSmallIntegerField(default=0, help_text="How many times a worker claimed it.")
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # A sample of a scene plays in its own world; its scene's checks are judged there (checks.json).
    world = models.OneToOneField(
        "worlds.World", on_delete=models.SET_NULL, null=True, blank=True, related_name="sample"
    )
    world_checks = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["run", "scenario_index", "sample_index"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "scenario_index", "sample_index"], name="sample_unique_slot"
            )
        ]
        indexes = [models.Index(fields=["status", "lease_expires_at"], name="sample_status_lease")]

    def __str__(self) -> str:
        return f"Sample {self.scenario_index}.{self.sample_index} of run {self.run_id}"

    @property
    def counted(self) -> bool:
        return self.outcome in (Outcome.PASS, Outcome.FAIL)


# A CheckResult's verdict: what its check version said of a sample or a task.
VERDICT_FIELDS = ("outcome", "expected", "actual", "explanation", "evidence")


class CheckResult(models.Model):
    """One check version's outcome on one sample (a run) or one task (a monitor or an evaluation)."""

    check_version = models.ForeignKey(CheckVersion, on_delete=models.PROTECT, related_name="results")
    sample = models.ForeignKey(
        Sample, on_delete=models.CASCADE, null=True, blank=True, related_name="results"
    )
    task = models.ForeignKey(
        "monitors.Task", on_delete=models.CASCADE, null=True, blank=True, related_name="results"
    )
    monitor = models.ForeignKey(
        "monitors.Monitor", on_delete=models.CASCADE, null=True, blank=True, related_name="results"
    )
    evaluation = models.ForeignKey(
        "monitors.Evaluation", on_delete=models.CASCADE, null=True, blank=True, related_name="results"
    )
    required = models.BooleanField(default=True)
    outcome = models.CharField(max_length=15, choices=Outcome.choices)
    expected = models.TextField(blank=True, default="")
    actual = models.TextField(blank=True, default="")
    explanation = models.TextField(blank=True, default="")
    evidence = models.JSONField(default=list, blank=True)
    details = models.JSONField(default=dict, blank=True)
    # Copied from the task for monitor charts (bucket by the task's completion time without a join).
    observed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["sample", "check_version"],
                condition=Q(sample__isnull=False),
                name="result_unique_sample",
            ),
            models.UniqueConstraint(
                fields=["monitor", "task", "check_version"],
                condition=Q(monitor__isnull=False),
                name="result_unique_monitor_task",
            ),
            models.UniqueConstraint(
                fields=["evaluation", "task", "check_version"],
                condition=Q(evaluation__isnull=False),
                name="result_unique_evaluation_task",
            ),
            models.CheckConstraint(
                condition=(
                    Q(sample__isnull=False, task__isnull=True) | Q(sample__isnull=True, task__isnull=False)
                ),
                name="result_sample_xor_task",
            ),
        ]
        indexes = [
            models.Index(fields=["monitor", "observed_at"], name="result_monitor_observed"),
            models.Index(fields=["task", "outcome"], name="result_task_outcome"),
        ]

    def __str__(self) -> str:
        return f"{self.check_version}: {self.outcome}"
