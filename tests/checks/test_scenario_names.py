"""checks.models.scenario_name: what a test version's scenario is called wherever it is shown."""

from __future__ import annotations

from checks.models import scenario_name, scenario_names


def test_a_named_scenario_is_called_by_its_name():
    assert scenario_name({"name": "Refund", "input": "x"}, 4) == "Refund"


def test_an_unnamed_scenario_is_numbered_from_one():
    assert scenario_name({"input": "x"}, 0) == "Scenario 1"
    assert scenario_name({"name": "", "input": "x"}, 2) == "Scenario 3"


def test_an_index_the_version_does_not_have_is_numbered_too():
    assert scenario_name(None, 6) == "Scenario 7"


def test_the_names_of_a_list_keep_its_order():
    assert scenario_names([{"name": "A"}, {}, {"name": "C"}]) == ["A", "Scenario 2", "C"]
    assert scenario_names(None) == []
