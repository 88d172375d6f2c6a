"""core.listing.Paginator: Django's pages, without a COUNT query for a first page that is not full."""

from __future__ import annotations

import pytest
from django.core import paginator as django_paginator
from django.db import connection
from django.test.utils import CaptureQueriesContext

from core.listing import Paginator
from teams.models import Team

pytestmark = pytest.mark.django_db


def _teams(n: int):
    Team.objects.bulk_create(Team(name=f"T{i:02d}", slug=f"t{i:02d}") for i in range(n))
    return Team.objects.order_by("slug")


def _same_page(ours, theirs):
    assert list(ours) == list(theirs)
    assert (ours.number, ours.paginator.count, ours.paginator.num_pages) == (
        theirs.number,
        theirs.paginator.count,
        theirs.paginator.num_pages,
    )
    assert (ours.has_next(), ours.has_previous(), ours.start_index(), ours.end_index()) == (
        theirs.has_next(),
        theirs.has_previous(),
        theirs.start_index(),
        theirs.end_index(),
    )


@pytest.mark.parametrize("rows", [0, 1, 4])
def test_a_first_page_that_is_not_full_is_one_query(rows):
    teams = _teams(rows)
    with CaptureQueriesContext(connection) as queries:
        page = Paginator(teams, 5).page(1)
        assert page.paginator.count == rows
    assert len(queries) == 1 and "COUNT" not in queries[0]["sql"].upper()
    _same_page(page, django_paginator.Paginator(teams, 5).page(1))


@pytest.mark.parametrize(("rows", "per_page", "orphans"), [(5, 5, 0), (12, 5, 0), (7, 5, 2), (8, 5, 2)])
def test_a_full_first_page_is_counted(rows, per_page, orphans):
    teams = _teams(rows)
    with CaptureQueriesContext(connection) as queries:
        page = Paginator(teams, per_page, orphans=orphans).page("1")
        _ = list(page), page.paginator.num_pages
    assert len(queries) == 2  # the page's rows once, and the count
    _same_page(page, django_paginator.Paginator(teams, per_page, orphans=orphans).page("1"))


@pytest.mark.parametrize("number", [2, 3, "2"])
def test_later_pages_are_djangos(number):
    teams = _teams(12)
    _same_page(Paginator(teams, 5).page(number), django_paginator.Paginator(teams, 5).page(number))


@pytest.mark.parametrize("number", ["x", 0, 1.5, 9])
def test_a_bad_page_number_is_djangos_error(number):
    teams = _teams(3)
    with pytest.raises(django_paginator.InvalidPage) as ours:
        Paginator(teams, 5).page(number)
    with pytest.raises(django_paginator.InvalidPage) as theirs:
        django_paginator.Paginator(teams, 5).page(number)
    assert (type(ours.value), str(ours.value)) == (type(theirs.value), str(theirs.value))


def test_an_empty_list_without_an_empty_first_page_is_djangos_error():
    teams = _teams(0)
    with pytest.raises(django_paginator.EmptyPage):
        Paginator(teams, 5, allow_empty_first_page=False).page(1)


@pytest.mark.parametrize("number", [None, "", "x", 1, "1", 1.5, 0, -1, 2, 3, 99])
@pytest.mark.parametrize("rows", [0, 3, 12])
def test_get_page_is_djangos(number, rows):
    teams = _teams(rows)
    _same_page(Paginator(teams, 5).get_page(number), django_paginator.Paginator(teams, 5).get_page(number))


@pytest.mark.parametrize("number", [None, "x", 1])
def test_get_page_of_page_1_that_is_not_full_is_one_query(number):
    teams = _teams(3)
    with CaptureQueriesContext(connection) as queries:
        page = Paginator(teams, 5).get_page(number)
        _ = list(page), page.paginator.num_pages
    assert len(queries) == 1


def test_lists_are_djangos():
    teams = _teams(3)
    names = list(teams)
    _same_page(Paginator(names, 2).page(1), django_paginator.Paginator(names, 2).page(1))


def test_a_counted_paginator_reads_no_more_rows_first():
    teams = _teams(3)
    ours = Paginator(teams, 5)
    assert ours.count == 3
    with CaptureQueriesContext(connection) as queries:
        page = ours.page(1)
        list(page)
    assert len(queries) == 1
