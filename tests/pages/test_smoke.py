from __future__ import annotations

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_every_page_renders(login, member, live_agent, order_test, order_checks, run_now):
    run = run_now(order_test)
    client = login(member)
    urls = [
        reverse("agents:agent-list"),
        reverse("agents:agent-detail", args=[live_agent.pk]),
        reverse("checks:check-index"),
        reverse("checks:check-list", args=[live_agent.pk]),
        reverse("checks:check-create", args=[live_agent.pk]),
        reverse("checks:check-detail", args=[order_checks[1].pk]),
        reverse("checks:check-edit", args=[order_checks[1].pk]),
        reverse("checks:testset-list"),
        reverse("checks:testset-detail", args=[order_test.test_set_id]),
        reverse("checks:test-detail", args=[order_test.pk]),
        reverse("checks:test-edit", args=[order_test.pk]),
        reverse("checks:test-create", args=[order_test.test_set_id]),
        reverse("runs:run-list"),
        reverse("runs:run-detail", args=[run.pk]),
        reverse("runs:run-launch") + f"?test={order_test.pk}",
        reverse("runs:run-launch") + f"?test_set={order_test.test_set_id}",
        reverse("runs:run-compare") + f"?a={run.pk}",
    ]
    for url in urls:
        response = client.get(url, follow=True)
        assert response.status_code == 200, url
        html = response.content.decode()
        for name in ("agents:agent-list", "checks:check-index", "checks:testset-list", "runs:run-list",
                     "monitors:task-list", "monitors:monitor-list", "token-list"):
            assert f'href="{reverse(name)}"' in html, (url, name)  # the main navigation
        assert f'href="{reverse("team-detail", args=[live_agent.team_id])}"' in html  # user menu
    assert run.status == "completed", run.status
