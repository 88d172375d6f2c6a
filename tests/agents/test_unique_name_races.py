"""Two requests saving the same unique name at once: the loser gets a field error, never a 500.

The services check for a duplicate name first; a concurrent writer can still insert the same name
between that check and the INSERT. A pre_save receiver plays that concurrent writer here (it inserts
the conflicting row just before our save), so the database's unique constraint is what catches it.
"""

from __future__ import annotations

import contextlib

import pytest
from django.db.models.signals import pre_save

from agents.models import Agent
from agents.services import create_agent, update_agent
from checks import services as check_services
from checks.models import TestSet
from core.errors import ValidationFailed


@contextlib.contextmanager
def concurrent_insert(model, make_row):
    """Right before the next save of `model`, insert `make_row(instance)` (bulk_create: no signals)."""
    fired = []

    def receiver(sender, instance, **kwargs):
        if not fired:
            fired.append(instance)
            model.objects.bulk_create([make_row(instance)])

    pre_save.connect(receiver, sender=model, weak=False)
    try:
        yield fired
    finally:
        pre_save.disconnect(receiver, sender=model)


def test_create_agent_race_on_name_is_a_field_error(team, admin_user):
    def duplicate(a):
        return Agent(team=a.team, name=a.name, endpoint_url=a.endpoint_url)

    with concurrent_insert(Agent, duplicate) as fired, pytest.raises(ValidationFailed) as exc:
        create_agent(team=team, by=admin_user, name="Bot", endpoint_url="http://127.0.0.1:9/")
    assert fired
    assert "already has an agent called 'Bot'" in exc.value.errors["name"]


def test_update_agent_race_on_name_is_a_clear_field_error(team, admin_user, agent):
    with (
        concurrent_insert(Agent, lambda a: Agent(team=a.team, name="Renamed", endpoint_url=a.endpoint_url)),
        pytest.raises(ValidationFailed) as exc,
    ):
        update_agent(agent=agent, by=admin_user, name="Renamed")
    assert exc.value.errors["name"] == "this team already has an agent called 'Renamed'"
    assert Agent.objects.get(pk=agent.pk).name == "Support bot"


def test_create_test_set_race_on_name_is_a_field_error(agent, member):
    with (
        concurrent_insert(TestSet, lambda t: TestSet(agent=t.agent, name=t.name)) as fired,
        pytest.raises(ValidationFailed) as exc,
    ):
        check_services.create_test_set(agent=agent, by=member, name="Orders")
    assert fired
    assert "already has a test set called 'Orders'" in exc.value.errors["name"]


def test_update_test_set_race_on_name_is_a_field_error(agent, member, test_set):
    with (
        concurrent_insert(TestSet, lambda t: TestSet(agent=t.agent, name="Refunds")),
        pytest.raises(ValidationFailed) as exc,
    ):
        check_services.update_test_set(test_set=test_set, by=member, name="Refunds")
    assert "already has a test set called 'Refunds'" in exc.value.errors["name"]
    assert TestSet.objects.get(pk=test_set.pk).name == "Orders"
