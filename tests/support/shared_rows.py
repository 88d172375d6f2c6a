"""Rows made once for all the tests of a module, each test still seeing them exactly as made.

pytest-django wraps every ``db`` test in a transaction that it rolls back. ``shared_rows`` opens one more
transaction around them, for the module: the rows ``build()`` makes in it are there for every test (whose
own transaction becomes a savepoint inside it, rolled back after the test as before), and it is rolled
back after the module's last test. For many cases over the same objects (a matrix of endpoints ×
personas) this makes the objects once instead of once per case. Not for ``transactional_db`` or
``live_server`` tests: they flush the tables, and another process cannot see uncommitted rows.

    @pytest.fixture(scope="module")
    def world(django_db_setup, django_db_blocker):
        with shared_rows(django_db_blocker, build_the_objects) as objects:
            yield objects
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator


@contextlib.contextmanager
def shared_rows[T](django_db_blocker, build: Callable[[], T]) -> Iterator[T]:
    """``build()``'s return value, its rows made in a transaction rolled back when the block ends."""
    from django.db import transaction

    atomic = transaction.atomic()
    with django_db_blocker.unblock():
        atomic.__enter__()
        try:
            value = build()
        except BaseException:
            transaction.set_rollback(True)
            atomic.__exit__(None, None, None)
            raise
    try:
        yield value
    finally:
        with django_db_blocker.unblock():
            transaction.set_rollback(True)
            atomic.__exit__(None, None, None)
