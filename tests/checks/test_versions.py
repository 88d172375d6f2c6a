"""Immutability of check and test versions, and edit → version n+1."""

from __future__ import annotations

import pytest

from checks import services
from checks.models import CheckVersion, TestVersion
from core.errors import ImmutableError, ValidationFailed


@pytest.fixture
def check(agent, member):
    return services.create_check(agent=agent, by=member, name="Mentions order", kind="text_includes",
                                 config={"text": "EC-1042"})


def test_create_check_makes_version_one(check):
    assert check.version == 1
    v1 = check.current_version
    assert (v1.number, v1.name, v1.kind, v1.config["text"]) == (
        1,
        "Mentions order",
        "text_includes",
        "EC-1042",
    )


def test_edit_check_makes_version_two_and_keeps_version_one(check, member):
    edited = services.edit_check(check=check, by=member, config={"text": "EC-2000"})
    assert edited.version == 2
    assert edited.current_version.config["text"] == "EC-2000"
    v1 = CheckVersion.objects.get(parent=check, number=1)
    assert v1.config["text"] == "EC-1042"
    assert CheckVersion.objects.filter(parent=check).count() == 2


def test_edit_that_changes_nothing_makes_no_version(check, member):
    same = services.edit_check(check=check, by=member, config={"text": "EC-1042"})
    assert same.version == 1


def test_check_version_cannot_be_updated(check):
    v1 = check.current_version
    v1.name = "changed"
    with pytest.raises(ImmutableError):
        v1.save()
    with pytest.raises(ImmutableError):
        CheckVersion.objects.filter(pk=v1.pk).update(name="changed")
    v1.refresh_from_db()
    assert v1.name == "Mentions order"


def test_test_version_cannot_be_updated(test_set, member, check):
    test = services.create_test(test_set=test_set, by=member, name="Order", scenarios=["Where is EC-1042?"],
                                checks=[{"check": check.pk, "required": True}])
    with pytest.raises(ImmutableError):
        TestVersion.objects.filter(pk=test.current_version_id).update(required_pass_rate=50)
    version = test.current_version
    version.required_pass_rate = 50
    with pytest.raises(ImmutableError):
        version.save()


def test_edit_test_makes_new_version_and_keeps_old(test_set, member, check):
    test = services.create_test(test_set=test_set, by=member, name="Order", scenarios=["Where is EC-1042?"],
                                checks=[{"check": check.pk, "required": True}])
    edited = services.edit_test(test=test, by=member, scenarios=["Where is EC-1042?", "Status of EC-7?"])
    assert edited.version == 2
    old = TestVersion.objects.get(test=test, number=1)
    assert len(old.scenarios) == 1 and len(edited.current_version.scenarios) == 2
    assert [tc.library_check_id for tc in edited.current_version.attached_checks.all()] == [check.pk]


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"scenarios": [f"q{i}" for i in range(11)]}, "scenarios", "over the limit of 10"),
        ({"scenarios": []}, "scenarios", "at least one"),
        ({"samples_per_scenario": 11}, "samples_per_scenario", "over the limit of 10 samples per run"),
        (
            {"scenarios": ["a", "b", "c"], "samples_per_scenario": 4},
            "samples_per_scenario",
            "3 scenarios × 4",
        ),
        ({"samples_per_scenario": 0}, "samples_per_scenario", "at least 1"),
        ({"samples_per_scenario": 2, "min_valid_per_scenario": 3}, "min_valid_per_scenario", "between 1 and"),
        ({"min_valid_per_scenario": 0}, "min_valid_per_scenario", "between 1 and"),
        ({"required_pass_rate": 0}, "required_pass_rate", "between 1 and 100"),
        ({"required_pass_rate": 101}, "required_pass_rate", "between 1 and 100"),
        ({"required_pass_rate": "abc"}, "required_pass_rate", "whole number"),
        ({"name": ""}, "name", "needs a name"),
        ({"scenarios": [{"input": ""}]}, "scenarios.0.input", "needs an input"),
        (
            {"scenarios": [{"messages": [{"role": "bot", "content": "x"}]}]},
            "scenarios.0.messages.0.role",
            "role",
        ),
    ],
)
def test_limits_are_rejected_naming_the_field(test_set, member, changes, field, message):
    spec = {"name": "T", "scenarios": ["Where is EC-1042?"], **changes}
    with pytest.raises(ValidationFailed) as exc:
        services.create_test(test_set=test_set, by=member, **spec)
    assert field in exc.value.errors, exc.value.errors
    assert message in exc.value.errors[field]


def test_too_many_checks_rejected(test_set, member, agent):
    checks = [
        services.create_check(
            agent=agent, by=member, name=f"c{i}", kind="text_includes", config={"text": str(i)}
        )
        for i in range(11)
    ]
    with pytest.raises(ValidationFailed) as exc:
        services.create_test(test_set=test_set, by=member, name="T", scenarios=["x"],
                             checks=[{"check": c.pk, "required": True} for c in checks])
    assert "over the limit of 10" in exc.value.errors["checks"]


def test_check_of_another_agent_rejected(test_set, member, other_team, outsider):
    from agents.services import create_agent

    foreign_agent = create_agent(team=other_team, by=outsider, name="X", endpoint_url="http://127.0.0.1:9/")
    foreign = services.create_check(agent=foreign_agent, by=outsider, name="f", kind="text_includes",
                                    config={"text": "x"})
    with pytest.raises(ValidationFailed) as exc:
        services.create_test(test_set=test_set, by=member, name="T", scenarios=["x"], checks=[foreign.pk])
    assert "not in" in exc.value.errors["checks.0.check"]


def test_bad_check_config_names_the_field(agent, member):
    with pytest.raises(ValidationFailed) as exc:
        services.create_check(agent=agent, by=member, name="x", kind="text_includes", config={})
    assert any(key.startswith("config") for key in exc.value.errors)
    with pytest.raises(ValidationFailed) as exc:
        services.create_check(agent=agent, by=member, name="x", kind="nope", config={})
    assert "unknown kind" in exc.value.errors["kind"]


def test_used_versions_cannot_be_deleted(test_set, member, check):
    from runs.models import Run, RunCheck

    test = services.create_test(test_set=test_set, by=member, name="Order", scenarios=["Where is EC-1042?"],
                                checks=[{"check": check.pk, "required": True}])
    run = Run.objects.create(agent=test_set.agent, test=test, test_version=test.current_version)
    RunCheck.objects.create(run=run, check_version=check.current_version)
    with pytest.raises(ImmutableError):
        check.current_version.delete()
    with pytest.raises(ImmutableError):
        CheckVersion.objects.filter(pk=check.current_version_id).delete()
    with pytest.raises(ImmutableError):
        test.current_version.delete()
    assert CheckVersion.objects.filter(pk=check.current_version_id).exists()
    assert TestVersion.objects.filter(pk=test.current_version_id).exists()


def test_unused_version_of_a_check_can_be_deleted_with_its_check(check):
    from checks.models import Check

    Check.objects.filter(pk=check.pk).update(current_version=None)
    check.refresh_from_db()
    check.delete()
    assert not CheckVersion.objects.filter(parent_id=check.pk).exists()
