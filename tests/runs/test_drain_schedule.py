"""The drain's order of database steps while replies come in (runs/execution.py), on a scripted database.

The drain runs on a loop of its own with its database steps answered by a fake (what each step returns
is scripted, nothing is stored) and the agent calls replaced by futures the test resolves, so the order
in which the drain asks for start_ahead, writes and claims is what is checked, not the time they take.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from runs import execution
from runs.queue import Claim, ClaimedSample, RecoveryReport, RunPlan, SampleWrite

AGENT, RUN = 1, 1


def _sample(pk: int, *, ahead: bool = False) -> ClaimedSample:
    return ClaimedSample(
        id=pk,
        run_id=RUN,
        agent_id=AGENT,
        scenario_index=0,
        sample_index=pk,
        claim="c",
        executions=0 if ahead else 1,
        previous_attempts=[],
        ahead=ahead,
    )


class Script:
    """A drain's database (every step scripted) and its agent calls (futures the test resolves)."""

    def __init__(self, first: Claim) -> None:
        self.first = first
        self.steps: list[tuple[str, list[int]]] = []  # (step, the sample ids it was given)
        self.calls: dict[int, asyncio.Future] = {}  # sample id -> its reply, resolved by the test
        self.started: set[int] = set()  # samples whose call began
        self.on_step: dict[tuple[str, int], object] = {}  # (step, nth) -> callback run inside the step
        self.seconds, self.calls_made, self.jobs = 0.0, 0, None

    def reply(self, pk: int) -> None:
        self.calls[pk].set_result(None)

    async def execute(self, sample, plan, target, client, **kwargs) -> SampleWrite:
        self.started.add(sample.id)
        await self.calls.setdefault(sample.id, asyncio.get_running_loop().create_future())
        return SampleWrite(sample_id=sample.id, run_id=sample.run_id, agent_id=sample.agent_id, claim="c")

    async def __call__(self, fn, *args, **kwargs):
        name = fn.__name__
        given = list(args[0]) if args and isinstance(args[0], list | tuple | set) else []
        ids = [getattr(item, "sample_id", getattr(item, "id", item)) for item in given]
        self.steps.append((name, ids))
        hook = self.on_step.get((name, sum(step == name for step, _ in self.steps)))
        if hook is not None:
            await hook()
        if name == "claim_samples":
            first, self.first = self.first, Claim(queued_left=False)
            return first
        if name == "start_ahead":
            return {pk: 1 for pk in ids}
        if name == "record_sample_results":
            return [True] * len(ids)
        if name == "recover_runs":
            return RecoveryReport()
        if name == "renew_leases":
            return set(ids)
        if name == "release_ahead":
            return len(ids)
        return set()  # refresh_runs

    async def quick(self, fn, *args):  # _DB.quick: the same step, answered without a turn of the loop
        return await self(fn, *args)

    def order(self, *names: str) -> list[tuple[str, list[int]]]:
        return [(name, sorted(ids)) for name, ids in self.steps if name in names]


def _drain(script: Script, monkeypatch) -> execution._Drain:
    monkeypatch.setattr(execution, "execute_sample", script.execute)
    d = execution._Drain(worker="w", db=script, idle_s=0, claim_for_s=60, hard_s=60)
    d._wake, d.client = asyncio.Event(), None
    d.plans[RUN] = RunPlan(run_id=RUN, agent_id=AGENT, team_id=1, scenarios=[{}], checks=())
    d.targets[AGENT] = object()  # what execute_sample is given; the scripted call ignores it
    return d


async def _until(condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the drain did not get there"
        await asyncio.sleep(0.001)


def test_replies_during_a_start_ahead_are_handed_on_before_any_write(monkeypatch):
    """Two calls out (1, 2), two samples held ahead (3, 4): call 2 ends while the start_ahead for call 1's
    slot is with the database. Its slot goes to sample 4 next, before the write of 1 and 2, and each new
    call has sent its request before the drain's next database step."""
    monkeypatch.setattr(execution, "WRITE_QUIET_S", 0.0)
    script = Script(Claim(samples=[_sample(1), _sample(2), _sample(3, ahead=True), _sample(4, ahead=True)]))
    started_at_next_step: list[set[int]] = []

    async def call_2_ends() -> None:
        script.reply(2)
        for _ in range(5):
            await asyncio.sleep(0)  # its task finishes while this step is pending

    async def note_started() -> None:
        started_at_next_step.append(set(script.started))

    script.on_step[("start_ahead", 1)] = call_2_ends
    script.on_step[("start_ahead", 2)] = note_started
    script.on_step[("record_sample_results", 1)] = note_started

    async def scenario() -> None:
        d = _drain(script, monkeypatch)
        loop = asyncio.ensure_future(d._loop(time.monotonic()))
        await _until(lambda: {1, 2} <= script.started)
        script.reply(1)
        await _until(lambda: {3, 4} <= script.started)
        script.reply(3)
        script.reply(4)
        await asyncio.wait_for(loop, 10)

    asyncio.run(scenario())
    steps = script.order("start_ahead", "record_sample_results")
    assert steps[:2] == [("start_ahead", [3]), ("start_ahead", [4])]
    assert steps[2][0] == "record_sample_results" and {1, 2} <= set(steps[2][1])
    assert started_at_next_step[0] >= {3} and started_at_next_step[1] >= {3, 4}


def test_a_write_and_a_claim_wait_while_a_reply_is_due(monkeypatch):
    """Calls 1 and 2 left together; 1 ends and its slot goes to sample 3 held ahead. Call 2's reply is due
    (it left before 1 ended), so nothing is written or claimed until it comes: the two are written in one
    batch."""
    monkeypatch.setattr(execution, "WRITE_QUIET_S", 0.0)  # without the wait, 1 would be written at once
    monkeypatch.setattr(execution, "WRITE_MAX_AGE_S", 30.0)
    script = Script(Claim(samples=[_sample(1), _sample(2), _sample(3, ahead=True)], queued_left=True))
    between: list[tuple[str, list[int]]] = []

    async def scenario() -> None:
        d = _drain(script, monkeypatch)
        loop = asyncio.ensure_future(d._loop(time.monotonic()))
        await _until(lambda: {1, 2} <= script.started)
        script.reply(1)
        await _until(lambda: 3 in script.started)
        mark = len(script.steps)
        await asyncio.sleep(0.1)  # twenty polls' worth: nothing but waiting for call 2
        between.extend(script.steps[mark:])
        script.reply(2)
        await _until(lambda: any(name == "record_sample_results" for name, _ in script.steps))
        script.reply(3)
        await asyncio.wait_for(loop, 10)

    asyncio.run(scenario())
    assert [name for name, _ in between if name in ("record_sample_results", "claim_samples")] == []
    assert script.order("record_sample_results")[0] == ("record_sample_results", [1, 2])


def test_a_reply_that_does_not_come_holds_a_write_back_at_most_the_write_max_age(monkeypatch):
    monkeypatch.setattr(execution, "WRITE_QUIET_S", 0.0)
    monkeypatch.setattr(execution, "WRITE_MAX_AGE_S", 0.05)
    script = Script(Claim(samples=[_sample(1), _sample(2), _sample(3, ahead=True)], queued_left=True))

    async def scenario() -> None:
        d = _drain(script, monkeypatch)
        loop = asyncio.ensure_future(d._loop(time.monotonic()))
        await _until(lambda: {1, 2} <= script.started)
        script.reply(1)  # call 2 never answers here
        await _until(lambda: ("record_sample_results", [1]) in script.order("record_sample_results"))
        assert not script.calls[2].done()
        script.reply(2)
        script.reply(3)
        await asyncio.wait_for(loop, 10)

    asyncio.run(scenario())


@pytest.mark.parametrize(("launched", "due"), [((0.0, 0.001), True), ((0.0, 0.5), False)])
def test_a_reply_is_due_while_a_call_launched_before_the_newest_reply_is_out(monkeypatch, launched, due):
    async def scenario() -> bool:
        d = _drain(Script(Claim()), monkeypatch)
        never = asyncio.get_running_loop().create_future()
        first, second = asyncio.ensure_future(never), asyncio.ensure_future(asyncio.sleep(60))
        d.inflight = {first: _sample(1), second: _sample(2)}
        d.launched = {first: launched[0], second: launched[1]}
        d.inflight.pop(first)
        d.replied_launch = d.launched.pop(first)  # the first call ended
        result = d._replies_due(time.monotonic())
        second.cancel()
        return result

    assert asyncio.run(scenario()) is due


def test_a_claim_keeps_the_agents_target_until_its_row_changes(monkeypatch):
    """Each claim reads the agent row again: the same row keeps its target (headers decrypted and the
    request head worked out once per drain), a changed row gets a new one at once."""
    from agents.models import Agent

    def row(**changes) -> Agent:
        fields = {"id": AGENT, "protocol": "evalconsole", "endpoint_url": "http://127.0.0.1:9/a"}
        return Agent(**{**fields, "timeout_s": 5.0, "retries": 1, "max_concurrency": 2, **changes})

    async def scenario() -> list:
        d = _drain(Script(Claim()), monkeypatch)
        del d.targets[AGENT]
        seen = []
        for agent in (row(), row(), row(endpoint_url="http://127.0.0.1:9/b"), row(retries=0)):
            d._start(Claim(agents={AGENT: agent}))
            seen.append(d.targets[AGENT])
        return seen

    first, again, moved, fewer = asyncio.run(scenario())
    assert again is first
    assert moved is not first and moved.endpoint_url == "http://127.0.0.1:9/b"
    assert fewer is not moved and fewer.retries == 0


def test_a_quick_step_is_answered_without_a_turn_of_the_event_loop_when_the_database_thread_is_idle():
    """_DB.quick: the loop thread waits for the database thread's answer (no GIL turns with the loop);
    when a step is already with that thread, or the answer is late, it is awaited like any step."""
    import queue as stdlib_queue
    import threading

    jobs: stdlib_queue.SimpleQueue = stdlib_queue.SimpleQueue()
    db = execution._DB(jobs)
    release = threading.Event()

    def step(value):
        return value * 2

    def slow(value):
        release.wait(5)
        return value

    def failing():
        raise ValueError("no such row")

    async def scenario() -> list:
        loop = asyncio.get_running_loop()
        server = threading.Thread(target=execution._serve, args=(loop, jobs))
        server.start()
        turned: list[str] = []
        seen = []
        try:
            loop.call_soon(turned.append, "turn")
            seen.append((await db.quick(step, 21), list(turned)))  # answered before the loop turned
            with pytest.raises(ValueError, match="no such row"):
                await db.quick(failing)
            busy = asyncio.ensure_future(db(slow, "slow"))
            await asyncio.sleep(0)
            quick = asyncio.ensure_future(db.quick(step, 1))  # behind a step: awaited, the loop runs
            await asyncio.sleep(0.05)
            seen.append(quick.done())
            release.set()
            seen.append((await busy, await quick))
        finally:
            jobs.put(None)
            await asyncio.to_thread(server.join)
        return seen

    assert asyncio.run(scenario()) == [(42, []), False, ("slow", 2)]
