"""A JSONField stored as PostgreSQL ``json`` (the text kept verbatim, only validated) instead of
``jsonb`` (parsed and normalised into a binary form on every write).

For write-once, read-whole payloads — a world's trace entries and events, its tool states — that
nothing queries into: ``json`` has no containment/key operators with indexes, no equality (so no
``=``, DISTINCT, GROUP BY or UNION on the column), but writing it costs the server a validation pass
instead of building jsonb. Read back, the ORM hands out the same Python values. SQLite: unchanged
(Django's JSONField is text there already). Either way Python None is stored as JSON null."""

from __future__ import annotations

from django.db import models


class TextJSONField(models.JSONField):
    def db_type(self, connection):
        if connection.vendor == "postgresql":
            return "json"
        return super().db_type(connection)

    def get_db_prep_save(self, value, connection):
        # The columns are NOT NULL and hold JSON values, null among them (a piece of a tool's state may
        # be a null): Python None is written as JSON null, never as SQL NULL (JSONField's default).
        if value is None:
            value = models.Value(None, output_field=self)
        return super().get_db_prep_save(value, connection)

    def get_db_prep_value(self, value, connection, prepared=False):
        value = super().get_db_prep_value(value, connection, prepared)
        if connection.vendor == "postgresql":
            try:  # psycopg 3: Django adapts as Jsonb (a jsonb-typed parameter); send it typed json
                from psycopg.types.json import Json, Jsonb
            except ImportError:  # pragma: no cover - psycopg2's Json adapter is untyped
                return value
            if isinstance(value, Jsonb):
                return Json(value.obj, dumps=value.dumps)
        return value

    def from_db_value(self, value, expression, connection):
        # psycopg 3 decodes ``json`` columns itself (Django registers a text loader for jsonb only).
        if value is not None and not isinstance(value, (str, bytes, bytearray)):
            return value
        return super().from_db_value(value, expression, connection)


__all__ = ["TextJSONField"]
