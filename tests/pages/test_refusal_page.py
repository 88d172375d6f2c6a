"""A service's refusal let out of a page view answers the 403 page (core.views.RefusalMiddleware)."""

import pytest
from django.test import RequestFactory
from django.urls import reverse

from agents import services
from core.errors import DomainError, PermissionDenied, ValidationFailed
from core.views import RefusalMiddleware


def test_a_refused_write_answers_the_403_page_with_the_services_reason(client, agent, member):
    with pytest.raises(PermissionDenied) as refused:  # members may not archive agents: admins do
        services.archive_agent(agent=agent, by=member, archived=True)
    client.force_login(member)
    response = client.post(reverse("agents:agent-archive", args=[agent.pk]))
    assert response.status_code == 403
    assert [t.name for t in response.templates][0] == "403.html"
    assert response.context["message"] == str(refused.value)
    assert str(refused.value) in response.content.decode()
    agent.refresh_from_db()
    assert agent.archived_at is None


@pytest.mark.parametrize("error", [DomainError("no"), ValidationFailed("bad", field="name"), ValueError("x")])
def test_other_errors_are_not_the_middlewares(error):
    middleware = RefusalMiddleware(lambda request: None)
    assert middleware.process_exception(RequestFactory().post("/"), error) is None
