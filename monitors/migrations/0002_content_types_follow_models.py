"""Content types (and so admin permissions and log entries) follow the models that moved apps."""

from django.db import migrations

MOVED = [
    ("agents", "team", "teams"),
    ("agents", "membership", "teams"),
    ("evalconsole", "apitoken", "teams"),
    ("evalconsole", "judgeusage", "teams"),
    ("agents", "task", "monitors"),
    ("runs", "monitor", "monitors"),
    ("runs", "evaluation", "monitors"),
]


def move(apps, schema_editor, *, backwards=False):
    ContentType = apps.get_model("contenttypes", "ContentType")
    db = schema_editor.connection.alias
    for old_app, model, new_app in MOVED:
        src, dst = (new_app, old_app) if backwards else (old_app, new_app)
        if ContentType.objects.using(db).filter(app_label=dst, model=model).exists():
            continue  # already there (post_migrate made it on a database that never had the old one)
        ContentType.objects.using(db).filter(app_label=src, model=model).update(app_label=dst)


def forward(apps, schema_editor):
    move(apps, schema_editor)


def backward(apps, schema_editor):
    move(apps, schema_editor, backwards=True)


class Migration(migrations.Migration):
    dependencies = [
        ("monitors", "0001_initial"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(forward, backward)]
