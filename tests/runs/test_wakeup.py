"""The worker waits for work without polling: django-q2's database broker (core.broker.WakeableORM) is
woken by each task it queues (core.wakeup: PostgreSQL NOTIFY, or a datagram on one machine), with the
poll only as a fallback."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction
from django_q.conf import Conf

from core import wakeup
from core.broker import WakeableORM

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def var_dir(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    return tmp_path


def test_a_listener_hears_a_notification_and_only_then(var_dir):
    listener = wakeup.listener()
    try:
        assert listener.wait(0.01) is False, "nothing was said"
        wakeup.notify()
        assert listener.wait(5) is True
        assert listener.wait(0.01) is False, "one notification wakes it once"
    finally:
        listener.close()


def test_a_notification_inside_a_transaction_is_heard_after_the_commit(var_dir):
    listener = wakeup.listener()
    try:
        with transaction.atomic():
            wakeup.notify()
            assert listener.wait(0.05) is False, "the work is not visible before the commit"
        assert listener.wait(5) is True
    finally:
        listener.close()


@pytest.mark.skipif("connection.vendor == 'postgresql'", reason="PostgreSQL listens on LISTEN, not a socket")
def test_on_one_machine_a_second_listener_leaves_the_socket_to_the_first_and_a_stale_one_is_replaced(var_dir):
    first = wakeup.listener()
    second = wakeup.listener()
    try:
        assert (var_dir / "work.sock").exists()
        wakeup.notify()
        assert first.wait(5) is True
        assert second.wait(0.01) is False, "the second waits on its timeout alone"
    finally:
        second.close()
        first.close()
    (var_dir / "work.sock").touch()  # a file left by a worker that died
    third = wakeup.listener()
    try:
        wakeup.notify()
        assert third.wait(5) is True
    finally:
        third.close()


def test_the_broker_picks_a_task_up_when_it_is_queued_not_at_the_next_poll(var_dir, monkeypatch):
    monkeypatch.setattr(Conf, "POLL", 60.0)  # were it polling, the task would wait a minute
    broker = WakeableORM(list_key="wakeup-test")
    got: list = []

    def worker() -> None:
        try:
            got.append(broker.dequeue())
        finally:
            connection.close()

    waiting = threading.Thread(target=worker)
    waiting.start()
    while broker._listener is None and waiting.is_alive():  # until it waits on its listener
        waiting.join(0.01)
    broker.enqueue("payload-1")
    waiting.join(20)
    broker.close()
    assert not waiting.is_alive(), "the broker slept through the task"
    assert [payload for _, payload in got[0]] == ["payload-1"]


def test_with_nothing_queued_the_broker_waits_its_poll_and_answers_nothing(var_dir, monkeypatch):
    monkeypatch.setattr(Conf, "POLL", 0.05)
    broker = WakeableORM(list_key="wakeup-empty")
    try:
        assert not broker.dequeue()
    finally:
        broker.close()
