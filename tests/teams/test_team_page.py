"""The team page (URL name ``team-detail``) and ``set_judge_budget``: usage shown, admins edit the budget."""

from __future__ import annotations

import pytest
from django.urls import reverse

from core.errors import PermissionDenied, ValidationFailed
from teams.budget import record_judge_usage
from teams.services import set_judge_budget

pytestmark = pytest.mark.django_db


def test_urls():
    assert reverse("team-detail") == "/team/"
    assert reverse("team-detail", args=[7]) == "/team/7/"


def test_page_shows_this_months_usage_and_the_default_budget(client, admin_user, team, settings):
    settings.EVALCONSOLE_JUDGE_MONTHLY_TOKEN_BUDGET = 200_000
    record_judge_usage(team_id=team.pk, tokens_in=12_000, tokens_out=345)
    client.force_login(admin_user)
    response = client.get(reverse("team-detail"))
    assert response.status_code == 200
    html = response.content.decode()
    assert team.name in html
    assert 'id="judge-used">12,345<' in html
    assert 'id="judge-budget">200,000<' in html and "(site default)" in html
    assert 'id="judge-remaining">187,655<' in html
    assert 'value="6"' in html  # meter: 6 % used
    assert 'id="judge-budget-form"' in html
    assert client.get(reverse("team-detail", args=[team.pk])).status_code == 200


def test_admin_sets_and_clears_the_budget(client, admin_user, team):
    client.force_login(admin_user)
    response = client.post(reverse("team-detail"), {"judge_monthly_token_budget": "50000"})
    assert response.status_code == 302
    team.refresh_from_db()
    assert team.judge_monthly_token_budget == 50_000
    html = client.get(reverse("team-detail")).content.decode()
    assert 'id="judge-budget">50,000<' in html and "(site default)" not in html
    client.post(reverse("team-detail"), {"judge_monthly_token_budget": ""})
    team.refresh_from_db()
    assert team.judge_monthly_token_budget is None


def test_invalid_budget_names_the_field(client, admin_user, team):
    client.force_login(admin_user)
    response = client.post(reverse("team-detail"), {"judge_monthly_token_budget": "-5"})
    assert response.status_code == 200
    assert "judge_monthly_token_budget" in response.context["form"].errors
    assert 'id="budget-errors"' in response.content.decode()
    team.refresh_from_db()
    assert team.judge_monthly_token_budget is None


def test_members_see_usage_but_cannot_edit(client, member, team):
    client.force_login(member)
    response = client.get(reverse("team-detail"))
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="judge-budget-form"' not in html and "Only team admins can change the budget." in html
    response = client.post(reverse("team-detail"), {"judge_monthly_token_budget": "1"})
    assert response.status_code == 403
    team.refresh_from_db()
    assert team.judge_monthly_token_budget is None


def test_other_teams_are_404(client, outsider, team):
    client.force_login(outsider)
    assert client.get(reverse("team-detail", args=[team.pk])).status_code == 404
    response = client.post(reverse("team-detail", args=[team.pk]), {"judge_monthly_token_budget": "1"})
    assert response.status_code == 404


def test_anonymous_is_sent_to_login(client):
    response = client.get(reverse("team-detail"))
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_service_rules(team, admin_user, member):
    assert set_judge_budget(team=team, by=admin_user, tokens=10).judge_monthly_token_budget == 10
    with pytest.raises(PermissionDenied):
        set_judge_budget(team=team, by=member, tokens=10)
    for bad in (-1, 10**13, "100", 1.5, True):
        with pytest.raises(ValidationFailed) as caught:
            set_judge_budget(team=team, by=admin_user, tokens=bad)
        assert list(caught.value.errors) == ["judge_monthly_token_budget"]
    assert set_judge_budget(team=team, by=None, tokens=None).judge_monthly_token_budget is None
