"""django-q2 entry points for monitors and one-off evaluations: ids in, a service call, nothing else."""

from __future__ import annotations

from collections.abc import Sequence

from monitors import services as monitoring


def evaluate_monitor_batch(batch: Sequence[tuple[int, Sequence[int]]]) -> int:
    """Evaluate one ingested batch: [(monitor_id, [task ids it sampled])]. Safe to run twice."""
    return sum(monitoring.evaluate_monitor_tasks(monitor_id=m, task_ids=ids) for m, ids in batch)


def run_evaluation(evaluation_id: int) -> int:
    """Evaluate a one-off evaluation's tasks with its frozen check versions. Safe to run twice."""
    return monitoring.run_evaluation(evaluation_id=evaluation_id)
