"""core.prepared: a read compiled once answers what the ORM's own query answers, in one query."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.sessions.models import Session
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from core.prepared import PreparedRead, concrete_attnames, instance
from teams.models import Team

pytestmark = pytest.mark.django_db


def _team_by_slug(slug: str):
    return Team.objects.filter(slug=slug).values_list(*concrete_attnames(Team))


def test_rows_are_the_orms_rows_in_one_query_of_the_same_sql():
    first = Team.objects.create(name="First", slug="first")
    second = Team.objects.create(name="Second", slug="second")
    read = PreparedRead(_team_by_slug, (str,))
    for team in (first, second, first):  # compiled once, run with each value
        with CaptureQueriesContext(connection) as queries:
            rows = read.rows(team.slug, using="default")
        assert rows == list(_team_by_slug(team.slug))
        assert len(queries) == 1
    assert list(read._compiled) == ["default"]
    with CaptureQueriesContext(connection) as orm:
        list(_team_by_slug("first"))
    with CaptureQueriesContext(connection) as ours:
        read.rows("first", using="default")
    assert ours[0]["sql"] == orm[0]["sql"]
    assert read.rows("nobody", using="default") == []


def test_datetimes_come_back_converted_as_the_orm_gives_them():
    expires = timezone.now() + timedelta(days=1)
    Session.objects.create(session_key="k" * 32, session_data="data", expire_date=expires)
    read = PreparedRead(lambda k: Session.objects.filter(session_key=k).values_list("expire_date"), (str,))
    assert read.rows("k" * 32, using="default") == [(expires,)]
    assert read.rows("k" * 32, using="default") == list(Session.objects.values_list("expire_date"))


def test_int_values_are_put_in():
    team = Team.objects.create(name="T", slug="t")
    read = PreparedRead(lambda pk: Team.objects.filter(pk=pk).values_list("slug"), (int,))
    assert read.rows(team.pk, using="default") == [("t",)]
    assert read.rows(team.pk + 1000, using="default") == []


def test_instances_are_the_orms_instances():
    team = Team.objects.create(name="T", slug="t", judge_monthly_token_budget=5)
    row = PreparedRead(_team_by_slug, (str,)).rows("t", using="default")[0]
    built = instance(Team, row, "default")
    fetched = Team.objects.get(pk=team.pk)
    assert {k: v for k, v in vars(built).items() if k != "_state"} == {
        k: v for k, v in vars(fetched).items() if k != "_state"
    }
    assert (built._state.adding, built._state.db) == (False, "default")


def test_only_str_and_int_values_are_taken():
    with pytest.raises(TypeError):
        PreparedRead(_team_by_slug, (float,))
    read = PreparedRead(_team_by_slug, (str,))
    with pytest.raises(TypeError):
        read.rows(5, using="default")
    with pytest.raises(ValueError):
        read.rows("a", "b", using="default")


def test_a_value_the_query_does_not_use_is_refused():
    read = PreparedRead(lambda slug: Team.objects.values_list("slug"), (str,))
    with pytest.raises(ValueError, match="must appear once"):
        read.rows("t", using="default")
