"""Each request's own reads (its API token and user, its session, its user, the user's teams) are the
ORM's answers, read through queries compiled once per process (core.prepared)."""

from __future__ import annotations

import re
from datetime import timedelta
from unittest import mock

import pytest
from django.contrib import auth
from django.contrib.auth import backends, get_user_model
from django.contrib.sessions.models import Session
from django.db import connection
from django.test import Client, RequestFactory
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from core.auth import ModelBackend
from core.sessions import SessionStore
from teams import services
from teams.authentication import token_with_user
from teams.middleware import _user_teams
from teams.models import ApiToken, Team
from tests import factories

pytestmark = pytest.mark.django_db


def _fields(obj) -> dict:
    return {k: v for k, v in vars(obj).items() if k != "_state"}


def test_the_token_and_its_user_are_the_orms_in_one_query(member):
    issued = services.issue_token(user=member, name="CI")
    with CaptureQueriesContext(connection) as queries:
        token = token_with_user(issued.token.key_id)
        user = token.user  # loaded with the token
    assert len(queries) == 1
    orm = ApiToken.objects.select_related("user").get(pk=issued.token.pk)
    assert _fields(token) == _fields(orm) and _fields(user) == _fields(orm.user)
    assert token_with_user("nosuchkey") is None


def test_the_session_is_djangos_while_it_lasts(member):
    client = Client()
    client.force_login(member)
    key = client.session.session_key
    store = SessionStore(key)
    assert store.load() == Session.objects.get(pk=key).get_decoded()
    assert store.session_key == key
    Session.objects.filter(pk=key).update(expire_date=timezone.now() - timedelta(seconds=1))
    expired = SessionStore(key)
    assert expired.load() == {} and expired.session_key is None  # as Django's store: no such session
    unknown = SessionStore("x" * 32)
    assert unknown.load() == {} and unknown.session_key is None
    assert SessionStore()._get_session_from_db() is None  # no key: Django's own read


def test_pages_load_the_session_and_the_user_in_two_queries(member):
    client = Client()
    client.force_login(member)
    request = RequestFactory().get("/")
    request.session = SessionStore(client.session.session_key)
    with CaptureQueriesContext(connection) as queries:
        user = auth.get_user(request)
    assert user == member and len(queries) == 2  # the session, the user
    assert _fields(user) == _fields(get_user_model().objects.get(pk=member.pk))


def test_the_backend_reads_djangos_user():
    backend = ModelBackend()
    user = factories.user("reader")
    assert _fields(backend.get_user(user.pk)) == _fields(backends.ModelBackend().get_user(user.pk))
    assert backend.get_user(str(user.pk)) == user  # not an int: Django's own read
    assert backend.get_user(user.pk + 1000) is None
    get_user_model().objects.filter(pk=user.pk).update(is_active=False)
    assert backend.get_user(user.pk) is None


def test_a_session_of_djangos_own_backend_still_works(member):
    client = Client()
    client.force_login(member, backend="django.contrib.auth.backends.ModelBackend")
    response = client.get("/tokens/")
    assert response.status_code == 200 and response.wsgi_request.user == member


def test_a_wrong_password_is_checked_once():
    user = factories.user("pw")
    user.set_password("right-password")
    user.save()
    with mock.patch.object(get_user_model(), "check_password", autospec=True, return_value=False) as check:
        assert auth.authenticate(username="pw", password="wrong") is None
    assert check.call_count == 1  # not again by Django's own backend, listed after ours
    assert auth.authenticate(username="pw", password="right-password") == user
    assert auth.authenticate(username="pw") is None  # no password: nothing checked, no error


def test_the_teams_are_the_orms_in_the_switchers_order(member, team):
    later = factories.team("Aardvark")
    services.add_member(team=later, user=member, role="viewer")
    Team.objects.create(name="Not mine", slug="not-mine")
    request = RequestFactory().get("/")
    request.user = member
    with CaptureQueriesContext(connection) as queries:
        teams = _user_teams(request)
    assert len(queries) == 1
    expected = list(Team.objects.visible_to(member).order_by("name", "id"))
    assert [_fields(t) for t in teams] == [_fields(t) for t in expected]
    assert [t.name for t in teams] == ["Aardvark", "Acme"]
    request.user = auth.models.AnonymousUser()
    assert _user_teams(request) == []


def test_the_membership_is_the_orms_in_one_query_of_the_same_sql(member, outsider, team):
    from teams.access import membership
    from teams.models import Membership

    with CaptureQueriesContext(connection) as ours:
        found = membership(member, team)
    with CaptureQueriesContext(connection) as orm:
        expected = Membership.objects.filter(team=team, user=member).first()
    assert _fields(found) == _fields(expected) and found.role == "member"
    unaliased = [re.sub(r' AS "\w+"', "", q["sql"]) for q in ours]  # values_list names its columns
    assert unaliased == [q["sql"] for q in orm]
    assert membership(outsider, team) is None
    assert membership(auth.models.AnonymousUser(), team) is None and membership(None, team) is None
