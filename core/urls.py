"""URL helpers the apps' page URL modules share."""

from __future__ import annotations

import functools
from types import SimpleNamespace

from django.urls import URLPattern, get_script_prefix, get_urlconf, path, reverse


def object_pages(
    views,
    noun: str,
    *,
    list_route: str | None = "",
    detail_route: str = "",
    create: tuple[str, str] = ("new/", "create"),
    actions=("edit", "archive"),
) -> list[URLPattern]:
    """A kind of object's standard pages, each served by the view named like its URL (`agent-edit`:
    `views.agent_edit`): `<noun>-list` at `list_route` and the create page at `<list_route>new/`, named
    `<noun>-create` (`create` may name another route and name; neither page when list_route is None);
    `<noun>-detail` at `<detail_route><int:pk>/` and `<noun>-<action>` at `<detail_route><int:pk>/<action>/`
    for each of `actions`."""

    def page(route: str, suffix: str) -> URLPattern:
        name = f"{noun}-{suffix}"
        return path(route, getattr(views, name.replace("-", "_")), name=name)

    detail = f"{detail_route}<int:pk>/"
    create_route, create_name = create
    listing = []
    if list_route is not None:
        listing = [page(list_route, "list"), page(list_route + create_route, create_name)]
    return [*listing, page(detail, "detail"), *(page(f"{detail}{action}/", action) for action in actions)]


_PK = 7_293_015_864_201  # stands for the pk in a reversed URL; no real row has it


@functools.lru_cache(maxsize=1024)
def _url_parts(name: str, prefix: str, urlconf: str | None, app: str | None) -> tuple[str, str] | None:
    """The text around the one argument of ``name``'s URL, when every non-negative int reverses to
    exactly that text around its digits (not so for a converter that rewrites ints: then None)."""
    parts = reverse(name, args=[_PK], urlconf=urlconf, current_app=app).split(str(_PK))
    seven = reverse(name, args=[7], urlconf=urlconf, current_app=app)
    if len(parts) != 2 or seven != f"{parts[0]}7{parts[1]}":
        return None
    return parts[0], parts[1]


@functools.lru_cache(maxsize=1024)
def _url(name: str, prefix: str, urlconf: str | None, app: str | None) -> str:
    return reverse(name, urlconf=urlconf, current_app=app)


def pk_url(name: str, pk, current_app: str | None = None) -> str:
    """``reverse(name, args=[pk], current_app=current_app)`` for a URL whose one argument is an int (an
    ``<int:pk>``), from a template reversed once (per script prefix, URLconf and app): a list page asks it
    for every row of 50, and reverse() costs ~50 µs. Anything but a non-negative int goes to reverse()
    itself (and its NoReverseMatch)."""
    if type(pk) is int and pk >= 0:
        parts = _url_parts(name, get_script_prefix(), get_urlconf(), current_app)
        if parts is not None:
            return f"{parts[0]}{pk}{parts[1]}"
    return reverse(name, args=[pk], current_app=current_app)


def pk_url_former(name: str, current_app: str | None = None):
    """``pk_url(name, ·)`` for the rows of one page: the URL's template is looked up once (script prefix,
    URLconf, app), then each int pk is put between its two parts without a call to ``pk_url``. The
    callable returns what ``pk_url(name, pk, current_app)`` does for any pk (non-ints go to it)."""
    parts = _url_parts(name, get_script_prefix(), get_urlconf(), current_app)
    if parts is None:
        return functools.partial(pk_url, name, current_app=current_app)
    head, tail = parts

    def former(pk) -> str:
        if type(pk) is int and pk >= 0:
            return f"{head}{pk}{tail}"
        return pk_url(name, pk, current_app)

    return former


class RowUrls(SimpleNamespace):
    """The URL formers of one page's rows: ``RowUrls(run="runs:run-detail").run(pk)`` is
    ``pk_url("runs:run-detail", pk)``, each route's template looked up once (pk_url_former)."""

    def __init__(self, **routes: str) -> None:
        super().__init__(**{key: pk_url_former(route) for key, route in routes.items()})


def plain_url(name: str, current_app: str | None = None) -> str:
    """``reverse(name, current_app=current_app)`` of a URL without arguments, reversed once (per script
    prefix, URLconf and app): the layout of every page names a dozen of them."""
    return _url(name, get_script_prefix(), get_urlconf(), current_app)


class DetailPage:
    """A model mixin for an object with a page of its own: ``detail_route`` names the page's URL (e.g.
    "agents:agent-detail"), whose one argument is the pk."""

    detail_route: str

    def get_absolute_url(self) -> str:
        return pk_url(self.detail_route, self.pk)


class NamedPage(DetailPage):
    """A DetailPage shown by its ``name``."""

    def __str__(self) -> str:
        return self.name
