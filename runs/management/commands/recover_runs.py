"""manage.py recover_runs: re-queue samples of dead workers (expired lease), finalise stuck runs."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from runs import queue, services


class Command(BaseCommand):
    help = (
        "Re-queue running samples whose worker died (their lease expired), finalise runs with no open "
        "samples, and enqueue a drain task when samples are waiting. Safe to run at any time."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--drain",
            action="store_true",
            help="run the waiting samples in this process instead of enqueueing a task",
        )
        parser.add_argument("--no-enqueue", action="store_true", help="only recover; do not enqueue a drain")

    def handle(self, *args, drain: bool = False, no_enqueue: bool = False, **options) -> None:
        report = queue.recover_runs()
        self.stdout.write(str(report))
        if not report.claimable:
            return
        if drain:
            from runs.execution import drain as run_drain

            result = run_drain(idle_ms=0)
            self.stdout.write(f"drained: {result.written} sample(s) written in {result.seconds} s")
        elif not no_enqueue:
            services.enqueue_drain()
            self.stdout.write("enqueued a drain task")
