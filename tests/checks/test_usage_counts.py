"""An agent's Checks tab counts its filters (CheckQuerySet.usage_counts) from one query of rows: each count
is what the filter it labels lists (`active().used(...)`, the archived checks), for checks in current and
old test versions, archived tests, active and paused dashboards, archived checks, and under a search."""

from __future__ import annotations

import pytest

from checks.models import Check
from checks.services import archive_check, archive_test, create_check, create_test, edit_test
from monitors.models import Monitor
from monitors.services import create_monitor

pytestmark = pytest.mark.django_db


def _listed(checks) -> dict[str, int]:
    """The counts as the filters list them."""
    active = checks.active()
    return {
        "all": active.count(),
        "in_tests": active.used("in_tests").count(),
        "in_monitors": active.used("in_monitors").count(),
        "unused": active.used("unused").count(),
        "archived": checks.filter(archived_at__isnull=False).count(),
    }


def test_each_count_is_what_its_filter_lists(agent, member, admin_user, test_set, django_assert_num_queries):
    def check(name):
        return create_check(agent=agent, by=member, name=name, kind="latency", config={"max_ms": 5})

    in_test, in_both, old_only, in_archived_test = (
        check("In test"),
        check("Both"),
        check("Old"),
        check("Gone"),
    )
    paused_only, in_monitor, unused, archived_used = (
        check("Paused"),
        check("Dash"),
        check("Spare"),
        check("Arch"),
    )
    create_test(test_set=test_set, by=member, name="T1", scenarios=["a"], checks=[in_test.pk, in_both.pk])
    twice = create_test(
        test_set=test_set, by=member, name="T2", scenarios=["a"], checks=[in_test.pk, old_only.pk]
    )
    edit_test(test=twice, by=member, checks=[in_test.pk])  # old_only stays in version 1 only
    gone = create_test(test_set=test_set, by=member, name="T3", scenarios=["a"], checks=[in_archived_test.pk])
    archive_test(test=gone, by=admin_user)
    create_monitor(agent=agent, by=member, name="M1", checks=[in_both.pk, in_monitor.pk, archived_used.pk])
    paused = create_monitor(agent=agent, by=member, name="M2", checks=[paused_only.pk, in_monitor.pk])
    Monitor.objects.filter(pk=paused.pk).update(active=False)
    archive_check(check=archived_used, by=admin_user, confirm=True)
    assert unused.pk

    checks = Check.objects.visible_to(member).filter(agent=agent)
    with django_assert_num_queries(1):
        counts = checks.usage_counts()
    assert (
        counts == _listed(checks) == {"all": 7, "in_tests": 2, "in_monitors": 2, "unused": 4, "archived": 1}
    )
    searched = checks.search("o")  # "Both", "Old", "Gone", "Paused"... by name, any case
    assert searched.usage_counts() == _listed(searched)
    assert Check.objects.none().usage_counts() == dict.fromkeys(counts, 0)
