"""Agents point at teams.Team; Team, Membership and Task start moving out (state only)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('agents', '0002_agent_concurrency_window'),
        ('teams', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.RemoveConstraint(
                    model_name='membership',
                    name='membership_unique_team_user',
                ),
                migrations.RemoveIndex(
                    model_name='task',
                    name='task_agent_completed',
                ),
                migrations.RemoveIndex(
                    model_name='task',
                    name='task_completed',
                ),
                migrations.RemoveConstraint(
                    model_name='task',
                    name='task_unique_agent_external_id',
                ),
                migrations.AlterField(
                    model_name='agent',
                    name='team',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='agents', to='teams.team'),
                ),
                migrations.RemoveField(
                    model_name='membership',
                    name='team',
                ),
                migrations.RemoveField(
                    model_name='membership',
                    name='user',
                ),
                migrations.RemoveField(
                    model_name='task',
                    name='agent',
                ),
            ],
        ),
    ]
