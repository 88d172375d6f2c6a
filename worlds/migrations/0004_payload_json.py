# A world's trace entries / events and its tool states are written whole and read whole, never queried
# into: on PostgreSQL they are stored as ``json`` (the text as sent, only validated) instead of
# ``jsonb`` (parsed and normalised on every write). Every row is kept (``USING data::json``); the
# reverse casts back. SQLite: nothing to do (a JSONField is text there either way).

from django.db import migrations

import worlds.fields

TABLES = ("worlds_worldentry", "worlds_worldtoolstate")


def _retype(kind: str):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        for table in TABLES:
            sql = f'ALTER TABLE "{table}" ALTER COLUMN "data" TYPE {kind} USING "data"::{kind}'
            schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("worlds", "0003_world_stamp"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="worldentry",
                    name="data",
                    field=worlds.fields.TextJSONField(default=dict),
                ),
                migrations.AlterField(
                    model_name="worldtoolstate",
                    name="data",
                    field=worlds.fields.TextJSONField(default=dict),
                ),
            ],
            database_operations=[migrations.RunPython(_retype("json"), _retype("jsonb"))],
        ),
    ]
