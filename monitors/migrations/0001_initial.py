"""Task (from agents), Monitor and Evaluation (from runs) move to this app.

State only: the tables keep their names and rows (db_table in each model's Meta).
"""

from django.db import migrations

from core.migration_ops import MoveModel


class Migration(migrations.Migration):
    initial = True

    dependencies = [("teams", "0001_initial")]

    operations = [
        MoveModel(name="Task", from_app="agents", to_app="monitors"),
        MoveModel(name="Monitor", from_app="runs", to_app="monitors"),
        MoveModel(name="Evaluation", from_app="runs", to_app="monitors"),
    ]
