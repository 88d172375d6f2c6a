"""Query-count assertions for list pages and endpoints: the queries must not grow with the rows."""

from __future__ import annotations

from collections.abc import Callable

from django.db import connection
from django.test.utils import CaptureQueriesContext


def query_count(fetch: Callable[[], object]) -> int:
    """How many queries ``fetch()`` runs (``fetch`` asserts its own answer)."""
    with CaptureQueriesContext(connection) as ctx:
        fetch()
    return len(ctx)


def assert_queries_do_not_grow(fetch: Callable[[], object], grow: Callable[[], object]) -> None:
    """``fetch()`` runs as many queries after ``grow()`` added rows as before. One unmeasured ``fetch()``
    first: a token's first use of the day writes its ``last_used_at`` once."""
    fetch()
    before = query_count(fetch)
    grow()
    after = query_count(fetch)
    assert after == before, f"{before} queries before the rows were added, {after} after"
