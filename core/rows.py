"""List rows drawn from plain column values by a function written for the list.

A list endpoint of 50 rows whose serializer shows many fields (runs, samples, tests, review items,
agents) spends most of its time in model instances and DRF's per-field machinery (bench/README.md
"Serving"). Those lists read only the shown columns, as ``values_list`` tuples, and build each row's dict
by hand; the serializer stays the source of the OpenAPI schema and of every one-object body, and a test
holds each list's rows to it. The pieces those row functions share are here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from django.urls import NoReverseMatch
from rest_framework import serializers
from rest_framework.response import Response

from core.api import absolute_url, datetime_representer
from core.urls import pk_url_former


def datetime_text() -> Callable[[Any], Any]:
    """What a read-only DRF ``DateTimeField`` (default format, the current time zone) shows of a value, None
    as None (DRF's null): core.api's shortcut for the field, the time zone looked up once per list."""
    return datetime_representer(serializers.DateTimeField(read_only=True))


def page_urls(request, route: str) -> Callable[[int], str | None]:
    """pk → the absolute URL of the object's page, as ``pk_url(route, pk)`` made absolute by
    ``core.api.absolute_url`` gives it (a serializer's ``url`` field), the route's template looked up once
    per list (``core.urls.pk_url_former``); None for every pk when the pages are not installed
    (NoReverseMatch). Without a request, the path."""
    try:
        path_of = pk_url_former(route)
    except NoReverseMatch:
        return lambda pk: None
    if request is None:
        return path_of
    return lambda pk: absolute_url(request, path_of(pk))


def related_rows(
    page: Sequence[tuple], queryset, link: str, columns: Sequence[str], key: int = 0
) -> dict[Any, list]:
    """The rows of ``queryset`` whose foreign key ``link`` (its name: ``"sample"``) is the value at ``key``
    of a tuple of ``page`` (None: no related rows), as ``columns`` tuples, grouped by that value in the
    queryset's order: every value of the page has its list (an empty one without rows). One query, none
    for a page without values; like core.api.attach_rows, for a page of tuples instead of objects."""
    groups: dict[Any, list[tuple]] = {row[key]: [] for row in page if row[key] is not None}
    if groups:
        # `<link>__pk__in`: the SQL of `<link>_id__in`, without normalizing each id as a related object
        for row in queryset.filter(**{f"{link}__pk__in": list(groups)}).values_list(link, *columns):
            groups[row[0]].append(row[1:])
    return groups


def plain_list(view, queryset, draw: Callable[[list], list[dict]]) -> Response:
    """A list view's response: ``queryset`` (tuples) paginated as the view paginates, each page drawn by
    ``draw`` (the page's tuples → the rows' dicts)."""
    page = view.paginate_queryset(queryset)
    if page is None:
        return Response(draw(list(queryset)))
    return view.get_paginated_response(draw(page))
