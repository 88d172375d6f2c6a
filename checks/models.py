"""The check library (Check + immutable CheckVersion) and tests (TestSet, Test + immutable TestVersion)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import models

from agents.models import Agent
from core.immutable import ImmutableModel, ImmutableVersion, Versioned, VersionedQuerySet, current_version_of
from core.urls import NamedPage
from teams.models import TeamScopedQuerySet


class CheckQuerySet(TeamScopedQuerySet, VersionedQuerySet):
    team_path = "agent__team"

    def search(self, text: str):
        """Checks whose name contains `text` (any case); all of them for ""."""
        return self.filter(name__icontains=text) if text else self

    # "In tests" = attached to the current version of a test that is not archived.
    def _in_tests_q(self) -> models.Q:
        return models.Q(
            test_attachments__test_version__test__current_version=models.F("test_attachments__test_version"),
            test_attachments__test_version__test__archived_at__isnull=True,
        )

    def used(self, where: str):
        """Filter by usage: in_tests, in_monitors, unused (DESIGN.md checks list filters)."""
        in_tests = self.filter(self._in_tests_q()).values("pk")
        in_monitors = self.filter(monitors__active=True).values("pk")
        if where == "in_tests":
            return self.filter(pk__in=in_tests)
        if where == "in_monitors":
            return self.filter(pk__in=in_monitors)
        if where == "unused":
            return self.exclude(pk__in=in_tests).exclude(pk__in=in_monitors)
        return self

    def usage_counts(self) -> dict[str, int]:
        """Counts for the filter buttons in one query: of the active checks All / In tests / In dashboard /
        Unused (what `active().used(...)` lists), and the archived ones. Each check is read as (archived?,
        in a test?, in a dashboard?) and counted here: an aggregate of five filtered counts over
        subqueries costs Django ~10k calls to compile, these rows ~4k for a library of 55."""
        outer = models.Q(pk=models.OuterRef("pk"))
        rows = self.annotate(
            uses_tests=models.Exists(self.model.objects.filter(outer & self._in_tests_q())),
            uses_monitors=models.Exists(self.model.objects.filter(outer, monitors__active=True)),
        ).values_list("archived_at", "uses_tests", "uses_monitors")
        counts = dict.fromkeys(("all", "in_tests", "in_monitors", "unused", "archived"), 0)
        for archived_at, in_tests, in_monitors in rows:
            if archived_at is not None:
                counts["archived"] += 1
                continue
            counts["all"] += 1
            counts["in_tests"] += bool(in_tests)
            counts["in_monitors"] += bool(in_monitors)
            counts["unused"] += not (in_tests or in_monitors)
        return counts


class Check(Versioned):
    """A stable identity in an agent's library; its content lives in versions."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="checks")
    # Denormalised from the current version for lists and filters; the service keeps them in sync.
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=50)  # no choices=: kinds come from the registry (STYLE.md 2)
    current_version = current_version_of("CheckVersion")
    detail_route = "checks:check-detail"

    objects = CheckQuerySet.as_manager()

    class Meta:
        ordering = ["kind", "name", "id"]
        indexes = [models.Index(fields=["agent", "kind", "name"], name="check_agent_kind_name")]


class CheckVersion(ImmutableVersion):
    # Not called `check`: that name is Django's Model.check() (system checks).
    parent = models.ForeignKey(Check, on_delete=models.CASCADE, related_name="versions")
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=50)
    config = models.JSONField(default=dict)

    def in_use(self) -> bool:
        return self.run_checks.exists() or self.results.exists()


class TestSetQuerySet(TeamScopedQuerySet):
    team_path = "agent__team"


class TestSet(NamedPage, models.Model):

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="test_sets")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    archived_at = models.DateTimeField(null=True, blank=True)

    detail_route = "checks:testset-detail"
    objects = TestSetQuerySet.as_manager()

    class Meta:
        ordering = ["name", "id"]
        constraints = [models.UniqueConstraint(fields=["agent", "name"], name="testset_unique_agent_name")]


class TestQuerySet(TeamScopedQuerySet, VersionedQuerySet):
    team_path = "test_set__agent__team"

    def using_check(self, check):
        """Active tests whose current version attaches `check` (their runs execute it)."""
        return self.active().filter(current_version__attached_checks__library_check=check)


class Test(Versioned):

    test_set = models.ForeignKey(TestSet, on_delete=models.CASCADE, related_name="tests")
    name = models.CharField(max_length=200)
    current_version = current_version_of("TestVersion")
    detail_route = "checks:test-detail"

    objects = TestQuerySet.as_manager()

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name

    @property
    def agent(self) -> Agent:
        return self.test_set.agent


def scenario_name(scenario: Mapping[str, Any] | None, index: int) -> str:
    """What the scenario at ``index`` (from 0) of a test version is called: its name, else "Scenario n"
    (n from 1, as the builder numbers them); ``scenario`` None for an index the version does not have."""
    return (scenario or {}).get("name") or f"Scenario {index + 1}"


def scenario_names(scenarios: list[Mapping[str, Any]] | None) -> list[str]:
    """``scenario_name`` of each scenario of a version's list, in order."""
    return [scenario_name(s, i) for i, s in enumerate(scenarios or [])]


class TestVersion(ImmutableVersion):
    """Frozen scenarios, thresholds and attached check identities of one test."""

    test = models.ForeignKey(Test, on_delete=models.CASCADE, related_name="versions")
    name = models.CharField(max_length=200)
    # [{"name", "input", "messages": [{"role","content"}], "metadata": {}}]
    scenarios = models.JSONField(default=list)
    samples_per_scenario = models.PositiveSmallIntegerField(default=1)
    min_valid_per_scenario = models.PositiveSmallIntegerField(default=1)
    required_pass_rate = models.PositiveSmallIntegerField(default=100)

    class Meta:
        ordering = ["test", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["test", "number"], name="testversion_unique_number"),
            models.CheckConstraint(
                condition=models.Q(required_pass_rate__gte=1, required_pass_rate__lte=100),
                name="testversion_pass_rate_1_100",
            ),
            models.CheckConstraint(
                condition=models.Q(min_valid_per_scenario__gte=1)
                & models.Q(min_valid_per_scenario__lte=models.F("samples_per_scenario")),
                name="testversion_min_valid_in_range",
            ),
        ]

    def in_use(self) -> bool:
        return self.runs.exists()

    @property
    def total_samples(self) -> int:
        return len(self.scenarios) * self.samples_per_scenario


class TestCheck(ImmutableModel):
    """A check identity attached to a test version; runs resolve it to the check's current version."""


    test_version = models.ForeignKey(TestVersion, on_delete=models.CASCADE, related_name="attached_checks")
    library_check = models.ForeignKey(Check, on_delete=models.PROTECT, related_name="test_attachments")
    required = models.BooleanField(default=True)
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["test_version", "position"]
        constraints = [
            models.UniqueConstraint(fields=["test_version", "library_check"], name="testcheck_unique_check"),
        ]

    def in_use(self) -> bool:
        return self.test_version.in_use()
