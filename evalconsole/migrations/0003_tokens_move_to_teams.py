"""ApiToken and JudgeUsage start moving to teams (state only)."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('evalconsole', '0002_judge_usage'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.RemoveField(
                    model_name='apitoken',
                    name='user',
                ),
                migrations.RemoveConstraint(
                    model_name='judgeusage',
                    name='judgeusage_unique_team_month',
                ),
            ],
        ),
    ]
