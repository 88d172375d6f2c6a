"""One URL serves a whole page and its HTMX fragments (STYLE.md 4).

A fragment is a ``{% partialdef name inline %}`` block of the page template, named like the id of
the element it renders; HTMX requests name it through ``HX-Target`` or the view passes it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

HTMX_STOP_POLLING = 286


def is_fragment_request(request: HttpRequest) -> bool:
    htmx = getattr(request, "htmx", None)
    return bool(htmx) and not htmx.boosted


def target_fragment(request: HttpRequest, allowed: Iterable[str], default: str | None = None) -> str | None:
    """The fragment an HTMX request asks for (its HX-Target id) if the page has it, else `default`."""
    if not is_fragment_request(request):
        return None
    target = request.htmx.target
    return target if target in set(allowed) else default


def page_or_fragment(
    request: HttpRequest,
    template: str,
    fragment: str | None,
    context: Mapping[str, Any],
    *,
    status: int = 200,
) -> HttpResponse:
    """Render ``template#fragment`` for an HTMX (non-boosted) request, else the whole page."""
    if fragment and is_fragment_request(request):
        return render(request, f"{template}#{fragment}", context, status=status)
    return render(request, template, context, status=status)
