# A world's trace entries and tool-state pieces lose the index Django gives every foreign key (and, on
# PostgreSQL, its varchar_pattern_ops twin): the unique (world, kind, seq) and (world, tool, path)
# indexes start with the world and serve every lookup by it, so the two others only cost each call's
# inserts their upkeep (bench/README.md "Per tool call: a margin on PostgreSQL"). Reversible.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("worlds", "0005_tool_state_pieces"),
    ]

    operations = [
        migrations.AlterField(
            model_name="worldentry",
            name="world",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="entries",
                to="worlds.world",
            ),
        ),
        migrations.AlterField(
            model_name="worldtoolstate",
            name="world",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="tool_states",
                to="worlds.world",
            ),
        ),
    ]
