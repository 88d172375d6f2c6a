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


def _form():
    """A bound, valid form with one field, as a page's form is when its save() runs."""
    from django import forms

    class NameForm(forms.Form):
        name = forms.CharField()

    form = NameForm({"name": "Order bot"})
    assert form.is_valid()
    return form


def _request(member):
    from django.contrib.messages.storage.fallback import FallbackStorage

    request = RequestFactory().post("/")
    request.user = member
    request.session = {}
    request._messages = FallbackStorage(request)
    return request


def test_a_refusal_in_a_forms_save_is_not_put_on_the_form(member):
    """saved_or_errors (the agent, test-set, monitor and evaluation forms): the refusal goes on to the
    403 page; it is a DomainError too, which would otherwise show as the form's error with a 200."""
    from teams.views import saved_or_errors

    def refuse():
        raise PermissionDenied("Only team admins can do that.")

    form = _form()
    with pytest.raises(PermissionDenied, match="Only team admins"):
        saved_or_errors(_request(member), form, refuse, message="saved")
    assert form.errors == {}


def test_a_services_other_errors_go_on_the_form(member):
    from teams.views import saved_or_errors

    def reject():
        raise ValidationFailed("is taken", field="name")

    form = _form()
    assert saved_or_errors(_request(member), form, reject, message="saved") is None
    assert form.errors == {"name": ["is taken"]}
