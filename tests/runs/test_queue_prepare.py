"""The hot path's column preparation (runs.queue._preparer) gives what each field's own
get_db_prep_save gives, so a sample and its check results are stored exactly as the ORM would."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.utils.functional import lazy

from runs import queue
from runs.models import CheckResult, Sample

pytestmark = pytest.mark.django_db

VALUES = [
    None,
    "",
    "text with é and \u2028",
    {"role": "user", "content": "Where is EC-1042? ✓", "n": [1, 2.5, True, None]},
    [],
    [{"name": "lookup_order", "input": {"orderId": "EC-1042"}}],
    {},
    3,
    2.5,
    True,
    False,
    Sample.Status.DONE,
    lazy(lambda: "lazy text", str)(),
    datetime(2026, 12, 4, 18, 0, tzinfo=UTC),
]


def _same(fast, slow) -> bool:
    if type(fast) is not type(slow):
        return False
    if hasattr(slow, "obj"):  # psycopg's Jsonb wrapper: what it wraps and how it dumps it
        return fast.obj == slow.obj and fast.dumps(fast.obj) == slow.dumps(slow.obj)
    return fast == slow


@pytest.mark.parametrize(
    "field",
    [Sample._meta.get_field(name) for name in queue._FINISHED_FIELDS]
    + [CheckResult._meta.get_field(name) for name in queue._RESULT_FIELDS],
    ids=lambda field: f"{field.model.__name__}.{field.name}",
)
def test_a_prepared_value_is_the_fields_own(field):
    db = queue._connection()
    prepare = queue._preparer(field, db)
    for value in VALUES:
        try:
            slow = field.get_db_prep_save(value, connection)
            if hasattr(slow, "obj"):  # psycopg's Jsonb dumps when the statement runs
                slow.dumps(slow.obj)
        except (TypeError, ValueError, AttributeError, ValidationError):  # not a value this column takes
            continue
        assert _same(prepare(value), slow), (field.name, value)
