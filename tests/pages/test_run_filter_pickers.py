"""The runs page's agent and test pickers and the check library's agent picker read their options as
columns (core.forms.ColumnChoiceField), not as model instances: the select each draws is the one a stock
ModelChoiceField draws over the same queryset, unbound, bound to a choice, and bound to a value that is
not one; validation is unchanged."""

from __future__ import annotations

import pytest
from django import forms

from agents.models import Agent
from agents.services import create_agent
from checks.forms import CheckSearchForm
from checks.models import Test
from checks.services import create_test, create_test_set
from runs.forms import RunFilterForm

pytestmark = pytest.mark.django_db


class StockForm(RunFilterForm):
    agent = forms.ModelChoiceField(queryset=Agent.objects.none(), required=False, empty_label="All agents")
    test = forms.ModelChoiceField(queryset=Test.objects.none(), required=False, empty_label="All tests")


def test_the_pickers_draw_what_model_choice_fields_draw(team, admin_user, member, agent):
    odd = create_agent(team=team, by=admin_user, name='<b>"Odd" & co</b>', endpoint_url="http://127.0.0.1:9/")
    for owner in (agent, odd):
        test_set = create_test_set(agent=owner, by=member, name=f"Set of {owner.pk}")
        for name in ("Known <order>", "A & B"):
            create_test(test_set=test_set, by=member, name=name, scenarios=["a"])
    agents = Agent.objects.filter(team=team).order_by("name", "pk")
    tests = (
        Test.objects.filter(test_set__agent__team=team)
        .select_related("test_set__agent")
        .order_by("test_set__agent__name", "name", "pk")
    )
    first = tests.first()
    for data in [None, {"agent": str(odd.pk), "test": str(first.pk)}, {"agent": "999999", "test": "x"}]:
        ours = RunFilterForm(data, agents=agents, tests=tests)
        stock = StockForm(data, agents=agents, tests=tests)
        for name in ("agent", "test"):
            assert str(ours[name]) == str(stock[name])
        assert ours.is_valid() == stock.is_valid()
        assert ours.errors == stock.errors
    chosen = RunFilterForm({"agent": str(odd.pk)}, agents=agents, tests=tests)
    assert chosen.is_valid() and chosen.cleaned_data["agent"] == odd
    assert f'<option value="{odd.pk}" selected>&lt;b&gt;&quot;Odd&quot; &amp; co&lt;/b&gt;</option>' in str(
        chosen["agent"]
    )


class StockSearchForm(CheckSearchForm):
    agent = forms.ModelChoiceField(label="Agent", required=False, queryset=None, empty_label="All agents")


def test_the_check_library_agent_picker_draws_what_a_model_choice_field_draws(team, admin_user, agent):
    odd = create_agent(team=team, by=admin_user, name='<b>"Odd" & co</b>', endpoint_url="http://127.0.0.1:9/")
    agents = Agent.objects.filter(team=team).order_by("name", "pk")
    for data in [None, {"agent": str(odd.pk)}, {"agent": "999999"}, {"agent": "x", "q": "a"}]:
        ours, stock = CheckSearchForm(data, agents=agents), StockSearchForm(data, agents=agents)
        assert str(ours["agent"]) == str(stock["agent"])
        assert ours.is_valid() == stock.is_valid() and ours.errors == stock.errors
