"""The gate that lets at most max_connections agent calls hold a connection (agents.protocols._Gate):
first come, first served, a slot never leaks when a waiter is cancelled, in O(1) per step."""

from __future__ import annotations

import asyncio

from agents.protocols import _Gate


def test_at_most_n_inside_and_the_rest_in_arrival_order():
    async def main():
        gate, inside, peak, order = _Gate(2), 0, 0, []

        async def call(i: int) -> None:
            nonlocal inside, peak
            async with gate:
                order.append(i)
                inside += 1
                peak = max(peak, inside)
                await asyncio.sleep(0.01)
                inside -= 1

        await asyncio.gather(*(call(i) for i in range(7)))
        return peak, order, gate._free

    peak, order, free = asyncio.run(main())
    assert peak == 2
    assert order == list(range(7)), "first come, first served"
    assert free == 2, "every slot came back"


def test_a_cancelled_waiter_leaves_no_slot_behind_and_takes_none():
    async def main():
        gate = _Gate(1)
        entered = []

        async def hold(release: asyncio.Event) -> None:
            async with gate:
                entered.append("holder")
                await release.wait()

        async def wait_in_line(name: str) -> None:
            async with gate:
                entered.append(name)

        async def holder_and_two_in_line(first: str, second: str):
            """The slot held until the event is set, and two tasks waiting for it, in that order."""
            release = asyncio.Event()
            holder = asyncio.create_task(hold(release))
            await asyncio.sleep(0)
            waiting = asyncio.create_task(wait_in_line(first)), asyncio.create_task(wait_in_line(second))
            await asyncio.sleep(0)
            return release, holder, *waiting

        release, holder, cancelled, later = await holder_and_two_in_line("cancelled", "later")
        cancelled.cancel()  # while still waiting in line
        release.set()
        await asyncio.gather(holder, later, return_exceptions=True)
        assert cancelled.cancelled()

        # handed the slot at the moment it is cancelled: it passes the slot on
        release2, holder2, unlucky, after = await holder_and_two_in_line("unlucky", "after")
        release2.set()
        await asyncio.sleep(0)  # holder2 leaves: the slot is handed to "unlucky"'s future
        unlucky.cancel()
        await asyncio.gather(holder2, unlucky, after, return_exceptions=True)
        return entered, gate._free

    entered, free = asyncio.run(main())
    assert "cancelled" not in entered and "unlucky" not in entered
    assert "later" in entered and "after" in entered, "the slot went on to the next in line"
    assert free == 1
