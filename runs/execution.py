"""The drain: one worker task that runs queued samples of every run concurrently.

A django-q2 task (runs.tasks.drain_samples) calls ``drain()``. It runs on the worker process's own
asyncio loop (one thread, kept for every drain) with ONE shared agent client (agents.protocols, kept
with its keep-alive connections across drains) and keeps up to EVALCONSOLE_WORKER_CONCURRENCY agent
calls in flight, claiming samples as slots free up (runs.queue.claim_samples holds each agent's cap
across every worker process). All database work runs on the thread that called drain(), which serves
the drain's steps meanwhile (short transactions, never one held across an HTTP call); the event loop
only waits on sockets.

Per sample: call the agent (agents.protocols.call_agent, with its retries), evaluate every check
version of the run on the evidence (checks.evaluation, in a thread), compute the sample outcome
(runs.outcomes.sample_outcome) and hand the result to the writer, which records finished samples
in batches (one transaction each, every sample guarded by its claim token).

Claim ahead: once its calls are out, a drain also holds one queued sample per call it has in flight to
each agent (runs.queue.claim_samples(ahead=...): running under a lease, not started, outside the agent's
cap). When a call ends, its slot (still counted until its result is written) goes to one of those
(runs.queue.start_ahead, one UPDATE that refuses a cancelled run's sample), so a freed slot calls again
without waiting for the write and a new claim; writes no slot waits for are made when the replies pause
(WRITE_QUIET_S). What a drain holds ahead and will not start goes back to the queue (release_ahead).

While calls run the loop renews their leases every second (one UPDATE for all of them, however
many); a sample that was cancelled or taken over (its lease expired) is dropped: its call is
cancelled and nothing is written. Leases are short (EVALCONSOLE_SAMPLE_LEASE_S, 5 s), so the
samples of a worker that died stop counting against their agent's cap within seconds: every drain
claims the freed slots at once and re-queues the dead worker's samples (runs.queue.recover_runs)
every half lease.

The drain returns when no work has been claimable for EVALCONSOLE_DRAIN_IDLE_MS (new launches in
that window are picked up without a new task) or when half the django-q2 timeout has passed;
leftovers get a new task.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import logging
import math
import os
import random
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from queue import SimpleQueue
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, connection, connections
from django.utils import timezone

from agents.protocols import AgentCallError, AgentReply, AgentTarget, call_agent, make_async_client
from agents.targets import target_for
from checks.evaluation import evaluate_version, evidence_from, make_context, result_fields
from checks.kinds import Outcome
from runs import queue
from runs.outcomes import sample_outcome
from runs.queue import CheckResultWrite, ClaimedSample, RunPlan, SampleWrite
from worlds import services as worlds
from worlds.engine.evaluate import STATUS_OUTCOME

log = logging.getLogger(__name__)

__all__ = ["DrainReport", "drain", "execute_sample"]

MAX_DB_FAILURES = 20  # database steps failing in a row before a drain gives up
# How often a drain recounts the summaries of the runs it is writing (a recount reads every sample and
# check result of a run; done counts are kept exact on every write, and a completing run is recounted).
SUMMARY_EVERY_S = 0.5
# A write that no freed slot waits for (every finished call's slot went to a sample claimed ahead) is
# made once replies have paused this long, or its oldest result waited WRITE_MAX_AGE_S: replies often
# come in bursts (slots started together), and a write in the middle of one would hold up the rest.
WRITE_QUIET_S = 0.005
WRITE_MAX_AGE_S = 0.05
# How long the loop thread waits for a quick database step (start_ahead) before it awaits it (_DB.quick).
QUICK_WAIT_S = 0.05
# Replies are due while a call launched before the newest call that replied (or this little after it) is
# still out: calls to an agent answer roughly in the order they left, so its reply is a moment away. Until
# then the database thread is kept for the steps that hand finished calls' slots on (start_ahead): a write
# nothing waits for and a claim are held back (at most WRITE_MAX_AGE_S), as each holds that thread for
# milliseconds while the replies behind it would wait.
REPLY_SLACK_S = 0.005

# The fields of an agent row that agents.targets.target_for reads (a drain remakes a target when they change).
TARGET_FIELDS = ("protocol", "endpoint_url", "headers_encrypted", "timeout_s", "retries", "model_name")

# Kinds whose evaluation may block (network calls to a judge model): evaluated in a thread.
BLOCKING_KINDS = frozenset({"ai_judge"})


# --------------------------------------------------------------------------- one sample


def transcript_for(scenario: dict, reply: AgentReply) -> list:
    """Scenario messages plus the agent's reply (its own messages when it sent them)."""
    base = [dict(m) for m in (scenario.get("messages") or []) if isinstance(m, dict)]
    if not base and isinstance(scenario.get("input"), str):
        base = [{"role": "user", "content": scenario["input"]}]
    messages = reply.messages if isinstance(reply.messages, list) else None
    if messages:
        if messages[: len(base)] == base:
            return list(messages)
        return base + list(messages)
    return base + [{"role": "assistant", "content": reply.output}]


@dataclass(frozen=True)
class SceneTrial:
    """A sample that plays a scene: its world, and how to end it (→ the frozen world, checks.json)."""

    world_id: str
    end: Callable[[str], Awaitable[tuple[Any, dict]]]


def evaluate_sample(
    plan: RunPlan,
    scenario: dict,
    reply: AgentReply,
    transcript: list,
    *,
    world: Any = None,
    world_checks: Sequence[Mapping] = (),
) -> tuple[str, tuple[CheckResultWrite, ...]]:
    """(sample outcome, its check results) for a successful agent reply. Pure apart from judges.

    A scene's sample also counts its scene's own required checks (``world_checks``, judged on the
    world), and its library checks read the world (state, and the world's trace for trace checks)."""
    evidence = evidence_from(
        output=reply.output,
        messages=transcript,
        tool_calls=reply.tool_calls,
        trace=reply.trace,
        latency_ms=reply.latency_ms,
        metadata=scenario.get("metadata") or {},
        world=world,
    )
    ctx = make_context(team_id=plan.team_id, cache=plan.eval_cache)
    results = tuple(
        CheckResultWrite(
            check_version_id=check.check_version_id,
            required=check.required,
            **result_fields(evaluate_version(check.kind, check.config, evidence, ctx)),
        )
        for check in plan.checks
    )
    scene = [(STATUS_OUTCOME[c["status"]], bool(c["required"])) for c in world_checks]
    outcome = sample_outcome([*((r.outcome, r.required) for r in results), *scene])
    return str(outcome), results


def _write(sample: ClaimedSample, **fields: Any) -> SampleWrite:
    """What to record of the claimed `sample` (written only while its claim holds)."""
    return SampleWrite(
        sample_id=sample.id, run_id=sample.run_id, agent_id=sample.agent_id, claim=sample.claim, **fields
    )


def _failure_write(sample: ClaimedSample, plan: RunPlan, exc: AgentCallError, attempts: list) -> SampleWrite:
    message = exc.message or "the agent call failed"
    saw_429 = exc.rate_limited or any(a.get("status_code") == 429 for a in attempts)
    requeues = int(settings.EVALCONSOLE_RATE_LIMIT_REQUEUES)
    if exc.rate_limited and sample.executions <= requeues:
        # The agent throttles us: back off (the AIMD window shrinks too) and try this sample later
        # instead of recording an error, so long test sets finish instead of failing on 429s.
        delay = (
            exc.retry_after_s
            if exc.retry_after_s is not None
            else random.uniform(0.5, 2.0) * sample.executions
        )
        return _write(
            sample,
            attempts=attempts,
            error=f"rate limited, queued again: {message}",
            requeue_at=timezone.now() + timedelta(seconds=min(delay, 60.0)),
            saw_429=True,
        )
    return _write(
        sample,
        outcome=Outcome.ERROR,
        request=exc.request or None,
        attempts=attempts,
        error=message,
        transcript=[dict(m) for m in (plan.scenarios[sample.scenario_index].get("messages") or [])],
        results=tuple(
            queue.error_result(c.check_version_id, c.required, f"the agent call failed ({message})")
            for c in plan.checks
        ),
        saw_429=saw_429,
    )


async def _end_trial(trial: SceneTrial | None, reason: str) -> tuple[Any, list]:
    """End a scene sample's world: (the frozen world, its scene checks); (None, []) when it fails."""
    if trial is None:
        return None, []
    try:
        world, checks = await trial.end(reason)
    except Exception:  # noqa: BLE001 - the sample still ends, with the world's failure logged
        log.exception("world %s: could not end the trial", trial.world_id)
        return None, []
    return world, list(checks.get("checks", []))


async def execute_sample(
    sample: ClaimedSample,
    plan: RunPlan,
    target: AgentTarget,
    client,
    *,
    evaluate_inline: bool = False,
    scenario: dict | None = None,
    trial: SceneTrial | None = None,
) -> SampleWrite:
    """Call the agent for one claimed sample and evaluate it. Never raises (except cancellation).

    ``scenario`` overrides the plan's (a scene sample carries its world); ``trial`` ends that world
    when the reply arrives (or the call fails) and judges the scene's checks on it."""
    if scenario is None:
        scenario = (
            plan.scenarios[sample.scenario_index] if sample.scenario_index < len(plan.scenarios) else {}
        )
    try:
        reply = await call_agent(
            target,
            scenario=scenario,
            run_id=str(sample.run_id),
            sample_id=str(sample.id),
            client=client,
            first_attempt=len(sample.previous_attempts) + 1,
        )
    except AgentCallError as exc:
        attempts = sample.previous_attempts + [a.as_dict() for a in exc.attempts]
        timed_out = "timed out" in (exc.message or "")
        world, _ = await _end_trial(trial, "timeout" if timed_out else "error")
        return _with_world(_failure_write(sample, plan, exc, attempts), trial, world)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # noqa: BLE001 - a bug must still end the sample with a reason
        log.exception("sample %s: unexpected error calling the agent", sample.id)
        world, _ = await _end_trial(trial, "error")
        failed = _failure_write(
            sample,
            plan,
            AgentCallError(f"internal error: {type(exc).__name__}: {exc}"),
            list(sample.previous_attempts),
        )
        return _with_world(failed, trial, world)
    world, world_checks = await _end_trial(trial, "reply")
    if trial is not None and world is None:
        failed = _failure_write(
            sample,
            plan,
            AgentCallError("the sample's world could not be judged"),
            list(sample.previous_attempts),
        )
        return _with_world(failed, trial, None)
    transcript = transcript_for(scenario, reply)
    extra = {"world": world, "world_checks": world_checks}
    if evaluate_inline:
        outcome, results = evaluate_sample(plan, scenario, reply, transcript, **extra)
    else:  # judge-based kinds may block: keep them off the event loop
        outcome, results = await asyncio.to_thread(
            evaluate_sample, plan, scenario, reply, transcript, **extra
        )
    attempts = sample.previous_attempts + [a.as_dict() for a in reply.attempts]
    return _write(
        sample,
        outcome=outcome,
        request=without_credentials(reply.request) if trial else reply.request,
        output=reply.output,
        tool_calls=reply.tool_calls,
        # A scene's sample keeps the trace the world recorded, never the one the agent reports.
        trace=world.trace.to_list() if world is not None else reply.trace,
        transcript=transcript,
        latency_ms=reply.latency_ms,
        attempts=attempts,
        results=results,
        saw_429=any(a.get("status_code") == 429 for a in attempts),
        grow_window=sample.windowed,
        world_id=trial.world_id if trial else None,
        world_checks=world_checks,
    )


def _with_world(write: SampleWrite, trial: SceneTrial | None, world: Any) -> SampleWrite:
    if trial is None:
        return write
    trace = world.trace.to_list() if world is not None else None
    return dataclasses.replace(
        write, world_id=trial.world_id, trace=trace, request=without_credentials(write.request)
    )


def without_credentials(request: dict | None) -> dict | None:
    """The request as stored: a world's tool credentials are never kept (base URLs are)."""
    world = ((request or {}).get("scenario") or {}).get("world")
    if not isinstance(world, dict):
        return request
    tools = {
        name: {"base_url": tool.get("base_url", "")} for name, tool in (world.get("tools") or {}).items()
    }
    return {**request, "scenario": {**request["scenario"], "world": {**world, "tools": tools}}}


# --------------------------------------------------------------------------- the drain


@dataclass
class DrainReport:
    claimed: int = 0
    written: int = 0
    dropped: int = 0  # results not written: cancelled or taken over
    seconds: float = 0.0
    db_seconds: float = 0.0  # waiting for database calls (claims, writes, lease renewals)
    db_calls: int = 0
    work_left: bool = False
    errors: list[str] = field(default_factory=list)
    ahead: int = 0  # samples claimed ahead (held, not started); the started ones count in `claimed`
    released: int = 0  # claimed ahead and put back in the queue unstarted


class _DB:
    """Runs sync ORM calls on the thread that called drain(), which serves them while the drain runs.

    The drain's event loop runs in the worker process's loop thread (_worker_loop); each database step
    is handed to the calling thread through ``jobs`` and its result handed back to the loop: in a
    django-q2 worker that is the worker's own thread and connection; inside a test it is the test's
    connection, which sees the test's transaction. The event loop never touches the ORM. (Without
    ``jobs``, as in tests that run a _Drain on a loop of their own, asgiref's sync_to_async does it.)
    """

    def __init__(self, jobs: SimpleQueue | None = None) -> None:
        self.jobs = jobs
        self.seconds = 0.0
        self.calls = 0
        self.busy = 0  # steps handed to the database thread and not answered yet

    async def __call__(self, fn: Callable, *args: Any, **kwargs: Any) -> Any:
        started = time.monotonic()
        self.busy += 1
        try:
            if self.jobs is None:
                return await sync_to_async(_with_retries, thread_sensitive=True)(fn, *args, **kwargs)
            done = asyncio.get_running_loop().create_future()
            self.jobs.put((done, fn, args, kwargs, None))
            return await done
        finally:
            self.busy -= 1
            self.seconds += time.monotonic() - started
            self.calls += 1

    async def quick(self, fn: Callable, *args: Any) -> Any:
        """A short step on the calls' critical path (start_ahead). When the database thread is idle, the
        loop thread waits for its answer (at most QUICK_WAIT_S) without turning the event loop: the two
        threads would otherwise take turns for the GIL on every call into the database driver, and under
        load each turn waits out the interpreter's switch interval (5 ms), so one UPDATE took 10-35 ms
        while replies were being read. Replies that arrive meanwhile wait in their sockets. Otherwise, or
        when the answer is late, it is awaited as any step."""
        if self.jobs is None or self.busy:
            return await self(fn, *args)
        started = time.monotonic()
        self.busy += 1
        done = asyncio.get_running_loop().create_future()
        answer = _Answer()
        try:
            self.jobs.put((done, fn, args, {}, answer))
            if answer.ready.wait(QUICK_WAIT_S):
                done.cancel()  # answered here; _settle finds it done
                return answer.take()
            return await done
        finally:
            self.busy -= 1
            self.seconds += time.monotonic() - started
            self.calls += 1


class _Answer:
    """A step's result (or error) handed straight to a loop thread that waits for it (_DB.quick)."""

    def __init__(self) -> None:
        self.ready = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None

    def give(self, result: Any, error: BaseException | None) -> None:
        self.result, self.error = result, error
        self.ready.set()

    def take(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.result


def _settle(done: asyncio.Future, result: Any, error: BaseException | None) -> None:
    if done.done():  # the step's caller was cancelled meanwhile
        return
    if error is not None:
        done.set_exception(error)
    else:
        done.set_result(result)


def _serve(loop: asyncio.AbstractEventLoop, jobs: SimpleQueue) -> None:
    """The calling thread's side of _DB: run each step handed over until the drain says it is done."""
    while (job := jobs.get()) is not None:
        done, fn, args, kwargs, answer = job
        try:
            result = _with_retries(fn, *args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - handed to the step's caller, which decides
            result, error = None, exc
        else:
            error = None
        if answer is not None:
            answer.give(result, error)
        loop.call_soon_threadsafe(_settle, done, result, error)


# One event loop per worker process, in a thread of its own, for every drain the process runs: the agent
# client and its keep-alive connections outlive a drain (a new drain does not reconnect to its agents),
# and no loop is built per drain. (pid: a forked process builds its own.)
_LOOP: tuple[int, asyncio.AbstractEventLoop, threading.Thread] | None = None
_LOOP_LOCK = threading.Lock()
_CLIENTS: dict[tuple[bool, int], Any] = {}  # (allow_private, max_connections) -> client; loop thread only


def _worker_loop() -> asyncio.AbstractEventLoop:
    global _LOOP
    with _LOOP_LOCK:
        if _LOOP is None or _LOOP[0] != os.getpid() or not _LOOP[2].is_alive():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="runs-drain-loop", daemon=True)
            thread.start()
            _CLIENTS.clear()
            _LOOP = (os.getpid(), loop, thread)
        return _LOOP[1]


def _agent_client(*, allow_private: bool, max_connections: int) -> Any:
    """The worker loop's shared agent client for these settings (made once; kept across drains)."""
    key = (allow_private, max_connections)
    client = _CLIENTS.get(key)
    if client is None or client.is_closed:
        client = _CLIENTS[key] = make_async_client(
            allow_private=allow_private, max_connections=max_connections
        )
    return client


DB_STEP_TRIES = 3  # attempts of a step marked @queue.retried_db_step; other steps run once


def _with_retries(fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """Retry a marked step (queue.retried_db_step) on a transient database error (a lock timeout, a
    dropped connection); an unmarked step is run once."""
    tries = DB_STEP_TRIES if queue.is_retried_db_step(fn) else 1
    for attempt in range(1, tries + 1):
        try:
            return fn(*args, **kwargs)
        except (OperationalError, InterfaceError) as exc:
            if attempt == tries:
                raise
            log.warning("%s failed (%s); retrying", fn.__name__, exc)
            if not connection.in_atomic_block:
                connection.close_if_unusable_or_obsolete()
            time.sleep(0.2 * attempt)
    raise AssertionError("unreachable")


class _Drain:
    def __init__(self, *, worker: str, db: _DB, idle_s: float, claim_for_s: float, hard_s: float) -> None:
        self.worker = worker
        self.db = db
        self.idle_s = idle_s
        self.claim_for_s = claim_for_s
        self.hard_s = hard_s
        self.capacity = int(settings.EVALCONSOLE_WORKER_CONCURRENCY)
        self.poll_s = int(settings.EVALCONSOLE_DRAIN_POLL_MS) / 1000
        self.lease_s = lease = queue.lease_seconds()
        # Renew every second (a 5 s lease survives 4 missed renewals); look for dead workers' expired
        # leases every half lease. Both are a few statements per drain, whatever is in flight.
        self.heartbeat_s = max(0.2, min(1.0, lease / 3))
        self.recover_every_s = max(1.0, lease / 2)
        self.plans: dict[int, RunPlan] = {}
        self.inflight: dict[asyncio.Task, ClaimedSample] = {}
        # Finished, not yet written (their leases are still renewed until they are).
        self.finished: list[tuple[ClaimedSample, SampleWrite]] = []
        # Finished samples whose slot of their agent's cap was not handed to a sample claimed ahead: the
        # slot frees when they are written, so their write is due at once.
        self.waiting: set[int] = set()
        self.finished_at = self.last_reply = 0.0
        # When each call in flight was launched (self.inflight keeps launch order), the launch time of the
        # newest call that ended, and since when replies have been due (see REPLY_SLACK_S).
        self.launched: dict[asyncio.Task, float] = {}
        self.replied_launch = -math.inf
        self.due_since: float | None = None
        # Claimed ahead per agent (never more than our calls to it): started in the slot of a call that
        # ended (queue.start_ahead), without waiting for that call's write and a new claim.
        self.ahead: dict[int, collections.deque[ClaimedSample]] = {}
        self.targets: dict[int, AgentTarget | Exception] = {}
        self.target_rows: dict[int, tuple] = {}  # the agent row's TARGET_FIELDS each target was made from
        self.ahead_due = False
        self.report = DrainReport()
        # Runs written since their summaries were last recounted (done counts are always exact): a
        # write recounts them at most every SUMMARY_EVERY_S, and a run is recounted when it completes.
        self.stale: set[int] = set()
        self.recount_at = 0.0
        self._done: list[asyncio.Task] = []
        self.failures = 0
        self._wake: asyncio.Event | None = None

    async def run(self) -> DrainReport:
        start = time.monotonic()
        self._wake = asyncio.Event()
        allow_private, max_connections = bool(settings.EVALCONSOLE_ALLOW_PRIVATE_URLS), max(10, self.capacity)
        shared = self.db.jobs is not None  # on the worker loop: its client outlives this drain
        if shared:
            self.client = _agent_client(allow_private=allow_private, max_connections=max_connections)
        else:
            self.client = make_async_client(allow_private=allow_private, max_connections=max_connections)
        try:
            await self._loop(start)
        finally:
            for task in list(self.inflight):
                task.cancel()
            if self.inflight:
                await asyncio.gather(*self.inflight, return_exceptions=True)
            if not shared:
                await self.client.aclose()
            if any(self.ahead.values()):  # back to the queue for whoever claims next
                with contextlib.suppress(DatabaseError):
                    await self._release(self._all_ahead())
            if self.stale:  # leave no summary behind its done count
                with contextlib.suppress(DatabaseError):
                    await self._recount()
        self.report.seconds = round(time.monotonic() - start, 3)
        self.report.db_seconds = round(self.db.seconds, 3)
        self.report.db_calls = self.db.calls
        return self.report

    async def _loop(self, start: float) -> None:
        last_work = last_heartbeat = time.monotonic()
        # Recovery (dead workers' samples, stuck runs) runs on the first turn too, but after the first
        # claim: a launch's first agent calls do not wait for it (the launch → first call path).
        last_recover = -math.inf
        last_claim = 0.0
        claimed_last = True
        queued_left = True
        poll = self.poll_s
        while True:
            now = time.monotonic()
            elapsed = now - start
            claiming = elapsed < self.claim_for_s
            self._collect()
            # First: a slot freed by a reply goes to a sample claimed ahead at once, and again for the
            # replies that came in meanwhile, before any other database step.
            while (
                claiming
                and self._handoffs()
                and await self._step("start samples claimed ahead", self._start_ahead)
            ):
                await asyncio.sleep(0)  # the new calls send their requests first
                self._collect()
            held = self._replies_due(time.monotonic())
            if self._write_due(time.monotonic(), held) and await self._step("write results", self._flush):
                # Written first: a finished sample still holds its agent's slot until then.
                last_work = time.monotonic()
                claimed_last = True
            surplus = self._surplus_ahead(everything=not claiming)
            if surplus:
                await self._step("release samples claimed ahead", self._release, surplus)
            free = self.capacity - len(self.inflight)
            ahead, ahead_room = self._ahead_wanted()
            if (
                claiming
                and (free > 0 or ahead)
                and (claimed_last or now - last_claim >= poll)
                and not self._replies_due(time.monotonic())
            ):
                claim = await self._step(
                    "claim samples",
                    self.db,
                    queue.claim_samples,
                    worker=self.worker,
                    capacity=max(0, free),
                    known_runs=set(self.plans),
                    ahead=ahead,
                    ahead_max=ahead_room,
                )
                last_claim = time.monotonic()
                claimed_last = bool(claim and claim.samples)
                if claim is not None:
                    queued_left = claim.queued_left
                    # At an agent's cap, our own finished calls trigger the next claim anyway: look
                    # for slots freed by other workers less often.
                    poll = self.poll_s * 5 if claim.capped and not claimed_last else self.poll_s
                if claimed_last:
                    last_work = last_claim
                    if self._start(claim):
                        await asyncio.sleep(0)  # the new calls send their requests first
                    # Calls went out: claim their samples ahead on the next turn, without a pause.
                    self.ahead_due = bool(self._ahead_wanted()[0])
            now = time.monotonic()
            if not (self.inflight or self.finished):
                last_heartbeat = now  # nothing held: the next renewal is due a heartbeat after a claim
            elif now - last_heartbeat >= self.heartbeat_s:
                if now - last_heartbeat > self.lease_s / 2:
                    log.warning(
                        "drain: leases renewed %.1f s after the last renewal (lease %.0f s): another "
                        "worker may have taken over samples of this one (EVALCONSOLE_SAMPLE_LEASE_S)",
                        now - last_heartbeat,
                        self.lease_s,
                    )
                await self._step("renew leases", self._heartbeat)
                last_heartbeat = now
            if now - last_recover >= self.recover_every_s:
                recovered = await self._step("recover runs", self.db, queue.recover_runs)
                last_recover = now
                if getattr(recovered, "claimable", False):  # e.g. a dead worker's samples, queued again
                    queued_left = claimed_last = True
            if self.stale and not self.finished and (now >= self.recount_at or not self.inflight):
                await self._step("recount run summaries", self._recount)
            if not self.inflight and not self.finished and not any(self.ahead.values()):
                if not claiming:
                    self.report.work_left = queued_left
                    return
                # Linger for new launches only after doing some work: a drain that found nothing to
                # claim was started by a launch whose samples another drain already took (each launch
                # enqueues one, and the woken broker starts them at once), so it leaves right away.
                if not queued_left and (now - last_work >= self.idle_s or not self.report.claimed):
                    return
            if elapsed >= self.hard_s:  # the django-q2 timeout is near: leave the rest to leases
                self.report.work_left = True
                return
            await self._wait()

    async def _step(self, what: str, fn: Callable, *args: Any, **kwargs: Any) -> Any:
        """Run one database step; a failure is logged and retried on a later turn of the loop.

        Nothing is lost meanwhile: unwritten results stay queued here, and samples whose lease
        lapses are re-run elsewhere (their late write is then refused). Many failures in a row end
        the drain with the error.
        """
        try:
            result = await fn(*args, **kwargs)
        except DatabaseError as exc:
            self.failures += 1
            log.warning("drain: could not %s (%d in a row): %s", what, self.failures, exc)
            self.report.errors.append(f"{what}: {exc}")
            if self.failures >= MAX_DB_FAILURES:
                raise
            await asyncio.sleep(min(2.0, 0.1 * self.failures))
            return None
        self.failures = 0
        return True if result is None else result

    def _start(self, claim: queue.Claim) -> int:
        """Take a claim's plans, targets and samples: launch the started ones, hold the others ahead.
        Returns how many calls were launched."""
        self.plans.update(claim.plans)
        for agent_id, agent in claim.agents.items():
            # Every claim reads the agent's row again; a row that did not change keeps its target (its
            # headers decrypted and its request head worked out once), a changed one gets a new target.
            row = tuple(getattr(agent, name) for name in TARGET_FIELDS)
            if self.target_rows.get(agent_id) == row:
                continue
            self.target_rows[agent_id] = row
            try:
                self.targets[agent_id] = target_for(agent)
            except Exception as exc:  # noqa: BLE001 - e.g. a protocol the engine does not know
                self.targets[agent_id] = exc
        claimed = {sample.id for sample in claim.samples}
        for task, old in list(self.inflight.items()):
            if old.id in claimed and not task.done():
                # We claimed it again: our older claim lapsed (its lease expired and the sample was
                # re-queued); only the new claim may call the agent and write.
                task.cancel()
        for agent_id, held in self.ahead.items():
            if any(sample.id in claimed for sample in held):
                self.ahead[agent_id] = collections.deque(s for s in held if s.id not in claimed)
        launched = 0
        for sample in claim.samples:
            if sample.ahead:
                self.ahead.setdefault(sample.agent_id, collections.deque()).append(sample)
                self.report.ahead += 1
            else:
                self._launch(sample)
                launched += 1
        return launched

    def _launch(self, sample: ClaimedSample) -> None:
        plan = self.plans[sample.run_id]
        target = self.targets[sample.agent_id]
        if isinstance(target, Exception):
            coro = self._bad_target(sample, plan, target)
        else:
            inline = not any(c.kind in BLOCKING_KINDS for c in plan.checks)
            if sample.scenario_index in plan.scenes:
                coro = self._scene_sample(sample, plan, target, inline)
            else:
                coro = execute_sample(sample, plan, target, self.client, evaluate_inline=inline)
        task = asyncio.ensure_future(coro)
        task.add_done_callback(self._on_done)
        self.inflight[task] = sample
        self.launched[task] = time.monotonic()
        self.report.claimed += 1

    def _handoffs(self) -> bool:
        """Whether a finished call's slot can go to a sample claimed ahead (see _start_ahead)."""
        return bool(self.waiting) and any(
            self.ahead.get(sample.agent_id) and self._slot_passes(sample, write)
            for sample, write in self.finished
        )

    def _slot_passes(self, sample: ClaimedSample, write: SampleWrite) -> bool:
        # A 429 reply's slot is not handed on (the agent asked us to slow down), nor a requeued one's.
        return sample.id in self.waiting and write.requeue_at is None and not write.saw_429

    async def _start_ahead(self) -> None:
        """Hand the slots of finished calls (not written yet: the agent's count still holds them) to
        samples claimed ahead for the same agent, and start those calls."""
        pairs: list[tuple[int, ClaimedSample]] = []
        for sample, write in self.finished:
            held = self.ahead.get(sample.agent_id)
            if held and self._slot_passes(sample, write):
                self.waiting.discard(sample.id)
                pairs.append((sample.id, held.popleft()))
        if not pairs:
            return
        try:
            started = await self.db.quick(queue.start_ahead, [sample for _, sample in pairs])
        except BaseException:
            for slot, sample in reversed(pairs):  # nothing started: as they were
                self.ahead[sample.agent_id].appendleft(sample)
                self.waiting.add(slot)
            raise
        for slot, sample in pairs:
            if sample.id in started:
                self._launch(dataclasses.replace(sample, executions=started[sample.id], ahead=False))
            else:  # cancelled or taken over meanwhile: its slot still frees with the write
                self.waiting.add(slot)

    def _ahead_wanted(self) -> tuple[dict[int, int], int]:
        """(per agent: how many more to claim ahead, room left in all): one per call in flight to it."""
        calls = collections.Counter(sample.agent_id for sample in self.inflight.values())
        wanted = {
            a: n - len(self.ahead.get(a, ())) for a, n in calls.items() if n > len(self.ahead.get(a, ()))
        }
        room = self.capacity - sum(len(held) for held in self.ahead.values())
        return (wanted, room) if room > 0 else ({}, 0)

    def _surplus_ahead(self, *, everything: bool) -> list[ClaimedSample]:
        """Samples claimed ahead beyond our calls to their agent (or all of them, once we stop claiming):
        nothing would start them."""
        if everything:
            return self._all_ahead()
        calls = collections.Counter(sample.agent_id for sample in self.inflight.values())
        surplus: list[ClaimedSample] = []
        for agent_id, held in self.ahead.items():
            while len(held) > calls.get(agent_id, 0):
                surplus.append(held.pop())
        return surplus

    def _all_ahead(self) -> list[ClaimedSample]:
        every = [sample for held in self.ahead.values() for sample in held]
        self.ahead.clear()
        return every

    async def _release(self, samples: list[ClaimedSample]) -> None:
        try:
            self.report.released += await self.db(queue.release_ahead, samples)
        except BaseException:
            for sample in samples:  # still ours: renewed, released again later
                self.ahead.setdefault(sample.agent_id, collections.deque()).append(sample)
            raise

    def _write_due(self, now: float, replies_due: bool) -> bool:
        """Write now: a freed slot waits for it, nothing is in flight, it waited long enough, or the
        replies paused and none is due (see WRITE_QUIET_S, REPLY_SLACK_S)."""
        if not self.finished:
            return False
        if self.waiting or not self.inflight or now - self.finished_at >= WRITE_MAX_AGE_S:
            return True
        return now - self.last_reply >= WRITE_QUIET_S and not replies_due

    def _replies_due(self, now: float) -> bool:
        """Whether a reply is due (a call launched no later than REPLY_SLACK_S after the newest call that
        ended is still out) and has been for less than WRITE_MAX_AGE_S: other database steps wait."""
        oldest = self.launched[next(iter(self.inflight))] if self.inflight else math.inf
        if oldest > self.replied_launch + REPLY_SLACK_S:
            self.due_since = None
            return False
        if self.due_since is None:
            self.due_since = now
        return now - self.due_since < WRITE_MAX_AGE_S

    async def _scene_sample(self, sample: ClaimedSample, plan: RunPlan, target: AgentTarget, inline: bool):
        """A sample of a scene: a fresh world stored for it, the agent called with that world, the
        world ended when the reply arrives and the scene's checks judged on it."""
        index = sample.scenario_index
        try:
            world_id, world, task = await self.db(
                worlds.begin_trial, version_id=plan.scenes[index], team_id=plan.team_id
            )
        except Exception as exc:  # noqa: BLE001 - e.g. a scene an engine upgrade no longer accepts
            log.exception("sample %s: could not build its world", sample.id)
            return services_failure(sample, plan, f"the scene's world could not be built: {exc}")
        attached = await self.db(
            queue.attach_world, sample_id=sample.id, claim=sample.claim, world_id=world_id
        )
        if not attached:  # cancelled or taken over meanwhile: no agent call
            await self.db(worlds.end_world, world_id, "stopped")
            raise asyncio.CancelledError
        base = plan.scenarios[index] if index < len(plan.scenarios) else {}
        scenario = {**base, "input": task, "messages": [{"role": "user", "content": task}], "world": world}

        async def end(reason: str):
            world = await self.db(worlds.end_world, world_id, reason)
            # Judge checks call a model: off the database thread and the event loop.
            return world, await asyncio.to_thread(worlds.judge_trial, world, team_id=plan.team_id)

        return await execute_sample(
            sample,
            plan,
            target,
            self.client,
            evaluate_inline=inline,
            scenario=scenario,
            trial=SceneTrial(world_id, end),
        )

    async def _bad_target(self, sample: ClaimedSample, plan: RunPlan, exc: Exception) -> SampleWrite:
        return services_failure(sample, plan, f"the agent cannot be called: {exc}")

    def _on_done(self, task: asyncio.Task) -> None:
        self._done.append(task)
        self._wake.set()

    async def _wait(self) -> None:
        if self._done:
            return
        if self.ahead_due:
            self.ahead_due = False
            await asyncio.sleep(0)  # the new calls send their requests first
            return
        if not self.inflight:
            await asyncio.sleep(self.poll_s)
            return
        # Wake on the first finished call; otherwise poll for new work (or just renew leases when full).
        timeout = self.heartbeat_s if len(self.inflight) >= self.capacity else self.poll_s * 5
        now = time.monotonic()
        # Or when a write held back (for the replies to pause, or while replies are due) or a claim held
        # back (replies due) is due all the same.
        moments = []
        if self.finished:
            moments += [self.last_reply + WRITE_QUIET_S, self.finished_at + WRITE_MAX_AGE_S]
        if self.due_since is not None:
            moments.append(self.due_since + WRITE_MAX_AGE_S)
        timeout = min([timeout, *(moment - now for moment in moments if moment > now)])
        self._wake.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), timeout)

    def _collect(self) -> None:
        done, self._done = self._done, []
        if done:
            self.last_reply = time.monotonic()
            if not self.finished:
                self.finished_at = self.last_reply
        for task in done:
            sample = self.inflight.pop(task, None)
            if sample is None:
                continue
            launched = self.launched.pop(task)
            if task.cancelled():
                self.report.dropped += 1
                continue
            self.replied_launch = max(self.replied_launch, launched)
            exc = task.exception()
            if exc is not None:  # execute_sample never raises; be safe anyway
                log.error("sample %s: executor crashed: %r", sample.id, exc)
                self.report.errors.append(repr(exc))
                continue
            self.finished.append((sample, task.result()))
            self.waiting.add(sample.id)

    async def _flush(self) -> None:
        # Everything that finished while we were busy is written together (one transaction).
        self._collect()
        if not self.finished:
            return
        batch = [write for _, write in self.finished]
        ids = [sample.id for sample, _ in self.finished]
        now = time.monotonic()
        recount = set(self.stale) if now >= self.recount_at else set()
        written = await self.db(queue.record_sample_results, batch, recount)
        del self.finished[: len(batch)]
        self.waiting.difference_update(ids)  # their slots are free in the agent's count now
        if self.finished:
            self.finished_at = time.monotonic()
        if recount:
            self.stale -= recount
            self.recount_at = now + SUMMARY_EVERY_S
        self.stale.update(write.run_id for write, ok in zip(batch, written, strict=True) if ok)
        self.report.written += sum(written)
        self.report.dropped += len(written) - sum(written)

    async def _recount(self) -> None:
        runs = set(self.stale)
        await self.db(queue.refresh_runs, runs)
        self.stale -= runs
        self.recount_at = time.monotonic() + SUMMARY_EVERY_S

    async def _heartbeat(self) -> None:
        # Finished samples waiting for their write (it failed, or is retried) keep their leases too.
        ahead = [sample for held in self.ahead.values() for sample in held]
        samples = list(self.inflight.values()) + [sample for sample, _ in self.finished] + ahead
        held = await self.db(queue.renew_leases, samples)
        for task, sample in list(self.inflight.items()):
            if sample.id not in held and not task.done():
                task.cancel()  # cancelled or taken over: stop calling the agent
        if any(sample.id not in held for sample in ahead):  # no longer ours: never started
            for agent_id, queued in self.ahead.items():
                self.ahead[agent_id] = collections.deque(s for s in queued if s.id in held)


def services_failure(sample: ClaimedSample, plan: RunPlan, message: str) -> SampleWrite:
    return _failure_write(sample, plan, AgentCallError(message), list(sample.previous_attempts))


def drain(
    *, idle_ms: int | None = None, max_seconds: float | None = None, worker: str | None = None
) -> DrainReport:
    """Run queued samples until there is no work (see the module docstring). Safe to run anywhere, any
    number of times at once: every write is guarded.

    ``idle_ms``: how long to wait for new work before returning (default EVALCONSOLE_DRAIN_IDLE_MS;
    0 in django-q2 sync mode). ``max_seconds``: stop claiming after this long (default: half the
    django-q2 timeout).
    """
    from django_q.conf import Conf

    if idle_ms is None:
        idle_ms = 0 if Conf.SYNC else int(settings.EVALCONSOLE_DRAIN_IDLE_MS)
    q_timeout = float(Conf.TIMEOUT or 600)
    claim_for = max_seconds if max_seconds is not None else q_timeout / 2
    hard = max(claim_for, q_timeout * 0.9)
    jobs: SimpleQueue = SimpleQueue()
    drain_ = _Drain(
        worker=worker or queue.worker_name(),
        db=_DB(jobs),
        idle_s=idle_ms / 1000,
        claim_for_s=claim_for,
        hard_s=hard,
    )
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _run_on_worker_loop(drain_, jobs)
    # Called from a thread that runs an event loop (e.g. Playwright's sync API), where Django refuses
    # sync database calls: serve them from a fresh thread, with its own connection.
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["report"] = _run_on_worker_loop(drain_, jobs)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
            box["error"] = exc
        finally:
            connections.close_all()

    thread = threading.Thread(target=target, name="runs-drain")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["report"]


def _run_on_worker_loop(drain_: _Drain, jobs: SimpleQueue) -> DrainReport:
    """Run the drain on the worker loop while this thread serves its database steps."""

    async def run() -> DrainReport:
        try:
            return await drain_.run()
        finally:
            jobs.put(None)  # this thread stops serving

    loop = _worker_loop()
    outcome = asyncio.run_coroutine_threadsafe(run(), loop)
    _serve(loop, jobs)
    return outcome.result()
