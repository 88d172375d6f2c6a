"""Team and Membership (from agents), ApiToken and JudgeUsage (from evalconsole) move to this app.

State only: the tables keep their names and rows (db_table in each model's Meta).
"""

from django.db import migrations

from core.migration_ops import MoveModel


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("agents", "0002_agent_concurrency_window"),
        ("checks", "0001_initial"),
        ("evalconsole", "0002_judge_usage"),
        ("runs", "0002_recover_runs_schedule"),
    ]

    operations = [
        MoveModel(name="Team", from_app="agents", to_app="teams"),
        MoveModel(name="Membership", from_app="agents", to_app="teams"),
        MoveModel(name="ApiToken", from_app="evalconsole", to_app="teams"),
        MoveModel(name="JudgeUsage", from_app="evalconsole", to_app="teams"),
    ]
