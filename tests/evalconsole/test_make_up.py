"""`make up` stops, and leaves nothing behind, however it is stopped (issue 14, defect 3).

Each round starts a real `make up` (migrate, load_demo, web server, qcluster, demo agent) in a session of
its own, with free ports and its own var directory, waits until the web server and the worker run, then
signals make's whole process group as a service manager (SIGTERM) or a terminal's Ctrl-C (SIGINT) does.
Every process of the round carries a marker in its environment, so the test finds them all in /proc,
whatever process group they put themselves in.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.worker,
    pytest.mark.skipif(shutil.which("make") is None, reason="needs make"),
    pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="finds processes through /proc"),
]

ROOT = Path(__file__).resolve().parents[2]
MARKER = "EVALCONSOLE_UP_TEST"
# One round per way in the suite: each round is a whole `make up` (about 10 s of CPU), and the deadlock this
# guards against (django-q2 #346, a second signal to qcluster) showed in round 1 both ways before the fix.
# EVALCONSOLE_UP_ROUNDS=5 repeats them, to look for a rarer race.
ROUNDS = int(os.environ.get("EVALCONSOLE_UP_ROUNDS", "1"))
STOPPED_WITHIN_S = 15.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _processes(marker: str) -> list[str]:
    """'pid: command line' of every live process started with MARKER=marker in its environment."""
    needle = f"{MARKER}={marker}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            stat = (entry / "stat").read_text()
            if stat.rpartition(")")[2].split()[0] == "Z":  # a zombie waiting for its parent is gone
                continue
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        found.append(f"{entry.name}: {command.strip()}")
    return found


def _kill_all(marker: str) -> None:
    for line in _processes(marker):
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(line.split(":", 1)[0]), signal.SIGKILL)


def _default_signals() -> None:
    """As a terminal starts `make up`: SIGINT and SIGQUIT at their defaults. A test run started in the
    background by a shell without job control inherits them ignored, and an ignored signal stays
    ignored in every process below (bash cannot trap it), so Ctrl-C could not be tested at all."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def _start_make_up(var: Path, marker: str) -> tuple[subprocess.Popen, Path]:
    venv = Path(sys.prefix)  # the interpreter running the tests; the test never pip-installs
    env = {k: v for k, v in os.environ.items() if k not in {"DJANGO_SETTINGS_MODULE", "PYTHONPATH"}}
    env.update({
        MARKER: marker,
        "EVALCONSOLE_VAR_DIR": str(var),
        "DATABASE_URL": "",  # an SQLite file under var, whatever database the test run uses
        "STATIC_ROOT": str(var / "static"),
        "EVALCONSOLE_PRODUCTION": "false",
        "Q_LOG_LEVEL": "INFO",  # "Q Cluster ... running." tells the test the worker is up
    })
    log = var / f"up-{marker}.log"
    command = [
        "make", "-s", "-o", f"{venv}/.installed", "up", f"VENV={venv}",
        f"PORT={_free_port()}", f"DEMO_AGENT_PORT={_free_port()}",
    ]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            command, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True, preexec_fn=_default_signals,
        )
    return proc, log


def _wait_running(proc: subprocess.Popen, log: Path, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        # up.sh's banner, and django-q2's "Q Cluster <name> [evalconsole] running." (its workers are forked)
        if "evalconsole is running" in text and "] running." in text:
            return
        if proc.poll() is not None:
            pytest.fail(f"make up exited with {proc.returncode} before it ran:\n{text[-4000:]}")
        time.sleep(0.05)
    pytest.fail(f"make up not running after {timeout} s:\n{log.read_text(errors='replace')[-4000:]}")


@pytest.fixture(scope="module")
def var(tmp_path_factory, django_db_setup) -> Path:
    """One var directory for every round of both ways: after the first, migrate, load_demo and collectstatic
    have no work (what is tested, the stop, starts once all three servers run).

    The first round's database starts as a copy of the test run's migrated schema (SQLite runs; the same
    migrations, tests/support/test_databases.py), so its `migrate` finds nothing to do instead of migrating
    from zero (~6 CPU-s); load_demo and collectstatic run in full. On PostgreSQL runs, where no SQLite schema
    is kept, it migrates from zero as before."""
    from tests.support.test_databases import kept_sqlite_schema

    var = tmp_path_factory.mktemp("var")
    schema = kept_sqlite_schema()
    if schema is not None:
        shutil.copyfile(schema, var / "evalconsole.sqlite3")  # evalconsole/settings.py's file under var
    return var


@pytest.mark.xdist_group("make-up")  # both ways in one process (pytest.ini: --dist loadgroup), sharing `var`
@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT"], ids=["sigterm-to-group", "ctrl-c-to-group"])
def test_make_up_stops_completely_within_15_s(how, var):
    sig = getattr(signal, how)
    for round_number in range(1, ROUNDS + 1):
        marker = uuid.uuid4().hex
        proc, log = _start_make_up(var, marker)
        try:
            _wait_running(proc, log)
            os.killpg(proc.pid, sig)  # the whole group, as Ctrl-C or systemd's default KillMode=control-group
            signalled = time.monotonic()
            while _processes(marker) and time.monotonic() - signalled < STOPPED_WITHIN_S:
                time.sleep(0.1)
            left = _processes(marker)
            assert not left, (
                f"round {round_number}: {len(left)} process(es) still running {STOPPED_WITHIN_S:.0f} s after "
                f"{how} to make's process group:\n" + "\n".join(left)
                + "\n--- make up output ---\n" + log.read_text(errors="replace")[-3000:]
            )
            proc.wait(timeout=5)
        finally:
            _kill_all(marker)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)


def test_the_first_round_starts_from_a_copy_that_migrate_finds_up_to_date(django_db_setup, tmp_path):
    """What the `var` fixture copies: on SQLite, a database in which every migration is applied."""
    import sqlite3

    from django.db import connection
    from django.db.migrations.loader import MigrationLoader

    from tests.support.test_databases import kept_sqlite_schema

    schema = kept_sqlite_schema()
    if connection.vendor != "sqlite":
        assert schema is None
        return
    assert schema is not None
    copy = tmp_path / "evalconsole.sqlite3"
    shutil.copyfile(schema, copy)
    with contextlib.closing(sqlite3.connect(copy)) as db:
        applied = set(db.execute("SELECT app, name FROM django_migrations"))
    assert applied == set(MigrationLoader(None, ignore_no_migrations=True).graph.nodes)
