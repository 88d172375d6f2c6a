# A tool's state is stored in pieces (worlds.pieces): a row per path, so a call that changes one record
# writes that record. Every existing row becomes the piece at the root path ``[]`` holding the whole
# state (a leaf), exactly what the state was; the first call that changes it splits it. Reversible
# while every tool is still one root piece (a world served after this migration may have been split:
# going back deletes nothing but would leave several rows per tool, so reversing refuses then).

from django.db import migrations, models


def _refuse_split(apps, schema_editor):
    rows = apps.get_model("worlds", "WorldToolState").objects.using(schema_editor.connection.alias)
    if rows.exclude(path="[]").exists():
        raise RuntimeError(
            "worlds: some tool states are stored in pieces; run those worlds' trials to the end and "
            "delete them (or keep this migration) before going back"
        )


class Migration(migrations.Migration):
    dependencies = [
        ("worlds", "0004_payload_json"),
    ]

    operations = [
        migrations.AddField(
            model_name="worldtoolstate",
            name="path",
            field=models.TextField(default="[]"),
        ),
        migrations.AddField(
            model_name="worldtoolstate",
            name="shape",
            field=models.CharField(blank=True, default="", max_length=1),
        ),
        migrations.RemoveConstraint(
            model_name="worldtoolstate",
            name="worldtoolstate_unique_tool",
        ),
        migrations.AddConstraint(
            model_name="worldtoolstate",
            constraint=models.UniqueConstraint(
                fields=("world", "tool", "path"), name="worldtoolstate_unique_path"
            ),
        ),
        migrations.AlterModelOptions(
            name="worldtoolstate",
            options={"ordering": ["world", "tool", "path"]},
        ),
        # Last, so that going back checks first.
        migrations.RunPython(migrations.RunPython.noop, _refuse_split),
    ]
