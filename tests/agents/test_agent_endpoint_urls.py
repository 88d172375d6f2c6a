"""An agent's endpoint URL is checked when saved, by the policy used when connecting (issue 14, defect 18).

The register page, the REST API and Django admin all save through agents.services, so each bad URL is
tried through all three: the answer names the field and the reason, and nothing is stored.
"""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from agents.models import Agent
from agents.services import create_agent, update_agent
from core.errors import ValidationFailed

pytestmark = pytest.mark.django_db

BAD_URLS = [
    ("http://127.0.0.1:99999/", "port must be between 1 and 65535"),
    ("http://agent.example.com:0/", "port must be between 1 and 65535"),
    ("http://agent.example.com:http/", "port must be a number"),
    ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local address (cloud metadata)"),
    ("http://[fe80::1]:8080/", "link-local"),
    ("http://100.100.100.200/", "cloud metadata"),
    ("http://[::ffff:169.254.169.254]/", "link-local"),
    ("http://0xa9fea9fe/", "link-local"),  # 169.254.169.254 as one hex number, which resolvers accept
    ("http://user:s3cr3t-pw@agent.example.com/", "credentials"),
    ("http://key-only@agent.example.com/", "credentials"),
]


@pytest.fixture
def superuser(make_user):
    return make_user("root", is_staff=True, is_superuser=True)


def _save(via, url, *, client, admin_user, superuser, team):
    """Register an agent at `url` through one entry point; return the text the user sees."""
    if via == "html":
        client.force_login(admin_user)
        data = {"name": "Bot", "kind": "agent", "protocol": "evalconsole", "endpoint_url": url,
                "headers": "X-Typed: v", "timeout_s": "30", "retries": "2", "max_concurrency": "10"}
        response = client.post(reverse("agents:agent-create"), data)
        assert response.status_code == 200
        return response.content.decode()
    if via == "api":
        api = APIClient()
        api.force_authenticate(admin_user)
        response = api.post("/api/v1/agents/", {"name": "Bot", "endpoint_url": url}, format="json")
        assert response.status_code == 400, response.content
        assert set(response.json()) == {"endpoint_url"}
        return response.content.decode()
    client.force_login(superuser)
    data = {"team": team.pk, "name": "Bot", "description": "", "kind": "agent", "protocol": "evalconsole",
            "endpoint_url": url, "model_name": "", "timeout_s": 30, "retries": 2, "max_concurrency": 10,
            "concurrency_window": "", "nodes-TOTAL_FORMS": 0, "nodes-INITIAL_FORMS": 0}
    response = client.post("/admin/agents/agent/add/", data)
    assert response.status_code == 200
    return response.content.decode()


@pytest.mark.parametrize("via", ["html", "api", "admin"])
@pytest.mark.parametrize(("url", "reason"), BAD_URLS)
def test_a_bad_endpoint_url_is_refused_on_save(via, url, reason, client, admin_user, superuser, team):
    shown = _save(via, url, client=client, admin_user=admin_user, superuser=superuser, team=team)
    assert reason in shown
    assert not Agent.objects.exists()
    if "@" in url:
        message = shown.split(reason, 1)[1].split("</", 1)[0].split("\"]", 1)[0]
        assert "headers" in message and "s3cr3t-pw" not in message  # says where credentials belong
        if via == "api":
            assert "s3cr3t-pw" not in shown  # (a form keeps what was typed, so that it can be moved)


def test_the_register_page_shows_the_url_error_on_the_field(client, admin_user):
    html = _save("html", "http://127.0.0.1:99999/", client=client, admin_user=admin_user, superuser=None,
                 team=None)
    field = html.split('id="id_endpoint_url"', 1)[1].split("</div>", 1)[0]
    assert "port must be between 1 and 65535" in field


def test_changing_the_url_is_checked_too(agent, admin_user):
    with pytest.raises(ValidationFailed) as exc:
        update_agent(agent=agent, by=admin_user, endpoint_url="http://169.254.169.254/")
    assert "link-local" in exc.value.errors["endpoint_url"]
    agent.refresh_from_db()
    assert agent.endpoint_url == "http://127.0.0.1:9/agent"


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:8001/", "http://localhost:8001/", "http://api.localhost/", "http://10.0.0.5/",
     "http://2130706433/", "http://[::1]/"],
)
def test_private_addresses_are_refused_on_save_when_the_policy_refuses_them(url, settings, team, admin_user):
    settings.EVALCONSOLE_ALLOW_PRIVATE_URLS = False
    with pytest.raises(ValidationFailed) as exc:
        create_agent(team=team, by=admin_user, name="Bot", endpoint_url=url)
    assert "may not call private addresses" in exc.value.errors["endpoint_url"]


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:8001/", "http://localhost:8001/", "https://agent.example.com:8443/v1", "http://[::1]:80/"]
)
def test_usable_urls_are_accepted(url, team, admin_user):
    assert create_agent(team=team, by=admin_user, name="Bot", endpoint_url=url).endpoint_url == url


def test_credentials_stored_before_this_check_are_never_shown(client, admin_user, agent):
    Agent.objects.filter(pk=agent.pk).update(endpoint_url="http://user:s3cr3t-pw@agent.example.com/v1")
    client.force_login(admin_user)
    api = APIClient()
    api.force_authenticate(admin_user)
    seen = {
        "/agents/": client.get("/agents/").content.decode(),
        "agent page": client.get(agent.get_absolute_url()).content.decode(),
        "edit page": client.get(reverse("agents:agent-edit", args=[agent.pk])).content.decode(),
        "API": api.get(f"/api/v1/agents/{agent.pk}/").content.decode(),
    }
    for where, text in seen.items():
        assert "s3cr3t-pw" not in text and "user:" not in text, where
        assert "agent.example.com/v1" in text, where
