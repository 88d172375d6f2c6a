"""Team, Membership (from agents), ApiToken and JudgeUsage (from evalconsole) move to this app.

State only: the tables keep their names and rows (db_table in each model's Meta)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('agents', '0002_agent_concurrency_window'),
        ('evalconsole', '0002_judge_usage'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name='Team',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(max_length=100)),
                        ('slug', models.SlugField(max_length=60, unique=True)),
                        ('judge_monthly_token_budget', models.PositiveBigIntegerField(blank=True, help_text='AI judge tokens per calendar month; empty = the site default.', null=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                    ],
                    options={
                        'db_table': 'agents_team',
                        'ordering': ['name'],
                    },
                ),
                migrations.CreateModel(
                    name='ApiToken',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(max_length=100)),
                        ('key_id', models.CharField(help_text='Public lookup prefix.', max_length=16, unique=True)),
                        ('digest', models.CharField(editable=False, max_length=64)),
                        ('can_write', models.BooleanField(default=True)),
                        ('expires_at', models.DateTimeField(blank=True, null=True)),
                        ('last_used_at', models.DateTimeField(blank=True, null=True)),
                        ('revoked_at', models.DateTimeField(blank=True, null=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='api_tokens', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'db_table': 'evalconsole_apitoken',
                        'ordering': ['-created_at', '-id'],
                    },
                ),
                migrations.CreateModel(
                    name='Membership',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('role', models.CharField(choices=[('viewer', 'Viewer'), ('member', 'Member'), ('admin', 'Admin')], default='member', max_length=10)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to=settings.AUTH_USER_MODEL)),
                        ('team', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to='teams.team')),
                    ],
                    options={
                        'db_table': 'agents_membership',
                        'ordering': ['team__name', 'user__username'],
                        'constraints': [models.UniqueConstraint(fields=('team', 'user'), name='membership_unique_team_user')],
                    },
                ),
                migrations.CreateModel(
                    name='JudgeUsage',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('month', models.DateField(help_text='First day of the calendar month (UTC).')),
                        ('tokens_in', models.PositiveBigIntegerField(default=0)),
                        ('tokens_out', models.PositiveBigIntegerField(default=0)),
                        ('calls', models.PositiveIntegerField(default=0)),
                        ('updated_at', models.DateTimeField(auto_now=True)),
                        ('team', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='judge_usage', to='teams.team')),
                    ],
                    options={
                        'db_table': 'evalconsole_judgeusage',
                        'ordering': ['-month', 'team'],
                        'constraints': [models.UniqueConstraint(fields=('team', 'month'), name='judgeusage_unique_team_month')],
                    },
                ),
            ],
        ),
    ]
