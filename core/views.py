"""Helpers the console's page views share: counting without multiplying joins, service errors on forms,
a list's rows drawn in Python, the 403 page for a refused write, and the server-error page."""

from __future__ import annotations

import logging

from django.db.models import Count, IntegerField, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.http import HttpRequest, HttpResponse, HttpResponseServerError
from django.middleware.csrf import get_token
from django.shortcuts import render
from django.template import loader
from django.utils.safestring import SafeString
from django.views.decorators.csrf import requires_csrf_token

from core.errors import DomainError, PermissionDenied

log = logging.getLogger(__name__)
BARE_500 = "<!doctype html><title>Server error</title><h1>Server error (500)</h1>"


def count_subquery(model, link: str, *, outer: str = "pk", **filters) -> Coalesce:
    """A correlated COUNT of `model` rows whose `link` is the outer row's `outer` (joins would multiply)."""
    rows = model.objects.filter(**{link: OuterRef(outer)}, **filters).order_by().values(link)
    return Coalesce(Subquery(rows.annotate(n=Count("pk")).values("n")[:1], output_field=IntegerField()), 0)


def apply_errors(form, exc: DomainError, *, aliases: dict[str, str] | None = None) -> None:
    """Put a service's field errors on a Django form: `nodes.2.name` lands on `nodes`, others on top."""
    aliases = aliases or {}
    for key, message in exc.errors.items():
        head, _, rest = key.partition(".")
        field = aliases.get(key, aliases.get(head, head))
        if field in form.fields:
            form.add_error(field, f"{rest}: {message}" if rest else message)
        else:
            form.add_error(None, message if key == "__all__" else f"{key}: {message}")


TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off"})


def parse_flag(raw: str) -> bool | None:
    """1/true/yes/on → True, 0/false/no/off → False (any case), blank → None; else ValueError."""
    word = raw.strip().lower()
    if not word:
        return None
    if word in TRUE_WORDS or word in FALSE_WORDS:
        return word in TRUE_WORDS
    raise ValueError(f"{raw[:40]!r} is not a boolean")


def flag_param(request: HttpRequest, name: str) -> tuple[bool, str]:
    """A yes/no query parameter of a page (`?archived=1`): (value, "") or (False, the reason it is bad).

    Absent or blank is False; a value parse_flag does not know is an error the page shows (with status
    400) instead of silently ignoring it.
    """
    raw = request.GET.get(name, "")
    try:
        return bool(parse_flag(raw)), ""
    except ValueError as exc:
        return False, f"{name}: {exc}; use 1 (yes) or 0 (no)"


def reverse_model(model, name: str):
    """The model behind `model`'s reverse relation `name` (e.g. `reverse_model(Agent, "runs")` is Run).

    A lower floor's page may show rows of a higher floor's app only this way: through the relation that
    app declares towards it (its related_name), never by importing it.
    """
    return model._meta.get_field(name).related_model


def count_related(model, name: str, *, outer: str = "pk", **filters) -> Coalesce:
    """A correlated COUNT of `model`'s reverse relation `name` (see count_subquery)."""
    relation = model._meta.get_field(name)
    return count_subquery(relation.related_model, relation.field.name, outer=outer, **filters)


def newest_related(model, name: str, **fields: str) -> dict[str, Subquery]:
    """Annotations of `model` rows from the newest row (by created_at, then id) of their reverse relation
    `name`: `annotation=field` for each of `fields` (e.g. `last_run_status="status"`)."""
    relation = model._meta.get_field(name)
    rows = relation.related_model.objects.filter(**{relation.field.name: OuterRef("pk")})
    rows = rows.order_by("-created_at", "-id")
    return {key: Subquery(rows.values(field)[:1]) for key, field in fields.items()}


def table_row(*cells: str, attrs: str = "", indent: int = 4, tail: int = 2) -> SafeString:
    """A list's `<tr>` drawn in Python (50 a page: the engine is slower) byte for byte as its template drew
    it: the `<tr>` `indent` spaces in, with `attrs` (each with its leading space); each cell (`<td…>…</td>`)
    on a line of its own, two spaces further in; then the `tail` spaces the template's loop wrote after it.

    The cells and attrs are HTML: the row functions escape every value they put in them (esc, trunc)."""
    pad = " " * indent
    cell_break = f"\n{pad}  "
    # mark_safe's result for a str, without its checks (a page calls this 50 times); the caller escaped
    # every value of the cells and attrs.
    return SafeString(f"\n{pad}<tr{attrs}>{cell_break}{cell_break.join(cells)}\n{pad}</tr>\n{' ' * tail}")


def forbidden(request: HttpRequest, message: str) -> HttpResponse:
    """403 page for a write the user's role does not allow (out-of-team objects are 404 instead)."""
    return render(request, "403.html", {"message": message}, status=403)


class RefusalMiddleware:
    """A page whose service refuses the user's write (core.errors.PermissionDenied, let out of the view)
    answers the 403 page with the service's reason: the one place pages turn a refusal into a response.

    A view catches core.errors.Rejected for its form, which a refusal is not: it is not a field's
    problem. The API answers its own refusals (core.api.exception_handler), before they could reach this.
    """

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, PermissionDenied):
            return forbidden(request, str(exception))
        return None


@requires_csrf_token
def server_error(request: HttpRequest, template_name: str = "500.html") -> HttpResponse:
    """handler500: the console's layout and navigation, rendered without a single query.

    The database may be what failed, so no context processor runs (they read teams) and the user is
    shown only if the request had already loaded it; anything going wrong here falls back to bare HTML.
    """
    try:
        context = {
            "request": request,
            "user": getattr(request, "_cached_user", None),  # loaded earlier by this request, or None
            "show_nav": True,
            "csrf_token": get_token(request),
        }
        return HttpResponseServerError(loader.get_template(template_name).render(context))
    except Exception:  # the error page itself must not fail
        log.exception("could not render %s", template_name)
        return HttpResponseServerError(BARE_500)
