"""A list that names no filter (only page and page_size) skips building its FilterSet's form: what it
applies instead (``ListFilterSet.unfiltered``) is what the FilterSet itself does with no data."""

from __future__ import annotations

import pytest
from django.test import RequestFactory
from rest_framework.request import Request

from core.api import ListFilterSet
from evalconsole.api_urls import router

pytestmark = pytest.mark.django_db

LISTS = sorted(
    {
        (prefix, viewset)
        for prefix, viewset, _ in router.registry
        if isinstance(getattr(viewset, "filterset_class", None), type)
        and issubclass(viewset.filterset_class, ListFilterSet)
    },
    key=lambda pair: pair[0],
)


def test_every_filtered_list_is_covered():
    assert {prefix for prefix, _ in LISTS} >= {"agents", "checks", "test-sets", "tests", "runs", "scenes"}


@pytest.mark.parametrize(("prefix", "viewset"), LISTS, ids=[prefix for prefix, _ in LISTS])
def test_no_filter_named_is_what_the_filterset_does_with_no_data(prefix, viewset, member, library):
    request = RequestFactory().get(f"/api/v1/{prefix}/", {"page": "1", "page_size": "5"})
    request = Request(request)
    request.user = member
    view = viewset(action="list", request=request, format_kwarg=None, kwargs={})
    queryset = view.get_queryset()
    filters = viewset.filterset_class(data={}, queryset=queryset, request=view.request)
    assert filters.is_valid()
    shortcut = viewset.filterset_class.unfiltered(queryset)
    assert str(shortcut.query) == str(filters.qs.query)
    assert list(shortcut) == list(filters.qs)


@pytest.mark.parametrize("query", ["", "?page=1", "?page_size=2", "?archived=false", "?archived=true"])
def test_the_lists_answer_as_their_filters_say(query, api, library, member, admin_user):
    from checks.services import archive_test, create_test

    gone = create_test(test_set=library["test_set"], by=member, name="Gone", scenarios=[{"input": "x"}])
    archive_test(test=gone, by=admin_user)
    names = [row["name"] for row in api.get("member", f"/api/v1/tests/{query}").json()["results"]]
    assert ("Gone" in names) is (query == "?archived=true")
    assert names
