"""django-q2 entry points for run execution. They take no objects, only call runs.services / runs.queue.

- ``drain_samples``: one task drains queued samples of every run (runs/execution.py). Enqueued
  after each launch commits; running it twice at once, or again after django-q2 redelivers it, is
  harmless (claims and writes are conditional updates).
- ``recover_runs``: scheduled every minute (migration runs/0002): re-queues samples of dead workers
  whose lease expired, finalises stuck runs, and enqueues a drain when work is waiting.
"""

from __future__ import annotations

import logging

from runs import queue, services

log = logging.getLogger(__name__)


def drain_samples() -> dict:
    from runs.execution import drain

    report = drain()
    if report.work_left:  # stopped before the django-q2 timeout with work queued: hand over
        services.enqueue_drain()
    return {
        "claimed": report.claimed,
        "written": report.written,
        "dropped": report.dropped,
        "seconds": report.seconds,
        "db_seconds": report.db_seconds,
        "db_calls": report.db_calls,
    }


def recover_runs() -> str:
    report = queue.recover_runs()
    if report.claimable:
        services.enqueue_drain()
    return str(report)
