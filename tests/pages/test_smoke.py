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


NAV = ("agents:agent-list", "checks:check-index", "checks:testset-list", "runs:run-list", "token-list")


def test_a_404_page_has_the_console_layout_and_navigation(login, member):
    client = login(member)
    for url in ("/no-such-page/", reverse("agents:agent-detail", args=[999999])):
        response = client.get(url)
        assert response.status_code == 404, url
        html = response.content.decode()
        assert 'class="topbar"' in html and 'aria-label="Main"' in html, url
        for name in NAV:
            assert f'href="{reverse(name)}"' in html, (url, name)
        assert "Page not found" in html and f'href="{reverse("home")}"' in html


@pytest.mark.django_db(False)
def test_a_500_page_renders_with_the_layout_while_the_database_is_down(settings):
    """handler500 answers 500 with the console's layout and needs no query (the database may be down)."""
    from unittest import mock

    from django.contrib.auth.middleware import AuthenticationMiddleware
    from django.contrib.sessions.middleware import SessionMiddleware
    from django.db import OperationalError, connections
    from django.test import RequestFactory
    from django.urls import get_resolver

    from teams.middleware import CurrentTeamMiddleware

    # A logged-in browser's request: loading its session (and so its user and team) needs the database.
    request = RequestFactory().get("/agents/", HTTP_COOKIE=f"{settings.SESSION_COOKIE_NAME}=abc123")
    SessionMiddleware(lambda r: None).process_request(request)
    AuthenticationMiddleware(lambda r: None).process_request(request)
    CurrentTeamMiddleware(lambda r: None)(request)

    def down(*args, **kwargs):
        raise OperationalError("connection refused")

    handler = get_resolver().resolve_error_handler(500)
    with mock.patch.object(connections["default"], "ensure_connection", down):
        response = handler(request)
    assert response.status_code == 500
    html = response.content.decode()
    assert 'class="topbar"' in html and 'aria-label="Main"' in html
    for name in NAV:
        assert f'href="{reverse(name)}"' in html, name
    assert "Something went wrong" in html
