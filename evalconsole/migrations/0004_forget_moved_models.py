"""ApiToken and JudgeUsage now live in teams (state only: no table is dropped)."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('evalconsole', '0003_tokens_move_to_teams'),
        ('runs', '0003_monitors_move_out'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.DeleteModel(
                    name='ApiToken',
                ),
                migrations.DeleteModel(
                    name='JudgeUsage',
                ),
            ],
        ),
    ]
