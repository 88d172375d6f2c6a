"""Retention: delete ingested tasks completed more than N days ago, in short batches.

    python manage.py delete_old_tasks                  # EVALCONSOLE_TASK_RETENTION_DAYS (default 90)
    python manage.py delete_old_tasks --days 30 --batch-size 2000 --dry-run

Each batch of ids is deleted in its own short transaction (with the tasks' check results), so the
database is never locked for long and running it from cron while tasks are ingested is safe.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from core.errors import ValidationFailed
from monitors import services as monitoring
from monitors.models import Task


class Command(BaseCommand):
    help = (
        "Delete tasks completed more than --days ago (default EVALCONSOLE_TASK_RETENTION_DAYS), in batches."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--days",
            type=int,
            default=None,
            help=f"Keep this many days (default {settings.EVALCONSOLE_TASK_RETENTION_DAYS}).",
        )
        parser.add_argument(
            "--batch-size", type=int, default=1000, help="Tasks per transaction (default 1000)."
        )
        parser.add_argument("--dry-run", action="store_true", help="Only count what would be deleted.")

    def handle(self, *args, days, batch_size, dry_run, **options):
        days = settings.EVALCONSOLE_TASK_RETENTION_DAYS if days is None else days
        if days < 1:
            raise CommandError("--days must be at least 1")
        if batch_size < 1:
            raise CommandError("--batch-size must be at least 1")
        if dry_run:
            cutoff = timezone.now() - timedelta(days=days)
            count = Task.objects.filter(completed_at__lt=cutoff).count()
            self.stdout.write(
                f"{count} task(s) completed before {cutoff:%Y-%m-%d %H:%M} UTC would be deleted."
            )
            return

        def progress(done: int) -> None:
            if options.get("verbosity", 1) >= 2:
                self.stdout.write(f"  {done} deleted so far")

        try:
            deleted = monitoring.delete_old_tasks(days=days, batch_size=batch_size, on_batch=progress)
        except ValidationFailed as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(self.style.SUCCESS(f"Deleted {deleted} task(s) older than {days} day(s)."))
