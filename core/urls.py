"""URL helpers the apps' page URL modules share."""

from __future__ import annotations

from django.urls import URLPattern, path


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
