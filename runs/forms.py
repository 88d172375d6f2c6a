"""Run launcher and run list filters: parse the browser's input; runs.services validates and writes."""

from __future__ import annotations

from django import forms

from agents.models import Agent
from checks.kinds import Outcome
from checks.models import Test
from core.forms import ColumnChoiceField
from runs.models import Run


class LaunchForm(forms.Form):
    """Additional checks picked from the agent's library; each is required unless marked advisory."""

    additional = forms.TypedMultipleChoiceField(
        label="Additional checks",
        required=False,
        coerce=int,
        widget=forms.CheckboxSelectMultiple,
        help_text="Run these library checks on top of the test's own, for this launch only.",
    )
    advisory = forms.TypedMultipleChoiceField(required=False, coerce=int, widget=forms.MultipleHiddenInput)
    trials = forms.IntegerField(
        label="Trials",
        required=False,
        min_value=1,
        help_text="Run the test this many times as one batch; the batch's pass^k pools every run's samples.",
    )

    def __init__(self, *args, library=(), **kwargs):
        super().__init__(*args, **kwargs)
        choices = [(c.pk, c.name) for c in library]
        self.fields["additional"].choices = choices
        self.fields["advisory"].choices = choices

    def trial_count(self) -> int:
        return self.cleaned_data.get("trials") or 1

    def additional_checks(self) -> list[dict]:
        advisory = set(self.cleaned_data.get("advisory") or ())
        return [
            {"check": pk, "required": pk not in advisory} for pk in self.cleaned_data.get("additional") or ()
        ]


def _test_label(agent_name: str, name: str) -> str:
    return f"{agent_name} · {name}"


class RunFilterForm(forms.Form):
    agent = ColumnChoiceField(queryset=Agent.objects.none(), required=False, empty_label="All agents")
    test = ColumnChoiceField(
        queryset=Test.objects.none(),
        required=False,
        empty_label="All tests",
        label_columns=("test_set__agent__name", "name"),
        label_from_columns=_test_label,
    )
    result = forms.ChoiceField(required=False, choices=[("", "Any result"), *Outcome.choices])
    status = forms.ChoiceField(required=False, choices=[("", "Any status"), *Run.Status.choices])
    date_from = forms.DateField(required=False, label="From", widget=forms.DateInput(attrs={"type": "date"}))
    date_to = forms.DateField(required=False, label="To", widget=forms.DateInput(attrs={"type": "date"}))
    batch = forms.CharField(required=False, max_length=40, widget=forms.HiddenInput)

    # The run lookup each field filters by (a blank field does not filter).
    LOOKUPS = {
        "agent": "agent", "test": "test", "result": "result", "status": "status",
        "date_from": "created_at__date__gte", "date_to": "created_at__date__lte", "batch": "batch",
    }

    def __init__(self, *args, agents=None, tests=None, **kwargs):
        super().__init__(*args, **kwargs)
        if agents is not None:
            self.fields["agent"].queryset = agents
        if tests is not None:
            self.fields["test"].queryset = tests
            self.fields["test"].label_from_instance = lambda t: _test_label(t.test_set.agent.name, t.name)

    def filter(self, runs):
        if not self.is_valid():
            return runs
        data = self.cleaned_data
        for name, lookup in self.LOOKUPS.items():
            if data.get(name):
                runs = runs.filter(**{lookup: data[name]})
        return runs
