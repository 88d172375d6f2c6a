"""Forms of the tasks, monitors and evaluations pages: they validate shapes; monitors.services writes."""

from __future__ import annotations

from decimal import Decimal

from django import forms

from monitors.services import DEFAULT_TASK_SORT, TASK_SORTS, TaskFilters

HAS_FAILURES_CHOICES = [("", "Any"), ("yes", "With failures"), ("no", "Without failures")]
SORT_LABELS = {
    "-completed_at": "Newest first",
    "completed_at": "Oldest first",
    "external_id": "Task id, A to Z",
    "-external_id": "Task id, Z to A",
    "agent": "Agent, A to Z",
    "-agent": "Agent, Z to A",
}
SORT_CHOICES = [(value, SORT_LABELS[value]) for value in TASK_SORTS]  # one label per allowed sort


class TaskFilterForm(forms.Form):
    agent = forms.TypedChoiceField(label="Agent", required=False, coerce=int, empty_value=None)
    completed_after = forms.DateTimeField(
        label="Completed from",
        required=False,
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
        help_text="UTC, inclusive.",
    )
    completed_before = forms.DateTimeField(
        label="Completed before",
        required=False,
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
        help_text="UTC, exclusive.",
    )
    q = forms.CharField(
        label="Search",
        required=False,
        max_length=200,
        widget=forms.TextInput(attrs={"type": "search", "placeholder": "e.g. EC-1042"}),
        help_text="Task id, output or metadata.",
        error_messages={"max_length": "at most %(limit_value)d characters"},
    )
    has_failures = forms.ChoiceField(label="Check results", required=False, choices=HAS_FAILURES_CHOICES)
    sort = forms.ChoiceField(
        label="Sort by",
        required=False,
        choices=SORT_CHOICES,
        error_messages={"invalid_choice": "must be one of " + ", ".join(v for v, _ in SORT_CHOICES)},
    )

    def __init__(self, *args, agents=(), agent_choices=None, **kwargs):
        """`agents`: the agent picker's agents; or `agent_choices`, their (pk, name) pairs as read."""
        super().__init__(*args, **kwargs)
        if agent_choices is None:
            agent_choices = [(a.pk, a.name) for a in agents]
        self.fields["agent"].choices = [("", "All agents"), *agent_choices]

    def filters(self) -> TaskFilters:
        """The cleaned filters (call after is_valid(); invalid fields are ignored)."""
        data = getattr(self, "cleaned_data", {}) or {}
        failures = {"yes": True, "no": False}.get(data.get("has_failures") or "")
        return TaskFilters(
            agent=data.get("agent"),
            completed_after=data.get("completed_after"),
            completed_before=data.get("completed_before"),
            q=(data.get("q") or "").strip(),
            has_failures=failures,
        )

    def ordering(self) -> str:
        """The cleaned ?sort= value (the default when missing or invalid)."""
        data = getattr(self, "cleaned_data", {}) or {}
        return data.get("sort") or DEFAULT_TASK_SORT


class AnyChoicesField(forms.TypedMultipleChoiceField):
    """Ticked values as they came: monitors.services says which ids are not checks of the agent."""

    def valid_value(self, value) -> bool:
        return True


class MonitorForm(forms.Form):
    """Parses the monitor page's input; every rule (name, rate, checks) is monitors.services', so the page,
    the API and the admin give the same messages, all at once, each under its field."""

    agent = forms.TypedChoiceField(
        label="Agent",
        coerce=int,
        error_messages={
            "required": "choose an agent",
            "invalid_choice": "choose one of your team's agents",
        },
    )
    name = forms.CharField(label="Name", required=False)
    sample_rate = forms.CharField(
        label="Sample rate (%)",
        required=False,
        initial=Decimal(10),
        help_text="Percent of the agent's new tasks to evaluate (0-100). The same task "
        "always gets the same decision.",
        widget=forms.NumberInput(attrs={"step": "0.01", "min": "0", "max": "100"}),
    )
    checks = AnyChoicesField(
        label="Checks",
        required=False,
        widget=forms.CheckboxSelectMultiple(attrs={"class": "check"}),  # option labels in body text
        help_text="Checks of the agent's library; new tasks use their current version.",
    )
    active = forms.BooleanField(label="Active (sample new tasks)", required=False, initial=True)

    def __init__(self, *args, agents=(), checks=(), editing: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["agent"].choices = [(a.pk, a.name) for a in agents]
        self.fields["checks"].choices = [(c.pk, f"{c.name} (v{c.version}, {c.kind})") for c in checks]
        if editing:
            self.fields["agent"].disabled = True


class LaunchEvaluationForm(forms.Form):
    name = forms.CharField(label="Name (optional)", max_length=200, required=False)
    checks = forms.TypedMultipleChoiceField(
        label="Checks to run",
        coerce=int,
        widget=forms.CheckboxSelectMultiple,
        help_text="Their current versions are frozen for this evaluation.",
    )

    def __init__(self, *args, checks=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["checks"].choices = [(c.pk, f"{c.name} (v{c.version}, {c.kind})") for c in checks]
