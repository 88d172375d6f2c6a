"""A worker's claim locks its agent's row against other claims only: rows that merely reference the
agent (a launch's runs, a new test set) are written meanwhile (issue 19: under load, launches waited
for the workers' claims on PostgreSQL's foreign-key check)."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections

from runs import queue, services
from tests import factories

pytestmark = pytest.mark.django_db(transaction=True)

ORDER = "Where is my order EC-1042?"


def test_a_row_referencing_the_agent_is_written_while_a_claim_holds_the_agent(
    make_test, member, live_agent, monkeypatch
):
    if connection.vendor != "postgresql":
        pytest.skip("row locks: SQLite's claim locks the whole database")
    monkeypatch.setattr(services, "enqueue_drain", lambda: None)  # the samples stay queued for our claim
    services.launch_run(test=make_test(scenarios=[ORDER]), by=member)
    outcome: dict = {}
    counted = queue._in_flight

    def in_flight_with_a_write_alongside(agent_id, now):
        # Inside the claim's transaction, the agent's row locked: another connection adds a test set to it.
        def write() -> None:
            try:
                with connections["default"].cursor() as cursor:
                    cursor.execute("SET lock_timeout = '2s'")
                factories.test_set(live_agent, member, name="Written during a claim")
                outcome["written"] = True
            except Exception as exc:  # noqa: BLE001 - the lock timeout, reported by the assert below
                outcome["error"] = repr(exc)
            finally:
                connections.close_all()

        other = threading.Thread(target=write)
        other.start()
        other.join(30)
        return counted(agent_id, now)

    monkeypatch.setattr(queue, "_in_flight", in_flight_with_a_write_alongside)
    claim = queue.claim_samples(worker="w", capacity=1)
    assert len(claim.samples) == 1
    assert outcome == {"written": True}
