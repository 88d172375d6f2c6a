"""django-q2's database broker, woken instead of polling (``Q_CLUSTER["broker_class"]``).

django-q2's ORM broker looks for tasks, and sleeps ``poll`` seconds when there are none: a short poll
costs CPU all day long (an idle ``make up`` spent ~3 % of a core in that loop at 0.05 s), a long one
delays every run's start. This broker tells a waiting worker about each task it queues
(:func:`core.wakeup.notify`: PostgreSQL ``NOTIFY``, or a datagram on one machine) and waits for that
signal instead of sleeping, with ``poll`` only as the fallback: pick-up at once, and an idle worker
that asks the database once per ``poll`` seconds. The Redis broker needs none of this (it blocks on
``BLPOP``).
"""

from __future__ import annotations

from django_q.brokers.orm import ORM
from django_q.conf import Conf

from core import wakeup

__all__ = ["WakeableORM"]


class WakeableORM(ORM):
    _listener: wakeup.Listener | None = None

    def enqueue(self, task):
        task_id = super().enqueue(task)
        wakeup.notify()  # on PostgreSQL in the caller's transaction: heard once the task is visible
        return task_id

    def dequeue(self):
        tasks = self._look()
        if tasks:
            return tasks
        if self._listener is None:
            self._listener = wakeup.listener()
        if self._listener.wait(float(Conf.POLL)):
            return self._look()
        return None

    def _look(self):
        """One look at the queue (django-q2's own, without its sleep)."""
        tasks = self.get_connection().filter(key=self.list_key, lock__lt=self._now())[0 : Conf.BULK]
        found = []
        for task in tasks:
            claimed = self.get_connection().filter(id=task.id, lock=task.lock).update(lock=self.timeout(task))
            if claimed:
                found.append((task.pk, task.payload))
        return found

    @staticmethod
    def _now():
        from django.utils import timezone

        return timezone.now()

    def close(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None
