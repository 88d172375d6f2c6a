"""Run execution on django-q2's Redis broker (REDIS_URL: the scale-out option across machines): the
same real-worker tests as tests/runs/test_worker.py, with the launches enqueued to a real Redis
(Debian's redis-server, started for the session) and the qcluster workers reading it."""

from __future__ import annotations

import pytest

from tests.runs.test_worker import (  # noqa: F401 - collected here again, on the Redis broker
    test_agent_faults_give_the_designed_outcomes_with_reasons,
    test_sigkilled_worker_loses_nothing_and_repeats_nothing,
    test_ten_sample_run_completes_with_the_right_result,
    test_two_worker_processes_share_a_run_without_running_a_sample_twice,
)
from tests.support.redis_server import redis_url  # noqa: F401 - a fixture

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def redis_broker(redis_url, monkeypatch):  # noqa: F811 - the fixture above
    """This process enqueues to Redis, and the workers it starts read Redis (REDIS_URL)."""
    import redis
    from django_q.conf import Conf

    redis.Redis.from_url(redis_url).flushdb()
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setattr(Conf, "ORM", None)
    monkeypatch.setattr(Conf, "BROKER_CLASS", None)
    monkeypatch.setattr(Conf, "REDIS", redis_url)
    yield


def test_the_workers_really_use_redis(qcluster, make_test, member):
    """A launch leaves its drain task in Redis's queue, not the database's, and a worker takes it."""
    from django_q.models import OrmQ

    from runs import services
    from tests.support.workers import run_finished

    test = make_test(scenarios=[{"name": "one", "input": "Where is my order EC-1042?"}], samples=1)
    run = services.launch_run(test=test, by=member)
    assert not OrmQ.objects.exists(), "nothing went through the database broker"
    assert run_finished(run.pk).status == "completed", "a worker took the task from Redis"
