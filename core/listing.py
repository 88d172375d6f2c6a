"""Sortable, searchable list pages: `?sort=` from an allow-list and `?q=` (STYLE.md 4).

A page declares its columns (`{"agent": (Lower("agent__name"),), ...}`: field names or
expressions) and a default (`"-launched"`: a leading `-` sorts descending). `parse_sort` never
raises: an unknown key falls back to the default with a message to show. The primary key always
breaks ties, in the same direction, so pages are stable. `parse_search` bounds `?q=` and refuses
characters no database accepts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from django.core import paginator
from django.db.models import OrderBy, QuerySet
from django.db.models.expressions import Combinable
from django.http import QueryDict

MAX_SEARCH = 100


@dataclass(frozen=True)
class Sort:
    key: str
    descending: bool
    columns: Mapping[str, tuple[str | Combinable, ...]]
    error: str = ""  # why the asked sort was ignored

    @property
    def param(self) -> str:
        return f"-{self.key}" if self.descending else self.key

    def order_by(self, *first: str) -> list[str | OrderBy]:
        """`first` (e.g. a grouping field), then the column's fields, then the primary key."""
        sign = "-" if self.descending else ""
        fields = [
            f"{sign}{field}" if isinstance(field, str) else (field.desc() if self.descending else field.asc())
            for field in self.columns[self.key]
        ]
        return [*first, *fields, f"{sign}pk"]

    def headers(self, query: QueryDict) -> dict[str, dict[str, str]]:
        """Per column: the link that sorts by it (ascending, or flipped if it is the current one) and
        its `aria-sort` value, keeping the page's other parameters but not its page number."""
        rest = query.copy()
        for name in ("sort", "page"):
            rest.pop(name, None)
        out = {}
        for key in self.columns:
            current = key == self.key
            rest["sort"] = f"-{key}" if current and not self.descending else key
            out[key] = {
                "href": f"?{rest.urlencode()}",
                "aria": ("descending" if self.descending else "ascending") if current else "none",
                "arrow": ("↓" if self.descending else "↑") if current else "",
            }
        return out


def parse_sort(raw: str | None, columns: Mapping[str, tuple[str | Combinable, ...]], default: str) -> Sort:
    """`?sort=name` or `?sort=-name` among `columns`; anything else is the default, with a message."""

    def make(param: str, error: str = "") -> Sort:
        key = param.removeprefix("-")
        return Sort(key=key, descending=param.startswith("-"), columns=columns, error=error)

    raw = (raw or "").strip()
    if not raw:
        return make(default)
    if raw.removeprefix("-") in columns:
        return make(raw)
    shown = raw[:30] + ("…" if len(raw) > 30 else "")
    return make(default, f"Cannot sort by {shown!r}: sorted by {default} (one of {', '.join(columns)}).")


def parse_search(raw: str | None) -> tuple[str, str]:
    """(the search text, or "" ; a message when it was refused)."""
    text = (raw or "").strip()
    if "\x00" in text:
        return "", "The search cannot contain NUL characters."
    if len(text) > MAX_SEARCH:
        return "", f"Search for at most {MAX_SEARCH} characters (this was {len(text)})."
    return text, ""


class Paginator(paginator.Paginator):
    """Django's Paginator, with page 1 of a QuerySet read before its count: when it holds fewer rows than
    a page (and its orphans) they are all the rows, so the count is their number and no COUNT query runs
    (~500-1,000 calls a request). A full first page is counted as before; its rows are not read again."""

    def get_page(self, number):
        """Django's: page 1 for a number that is not a whole number, the last page for one out of range;
        page 1 without counting first."""
        try:
            self._validate_number(number, 1)
        except paginator.PageNotAnInteger:
            pass
        except paginator.EmptyPage:  # not 1: Django's (which counts)
            return super().get_page(number)
        return self.page(1)

    def page(self, number):
        if "count" in self.__dict__ or not isinstance(self.object_list, QuerySet):
            return super().page(number)
        try:
            first = self._validate_number(number, 1) == 1
        except paginator.InvalidPage:
            first = False
        if not first:
            return super().page(number)
        room = self.per_page + self.orphans
        rows = list(self.object_list[:room])
        if not rows and not self.allow_empty_first_page:
            return super().page(number)
        if len(rows) < room:
            self.count = len(rows)  # the cached_property's value
        elif self.count > room:
            rows = rows[: self.per_page]
        return self._get_page(rows, 1, self)
