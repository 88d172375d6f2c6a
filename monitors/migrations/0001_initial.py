"""Task (from agents), Monitor and Evaluation (from runs) move to this app.

State only: the tables keep their names and rows (db_table in each model's Meta)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('runs', '0002_recover_runs_schedule'),
        ('agents', '0003_teams_and_tasks_move_out'),
        ('checks', '0001_initial'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name='Monitor',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(max_length=200)),
                        ('sample_rate', models.DecimalField(decimal_places=2, default=10, help_text='Percent of tasks.', max_digits=5)),
                        ('active', models.BooleanField(default=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('agent', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='monitors', to='agents.agent')),
                        ('checks', models.ManyToManyField(blank=True, related_name='monitors', to='checks.check')),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'db_table': 'runs_monitor',
                        'ordering': ['name', 'id'],
                    },
                ),
                migrations.CreateModel(
                    name='Task',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('external_id', models.CharField(max_length=200)),
                        ('messages', models.JSONField(blank=True, default=list, help_text='The transcript: [{role, content}].')),
                        ('output', models.TextField(blank=True, default='')),
                        ('tool_calls', models.JSONField(blank=True, null=True)),
                        ('trace', models.JSONField(blank=True, null=True)),
                        ('metadata', models.JSONField(blank=True, default=dict)),
                        ('latency_ms', models.FloatField(blank=True, null=True)),
                        ('completed_at', models.DateTimeField()),
                        ('ingested_at', models.DateTimeField(auto_now_add=True)),
                        ('sampled', models.BooleanField(default=False, help_text="Picked by a monitor's sample rate.")),
                        ('has_failures', models.BooleanField(default=False)),
                        ('agent', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='tasks', to='agents.agent')),
                    ],
                    options={
                        'db_table': 'agents_task',
                        'ordering': ['-completed_at', '-id'],
                    },
                ),
                migrations.CreateModel(
                    name='Evaluation',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(blank=True, max_length=200)),
                        ('status', models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('completed', 'Completed')], default='queued', max_length=10)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('finished_at', models.DateTimeField(blank=True, null=True)),
                        ('agent', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='evaluations', to='agents.agent')),
                        ('check_versions', models.ManyToManyField(related_name='evaluations', to='checks.checkversion')),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL)),
                        ('tasks', models.ManyToManyField(related_name='evaluations', to='monitors.task')),
                    ],
                    options={
                        'db_table': 'runs_evaluation',
                        'ordering': ['-created_at', '-id'],
                    },
                ),
                migrations.AddIndex(
                    model_name='task',
                    index=models.Index(fields=['agent', '-completed_at'], name='task_agent_completed'),
                ),
                migrations.AddIndex(
                    model_name='task',
                    index=models.Index(fields=['completed_at'], name='task_completed'),
                ),
                migrations.AddConstraint(
                    model_name='task',
                    constraint=models.UniqueConstraint(fields=('agent', 'external_id'), name='task_unique_agent_external_id'),
                ),
            ],
        ),
    ]
