"""Team, Membership and Task now live in teams and monitors (state only: no table is dropped)."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('agents', '0003_teams_and_tasks_move_out'),
        ('evalconsole', '0004_forget_moved_models'),
        ('runs', '0003_monitors_move_out'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.DeleteModel(
                    name='Team',
                ),
                migrations.DeleteModel(
                    name='Membership',
                ),
                migrations.DeleteModel(
                    name='Task',
                ),
            ],
        ),
    ]
