"""core.urls.pk_url: what reverse(name, args=[pk]) gives, from a template reversed once."""

from __future__ import annotations

import pytest
from django.urls import NoReverseMatch, clear_script_prefix, reverse, set_script_prefix

from core.urls import pk_url

NAMES = ["agents:agent-detail", "checks:check-detail", "checks:test-detail", "runs:run-detail", "reviews:queue-detail"]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("pk", [0, 7, 12345678901234])
def test_same_as_reverse(name, pk):
    assert pk_url(name, pk) == reverse(name, args=[pk])


def test_follows_the_script_prefix():
    set_script_prefix("/console/")
    try:
        assert pk_url("runs:run-detail", 42) == "/console/runs/42/" == reverse("runs:run-detail", args=[42])
    finally:
        clear_script_prefix()
    assert pk_url("runs:run-detail", 42) == "/runs/42/"


def test_anything_else_is_reverse_s_business():
    assert pk_url("runs:run-detail", "42") == "/runs/42/"
    with pytest.raises(NoReverseMatch):
        pk_url("runs:run-detail", None)
    with pytest.raises(NoReverseMatch):
        pk_url("runs:run-detail", -1)
