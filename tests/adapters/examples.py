"""The adapters' example agent servers as real subprocesses on loopback, for end-to-end tests.

    with ExampleServer.start("python", secret="s3cret") as server:   # or "ai-sdk"
        server.url                                                   # http://127.0.0.1:PORT

Each example prints one line ``listening on http://HOST:PORT`` on stdout once it accepts requests
(started with ``--port 0``: any free port) and exits with status 0 on SIGTERM. The AI SDK example
imports the package's build output (``dist/``): :func:`ensure_ai_sdk_built` installs the npm
dependencies when ``node_modules`` is missing and runs ``npm run build`` when ``dist`` is missing or
older than the sources, under a lock so parallel pytest processes do not build over each other.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
AI_SDK = ROOT / "adapters" / "ai-sdk"
PYTHON_EXAMPLE = ROOT / "adapters" / "python" / "examples" / "serve.py"
LISTENING = re.compile(r"^listening on (http://\S+)$")
ADAPTERS = ("ai-sdk", "python")

__all__ = ["ADAPTERS", "ExampleServer", "ensure_ai_sdk_built"]


def _newest_mtime(paths: list[Path]) -> float:
    newest = 0.0
    for path in paths:
        files = path.rglob("*") if path.is_dir() else [path]
        for file in files:
            if file.is_file():
                newest = max(newest, file.stat().st_mtime)
    return newest


def _dist_is_fresh() -> bool:
    dist = AI_SDK / "dist"
    built = [f.stat().st_mtime for f in dist.rglob("*.js")] if dist.is_dir() else []
    if not (dist / "index.js").is_file() or not built:
        return False
    sources = [AI_SDK / name for name in ("src", "package.json", "package-lock.json", "tsconfig.json")]
    return min(built) >= _newest_mtime(sources)


def _npm(*args: str, timeout: float = 600) -> None:
    result = subprocess.run(
        ["npm", *args], cwd=AI_SDK, capture_output=True, text=True, timeout=timeout,
        env={**os.environ, "npm_config_update_notifier": "false"},
    )
    if result.returncode != 0:
        raise RuntimeError(f"`npm {' '.join(args)}` in {AI_SDK} failed ({result.returncode}):\n"
                           f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}")


def ensure_ai_sdk_built() -> None:
    """Make ``node examples/serve.mjs`` runnable; skip (with the reason) only without node or npm."""
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"the AI SDK adapter's example needs Node.js: {' and '.join(missing)} not found on PATH")
    digest = hashlib.sha1(str(AI_SDK).encode()).hexdigest()[:12]
    lock_path = Path(tempfile.gettempdir()) / f"evalconsole-ai-sdk-build-{digest}.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another pytest process may be building right now
        if not (AI_SDK / "node_modules").is_dir():
            _npm("ci", "--no-audit", "--no-fund", "--loglevel=error")
        if not _dist_is_fresh():
            _npm("run", "build")


class ExampleServer:
    """One example agent server process (its own process group), stopped with SIGTERM."""

    def __init__(self, adapter: str, proc: subprocess.Popen, stderr_path: Path) -> None:
        self.adapter = adapter
        self.proc = proc
        self.stderr_path = stderr_path
        self.url = ""
        self.returncode: int | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._drain_stdout, daemon=True).start()

    @classmethod
    def start(cls, adapter: str, *, secret: str | None = None, timeout: float = 30.0) -> ExampleServer:
        """Start the ``adapter`` example on port 0 (``--secret`` when given; EVALCONSOLE_SECRET is unset)."""
        env = {k: v for k, v in os.environ.items() if k not in ("EVALCONSOLE_SECRET", "PORT")}
        env["PYTHONUNBUFFERED"] = "1"
        if adapter == "ai-sdk":
            ensure_ai_sdk_built()
            command, cwd = ["node", "examples/serve.mjs", "--port", "0"], AI_SDK
        elif adapter == "python":
            command, cwd = [sys.executable, str(PYTHON_EXAMPLE), "--port", "0"], ROOT
        else:
            raise ValueError(f"unknown adapter {adapter!r}")
        if secret is not None:
            command += ["--secret", secret]
        fd, name = tempfile.mkstemp(prefix=f"example-{adapter}-", suffix=".log")
        with os.fdopen(fd, "w") as stderr:
            proc = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=stderr, text=True, start_new_session=True)
        server = cls(adapter, proc, Path(name))
        try:
            server._wait_listening(timeout)
        except BaseException:
            server.kill()
            raise
        return server

    def _drain_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:  # read to EOF so the pipe never fills
            self._lines.put(line.rstrip("\n"))
        self._lines.put(None)

    def _wait_listening(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        seen: list[str] = []
        while True:
            try:
                line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise TimeoutError(f"{self.adapter} example printed no 'listening on' line in {timeout} s; "
                                   f"stdout {seen!r}, stderr:\n{self.stderr()}") from None
            if line is None:
                self.proc.wait(timeout=5)
                raise RuntimeError(f"{self.adapter} example exited with {self.proc.returncode} before "
                                   f"listening; stdout {seen!r}, stderr:\n{self.stderr()}")
            match = LISTENING.match(line)
            if match:
                self.url = match.group(1)
                return
            seen.append(line)

    def stderr(self) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM and wait; SIGKILL the group if it does not exit. Returns the SIGTERM exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.returncode = self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.returncode = None
                self.kill()
        else:
            self.returncode = self.proc.returncode
        return self.returncode

    def kill(self) -> None:
        if self.proc.poll() is not None:
            return  # reaped: its group id may belong to someone else by now; the examples fork nothing
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.stderr_path.unlink()

    def __enter__(self) -> ExampleServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self.close()
