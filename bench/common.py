"""What the Django benchmarks share: a free loopback port, the console processes they start and the
objects they measure with.

Import it once the repository root is on ``sys.path`` (``from bench.common import ...``); the
object helpers need Django set up.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# The tool_usage config both benchmarks check: lookup_order was called.
LOOKUP_ORDER_CALLED = {"tool": "lookup_order", "mode": "at_least", "count": 1}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def process_tree(root: int) -> list[int]:
    """``root`` and every live process below it (read from /proc), parents before their children."""
    kids: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                parent = int(Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError):
                continue
            kids.setdefault(parent, []).append(int(name))
    out, stack = [], [root]
    while stack:
        pid = stack.pop()
        out.append(pid)
        stack += kids.get(pid, [])
    return out


def cpu_seconds(pid: int) -> float | None:
    """CPU seconds (user + system) the process has used so far; None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError):
        return None


class Proc:
    """A process (runserver, qcluster, the fake agent) in a session of its own, run from the repository
    root, its output in a log file; ready once ``ready`` shows in the log. One that does not start in
    ``timeout`` seconds is stopped and the benchmark ends with its log's tail."""

    def __init__(
        self, argv: list[str], env: dict[str, str], log_path: Path, ready: str, timeout: float = 90
    ) -> None:
        self.log_path = log_path
        self.fh = open(log_path, "w")  # noqa: SIM115 - closed in stop()
        self.p = subprocess.Popen(
            argv, cwd=ROOT, env=env, stdout=self.fh, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.monotonic() + timeout
        while ready not in log_path.read_text(errors="replace"):
            if self.p.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise SystemExit(
                    f"{argv[1:3]} did not start:\n{log_path.read_text(errors='replace')[-3000:]}"
                )
            time.sleep(0.02)

    def stop(self) -> None:
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)  # once: a second one can deadlock django-q2 (scripts/up.sh)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.p.wait(15)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.p.pid, signal.SIGKILL)  # what is left of its session (the worker's pool)
        self.fh.close()


def tree_cpu_s(root: int) -> float:
    """CPU seconds (user + system) used so far by a process and its live descendants."""
    return sum(cpu_seconds(pid) or 0.0 for pid in process_tree(root))


def admin_and_agent(*, team: str, username: str, agent: str, **agent_fields):
    """(user, agent): a new team ``team`` with ``username`` as its admin, and an agent of it called
    ``agent`` at a loopback URL nobody serves (a benchmark points it elsewhere or never calls it)."""
    from agents.services import create_agent
    from teams.services import add_member, create_team, get_or_create_user

    user, _ = get_or_create_user(username=username)
    created = create_team(name=team)
    add_member(team=created, user=user, role="admin")
    return user, create_agent(
        team=created, by=user, name=agent, endpoint_url="http://127.0.0.1:9/agent", **agent_fields
    )


def create_checks(agent, by, specs: Iterable[tuple[str, str, dict]]) -> list:
    """One check of ``agent`` per ``(name, kind, config)``, in order."""
    from checks.services import create_check

    return [
        create_check(agent=agent, by=by, name=name, kind=kind, config=config) for name, kind, config in specs
    ]
