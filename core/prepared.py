"""Reads of one fixed shape that every request makes (its API token, session, user, teams), compiled by
the ORM once per process and database instead of once per request.

The ORM builds and compiles a query anew each time it runs one: ~700-1,000 Python calls for a lookup by
key, before the database sees it (bench/README.md "Fifth pass"). A `PreparedRead` asks the ORM once, with
stand-in values, for the SQL, the parameter list and the converters of a ``values_list()`` query, then
runs that SQL with the real values put where the stand-ins were and converts the rows the way the ORM
would (datetimes on SQLite, for one). Only ``str`` and ``int`` values are put in (a key, an id), which
the ORM passes to the database as they are.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

from django.db import connections
from django.db.models import Model, QuerySet

# Stand-ins: values no real key or id takes, each found once in the compiled parameters.
_STR_MARK = "\x00prepared-read-{}\x00"
_INT_MARK = -1_999_999_999  # within every integer column's range (PostgreSQL finds nothing out of it)


class PreparedRead:
    """``build(*values)`` (a ``values_list()`` QuerySet) compiled once per database alias; ``rows(*values)``
    is ``list(build(*values))`` as tuples, with the same SQL and one query."""

    def __init__(self, build: Callable[..., QuerySet], kinds: Sequence[type]):
        if any(kind not in (str, int) for kind in kinds):
            raise TypeError("a PreparedRead puts in str and int values only")
        self.build = build
        self.kinds = tuple(kinds)
        self._compiled: dict[str, tuple[str, list, list[int], list[tuple[int, list, Any]]]] = {}
        self._lock = threading.Lock()

    def _compile(self, alias: str):
        marks = [_STR_MARK.format(i) if kind is str else _INT_MARK - i for i, kind in enumerate(self.kinds)]
        compiler = self.build(*marks).query.get_compiler(using=alias)
        sql, params = compiler.as_sql()
        params = list(params)
        slots = []
        for mark in marks:
            found = [i for i, param in enumerate(params) if param == mark and type(param) is type(mark)]
            if len(found) != 1:
                raise ValueError(f"a PreparedRead's value must appear once in its query: {found}")
            slots.append(found[0])
        columns = [s[0] for s in compiler.select[: compiler.col_count]]
        converters = [(pos, convs, expr) for pos, (convs, expr) in compiler.get_converters(columns).items()]
        compiled = (sql, params, slots, converters)
        with self._lock:
            self._compiled[alias] = compiled
        return compiled

    def rows(self, *values, using: str) -> list[tuple]:
        for value, kind in zip(values, self.kinds, strict=True):
            if type(value) is not kind:
                raise TypeError(f"expected {kind.__name__}, got {type(value).__name__}")
        compiled = self._compiled.get(using) or self._compile(using)
        sql, params, slots, converters = compiled
        params = params.copy()
        for slot, value in zip(slots, values, strict=True):
            params[slot] = value
        connection = connections[using]
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            fetched = cursor.fetchall()
        if not converters:
            return [tuple(row) for row in fetched]
        out = []
        for row in fetched:
            row = list(row)
            for pos, convs, expression in converters:
                value = row[pos]
                for convert in convs:
                    value = convert(value, expression, connection)
                row[pos] = value
            out.append(tuple(row))
        return out


@cache
def concrete_attnames(model: type[Model]) -> tuple[str, ...]:
    """The model's concrete fields' attribute names, in the order ``Model.from_db`` takes them whole."""
    return tuple(field.attname for field in model._meta.concrete_fields)


def instance(model: type[Model], values: Sequence, using: str = "default") -> Model:
    """The instance the ORM builds from a row of ``concrete_attnames(model)`` (``Model.from_db``)."""
    return model.from_db(using, concrete_attnames(model), tuple(values))
