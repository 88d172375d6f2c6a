"""Schedule runs.tasks.recover_runs every minute (django-q2): a dead worker's samples run again."""

from django.db import migrations

NAME = "runs: recover runs"


def forward(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.update_or_create(
        name=NAME,
        defaults={"func": "runs.tasks.recover_runs", "schedule_type": "I", "minutes": 1, "repeats": -1},
    )


def backward(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.filter(name=NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0001_initial"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(forward, backward)]
