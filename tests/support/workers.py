"""Real django-q2 workers for tests: ``manage.py qcluster`` subprocesses against the TEST database.

Use from any test module::

    pytest_plugins = ["tests.support.workers"]          # or: from tests.support.workers import qcluster

    @pytest.mark.worker
    def test_something(qcluster):                        # one worker process, stopped after the test
        ...launch a run... ; wait_for(lambda: ...)

    def test_two(qcluster_factory):                      # several, or with settings in the environment
        a = qcluster_factory(env={"EVALCONSOLE_SAMPLE_LEASE_S": "2"})
        a.kill()                                         # SIGKILL the whole process group (crash test)

Outside fixtures: ``with start_qcluster(env=...) as worker: ...`` (needs a committed database, i.e.
``transactional_db`` or ``live_server``, and django-q2 sync mode off in the test process: the
fixtures do ``monkeypatch.setattr(Conf, "SYNC", False)``).

The worker runs tests.settings with EVALCONSOLE_TEST_Q_SYNC=0 and DATABASE_URL pointing at the test
database (SQLite file or PostgreSQL, whichever the test run uses), so it sees the rows the test
commits and the test sees what it writes. Its log is kept in a temp file (``worker.log()``) and
printed when a test fails with it running.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

ROOT = Path(__file__).resolve().parents[2]
READY_TEXT = "running"  # django-q2 logs "Q Cluster <name> running." at INFO level

__all__ = [
    "QclusterProcess",
    "database_url",
    "qcluster",
    "qcluster_factory",
    "run_finished",
    "start_qcluster",
    "wait_for",
]


def database_url(alias: str = "default") -> str:
    """A DATABASE_URL for the database this test process is using now (the test database)."""
    from django.db import connections

    d = connections[alias].settings_dict
    if d["ENGINE"].endswith("postgresql"):
        user = quote(d.get("USER") or "", safe="")
        password = quote(d.get("PASSWORD") or "", safe="")
        auth = f"{user}:{password}@" if password else (f"{user}@" if user else "")
        return f"postgresql://{auth}{d.get('HOST') or '127.0.0.1'}:{d.get('PORT') or 5432}/{d['NAME']}"
    name = str(d["NAME"])
    if name == ":memory:" or name.startswith("file:"):
        raise RuntimeError(
            "a worker process cannot open an in-memory SQLite test database; set DATABASES['default']['TEST']"
            "['NAME'] to a file (tests/settings.py does)"
        )
    return f"sqlite:///{name}"


class QclusterProcess:
    """One ``manage.py qcluster`` (a process group: the cluster forks its workers)."""

    def __init__(self, proc: subprocess.Popen, log_path: Path) -> None:
        self.proc = proc
        self.log_path = log_path

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def wait_ready(self, timeout: float = 20.0) -> QclusterProcess:
        """Wait until the cluster logs that it runs (its workers are forked and polling)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if READY_TEXT in self.log():
                return self
            if not self.alive():
                raise RuntimeError(f"qcluster exited with {self.proc.returncode}:\n{self.log()[-4000:]}")
            time.sleep(0.02)
        raise TimeoutError(f"qcluster not ready after {timeout} s:\n{self.log()[-4000:]}")

    def _signal_group(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, sig)

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM (django-q2 finishes nothing new and exits), SIGKILL if it takes too long."""
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)  # the sentinel stops its own workers
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self._reap_group()

    def kill(self) -> None:
        """SIGKILL the cluster and every worker it forked, as a crash would."""
        self._signal_group(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)
        self._reap_group()

    def _reap_group(self) -> None:
        # Children of a killed parent are orphans in the same group: make sure none is left.
        self._signal_group(signal.SIGKILL)

    def __enter__(self) -> QclusterProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_qcluster(
    *, env: dict[str, str] | None = None, workers: int = 1, ready: bool = True, timeout: float = 20.0
) -> QclusterProcess:
    """Start ``manage.py qcluster`` on the current test database and (by default) wait until it runs.

    ``env`` adds/overrides environment variables (e.g. ``EVALCONSOLE_SAMPLE_LEASE_S``);
    ``workers`` is the number of worker processes in the cluster.
    """
    full_env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "DJANGO_SETTINGS_MODULE": os.environ.get("DJANGO_SETTINGS_MODULE", "tests.settings"),
        "EVALCONSOLE_TEST_Q_SYNC": "0",
        "EVALCONSOLE_WORKERS": str(workers),
        "Q_LOG_LEVEL": "INFO",
        "PYTHONUNBUFFERED": "1",
        **(env or {}),
    }
    fd, name = tempfile.mkstemp(prefix="qcluster-", suffix=".log")
    log = os.fdopen(fd, "w")
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "qcluster", "--skip-checks"],  # checks cost ~1.5 s
        cwd=ROOT,
        env=full_env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    log.close()
    worker = QclusterProcess(proc, Path(name))
    if ready:
        try:
            worker.wait_ready(timeout)
        except BaseException:
            worker.kill()
            raise
    return worker


def wait_for(
    predicate: Callable[[], object],
    *,
    timeout: float = 20.0,
    interval: float = 0.02,
    message: str | Callable[[], str] = "condition",
) -> object:
    """Poll ``predicate`` until it returns something truthy; raise AssertionError after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            text = message() if callable(message) else message
            raise AssertionError(f"timed out after {timeout} s waiting for {text}")
        time.sleep(interval)


def run_finished(run_id: int, timeout: float = 20.0):
    """The Run once a worker has completed or cancelled it; on a timeout the error lists its samples."""
    from runs.models import Run, Sample

    def done():
        run = Run.objects.get(pk=run_id)
        return run if run.status in ("completed", "cancelled") else None

    return wait_for(
        done,
        timeout=timeout,
        message=lambda: (
            f"run {run_id} to finish: "
            f"{list(Sample.objects.filter(run_id=run_id).values_list('status', 'error'))}"
        ),
    )


@pytest.fixture
def qcluster_factory(transactional_db, monkeypatch, request) -> Iterator[Callable[..., QclusterProcess]]:
    """``start(env=..., workers=1)`` → a started QclusterProcess; all are stopped after the test."""
    from django_q.conf import Conf

    monkeypatch.setattr(Conf, "SYNC", False)  # tests.settings runs tasks inline; a real worker must get them
    started: list[QclusterProcess] = []

    def start(**kwargs) -> QclusterProcess:
        worker = start_qcluster(**kwargs)
        started.append(worker)
        return worker

    yield start
    failed = getattr(request.node, "rep_call", None)
    for worker in started:
        worker.kill()  # fast; a graceful stop takes ~2-3 s and the test database is reset anyway
        if failed is not None and failed.failed:
            sys.stderr.write(f"\n--- qcluster {worker.pid} log ---\n{worker.log()[-6000:]}\n")
        with contextlib.suppress(OSError):
            worker.log_path.unlink()


@pytest.fixture
def qcluster(qcluster_factory) -> QclusterProcess:
    """One running qcluster (one worker process) on the test database for this test."""
    return qcluster_factory()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    # Lets the fixtures above print the worker log when the test body failed.
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item.rep_call = report
