"""Helpers the console's page views share: counting without multiplying joins, service errors on forms."""

from __future__ import annotations

from django.db.models import Count, IntegerField, OuterRef, Subquery
from django.db.models.functions import Coalesce

from core.errors import DomainError


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
