"""Results and runs point at the moved models; Monitor and Evaluation now live in monitors (state only)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('monitors', '0001_initial'),
        ('runs', '0002_recover_runs_schedule'),
        ('teams', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.AlterField(
                    model_name='checkresult',
                    name='evaluation',
                    field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='results', to='monitors.evaluation'),
                ),
                migrations.RemoveField(
                    model_name='monitor',
                    name='agent',
                ),
                migrations.RemoveField(
                    model_name='monitor',
                    name='checks',
                ),
                migrations.RemoveField(
                    model_name='monitor',
                    name='created_by',
                ),
                migrations.AlterField(
                    model_name='checkresult',
                    name='monitor',
                    field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='results', to='monitors.monitor'),
                ),
                migrations.AlterField(
                    model_name='checkresult',
                    name='task',
                    field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='results', to='monitors.task'),
                ),
                migrations.AlterField(
                    model_name='run',
                    name='launched_by_token',
                    field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='runs', to='teams.apitoken'),
                ),
                migrations.DeleteModel(
                    name='Evaluation',
                ),
                migrations.DeleteModel(
                    name='Monitor',
                ),
            ],
        ),
    ]
