"""Agent pages: register/edit through agents.services, headers write-only, ping in place, team scoping."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agents.models import Agent
from tests.support.page_fixtures import live_agent, login, order_test, run_now  # noqa: F401

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


def _form(**overrides):
    data = {
        "name": "Order bot",
        "description": "",
        "kind": "agent",
        "protocol": "evalconsole",
        "endpoint_url": "http://127.0.0.1:9/agent",
        "model_name": "",
        "headers": "",
        "timeout_s": "30",
        "retries": "2",
        "max_concurrency": "10",
        "nodes": "",
    }
    data.update(overrides)
    return data


def test_admin_registers_an_agent_with_secret_headers(login, admin_user, team):
    client = login(admin_user)
    response = client.post(
        reverse("agents:agent-create"), _form(headers="Authorization: Bearer s3cret-value\nX-Org: acme")
    )
    agent = Agent.objects.get(team=team, name="Order bot")
    assert response.status_code == 302 and response["Location"] == agent.get_absolute_url()
    assert agent.get_headers() == {"Authorization": "Bearer s3cret-value", "X-Org": "acme"}
    page = client.get(agent.get_absolute_url()).content.decode()
    assert "Authorization" in page and "X-Org" in page  # names only
    assert "s3cret-value" not in page
    edit = client.get(reverse("agents:agent-edit", args=[agent.pk])).content.decode()
    assert "s3cret-value" not in edit and "Leave blank to keep them" in edit


def test_blank_headers_keep_the_stored_ones_and_clear_removes_them(login, admin_user, live_agent):
    client = login(admin_user)
    url = reverse("agents:agent-edit", args=[live_agent.pk])
    client.post(url, _form(name="Fake bot", endpoint_url=live_agent.endpoint_url, timeout_s="7"))
    live_agent.refresh_from_db()
    assert live_agent.timeout_s == 7 and live_agent.get_headers() == {
        "Authorization": "Bearer sk-very-secret-value"
    }
    client.post(url, _form(name="Fake bot", endpoint_url=live_agent.endpoint_url, clear_headers="on"))
    live_agent.refresh_from_db()
    assert live_agent.get_headers() == {} and live_agent.header_names == []


def test_bad_input_shows_the_services_message_and_keeps_what_was_typed(login, admin_user):
    client = login(admin_user)
    response = client.post(
        reverse("agents:agent-create"),
        _form(
            name="Typed name",
            endpoint_url="ftp://nowhere",
            timeout_s="900",
            headers="Authorization: Bearer typed-secret",
        ),
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert "must be an http:// or https:// URL with a host" in html
    assert "must be between 0.1 and 600 seconds" in html
    assert 'value="Typed name"' in html and 'value="ftp://nowhere"' in html and 'value="900"' in html
    assert _field(html, "headers").count("Authorization: Bearer typed-secret") == 1  # kept, to fix and resend
    assert not Agent.objects.filter(name="Typed name").exists()


def _field(html: str, name: str) -> str:
    """The HTML of one form field's block (label, input, help and errors)."""
    start = html.index(f'<label for="id_{name}"')
    start = html.rindex('<div class="field', 0, start)
    end = html.index('<div class="field', start + 1) if '<div class="field' in html[start + 1:] else len(html)
    return html[start:end]


def _top_banners(html: str) -> list[str]:
    form = html.split("<form", 1)[1]
    return [part.split("</div>", 1)[0] for part in form.split('class="errorbox"')[1:]]


def test_register_errors_sit_on_their_fields_and_typed_headers_are_kept(login, admin_user):
    client = login(admin_user)
    typed = "Authorization: Bearer sk-typed\nnot a header line"
    response = client.post(
        reverse("agents:agent-create"), _form(endpoint_url="http://127.0.0.1:99999/", headers=typed)
    )
    html = response.content.decode()
    assert response.status_code == 200 and not Agent.objects.exists()
    headers = _field(html, "headers")
    assert "Authorization: Bearer sk-typed\nnot a header line</textarea>" in headers
    assert "line 2: expected “Name: value”" in headers
    assert "port must be between 1 and 65535" in _field(html, "endpoint_url")
    assert _top_banners(html) == []  # nothing above the form reads like another error

    # Fixed and sent again with the same headers: saved with them.
    fixed = _form(endpoint_url="http://127.0.0.1:9/", headers=typed.split("\n")[0])
    response = client.post(reverse("agents:agent-create"), fixed)
    assert response.status_code == 302
    assert Agent.objects.get().get_headers() == {"Authorization": "Bearer sk-typed"}


def test_edit_keeps_typed_headers_on_error_and_never_shows_stored_ones(login, admin_user, live_agent):
    client = login(admin_user)
    url = reverse("agents:agent-edit", args=[live_agent.pk])
    assert "sk-very-secret-value" not in client.get(url).content.decode()
    response = client.post(url, _form(name="", endpoint_url=live_agent.endpoint_url, headers="X-New: typed"))
    html = response.content.decode()
    assert "X-New: typed</textarea>" in _field(html, "headers")
    assert "sk-very-secret-value" not in html
    assert "an agent needs a name" in _field(html, "name") or "This field is required" in _field(html, "name")
    assert _top_banners(html) == []


def test_a_duplicate_name_is_shown_on_the_name_field_not_on_top(login, admin_user, team, agent):
    client = login(admin_user)
    response = client.post(reverse("agents:agent-create"), _form(name=agent.name))  # a duplicate name
    html = response.content.decode()
    assert "already has an agent called" in _field(html, "name")
    assert _top_banners(html) == []


def test_header_lines_must_be_name_colon_value(login, admin_user):
    response = login(admin_user).post(reverse("agents:agent-create"), _form(headers="no colon here"))
    assert "line 1: expected" in response.content.decode()


def test_members_and_viewers_cannot_register_or_edit_agents(login, member, viewer, agent):
    for user in (member, viewer):
        client = login(user)
        assert client.get(reverse("agents:agent-create")).status_code == 403
        assert client.post(reverse("agents:agent-create"), _form()).status_code == 403
        assert client.post(reverse("agents:agent-edit", args=[agent.pk]), _form()).status_code == 403
        page = client.get(agent.get_absolute_url()).content.decode()
        assert reverse("agents:agent-edit", args=[agent.pk]) not in page
    assert not Agent.objects.filter(name="Order bot").exists()


def test_another_teams_agent_is_404_everywhere(login, outsider, agent):
    client = login(outsider)
    for name in ("agents:agent-detail", "agents:agent-edit"):
        assert client.get(reverse(name, args=[agent.pk])).status_code == 404
    assert client.post(reverse("agents:agent-ping", args=[agent.pk])).status_code == 404
    assert client.post(reverse("agents:agent-archive", args=[agent.pk])).status_code == 404
    assert agent.name not in client.get(reverse("agents:agent-list")).content.decode()


def test_ping_shows_the_reply_in_place(login, member, live_agent, fake):
    response = login(member).post(reverse("agents:agent-ping", args=[live_agent.pk]), **HTMX)
    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<div id="ping-result"')  # a fragment, not the page
    assert "Reachable" in html and "You said: ping" in html
    assert fake.requests[-1]["headers"]["authorization"] == "Bearer sk-very-secret-value"


def test_ping_shows_the_error_in_place(login, member, agent):
    html = login(member).post(reverse("agents:agent-ping", args=[agent.pk]), **HTMX).content.decode()
    assert "Ping failed" in html


def test_viewer_cannot_ping_and_sees_no_ping_button(login, viewer, agent):
    client = login(viewer)
    assert client.post(reverse("agents:agent-ping", args=[agent.pk]), **HTMX).status_code == 403
    assert "Ping agent" not in client.get(agent.get_absolute_url()).content.decode()


def test_archive_hides_the_agent_from_the_list(login, admin_user, agent):
    client = login(admin_user)
    response = client.post(reverse("agents:agent-archive", args=[agent.pk]), follow=True)
    assert "Agent Support bot archived" in response.content.decode()
    assert (
        f'href="{agent.get_absolute_url()}"' not in client.get(reverse("agents:agent-list")).content.decode()
    )


def test_archived_agents_are_listed_under_the_archived_filter_and_admins_restore_them(
    login, admin_user, member, agent
):
    from agents.services import archive_agent

    archive_agent(agent=agent, by=admin_user)
    url = reverse("agents:agent-list")
    client = login(admin_user)
    html = client.get(url).content.decode()
    assert f'href="{agent.get_absolute_url()}"' not in html
    assert 'data-filter="archived">Archived<span class="count">1</span>' in html
    archived = client.get(url, {"archived": "1"}).content.decode()
    assert f'href="{agent.get_absolute_url()}"' in archived
    assert '<span class="tag warn">archived</span>' in archived
    assert 'aria-current="true" data-filter="archived"' in archived
    assert "Restore" in archived
    assert "Restore agent" in client.get(agent.get_absolute_url()).content.decode()

    # members see archived agents but cannot restore them
    assert "Restore" not in login(member).get(url, {"archived": "1"}).content.decode()
    restore = reverse("agents:agent-archive", args=[agent.pk])
    assert login(member).post(restore, {"restore": "1"}).status_code == 403
    agent.refresh_from_db()
    assert agent.archived_at is not None

    response = login(admin_user).post(restore, {"restore": "1"}, follow=True)
    agent.refresh_from_db()
    assert agent.archived_at is None and "Agent Support bot restored" in response.content.decode()
    assert f'href="{agent.get_absolute_url()}"' in client.get(url).content.decode()


def test_the_archived_filter_refuses_a_value_that_is_not_a_boolean(login, member, agent):
    response = login(member).get(reverse("agents:agent-list"), {"archived": "maybe"})
    assert response.status_code == 400
    assert "archived: &#x27;maybe&#x27; is not a boolean" in response.content.decode()


def test_another_teams_archived_agent_is_404_and_not_listed(login, outsider, admin_user, agent):
    from agents.services import archive_agent

    archive_agent(agent=agent, by=admin_user)
    client = login(outsider)
    assert agent.name not in client.get(reverse("agents:agent-list"), {"archived": "1"}).content.decode()
    restore = reverse("agents:agent-archive", args=[agent.pk])
    assert client.post(restore, {"restore": "1"}).status_code == 404
