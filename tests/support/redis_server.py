"""A throwaway Redis server (Debian's redis-server) on a free loopback port, for the tests that run
the workers on django-q2's Redis broker. ``.ci/run`` installs redis-server and sets
EVALCONSOLE_REQUIRE_REDIS=1, so there a missing server fails the tests instead of skipping them."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator

import pytest

from tests.support.raw_server import free_port

__all__ = ["redis_url"]


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    binary = shutil.which("redis-server")
    if binary is None:
        message = "redis-server is not installed (Debian: apt-get install redis-server)"
        if os.environ.get("EVALCONSOLE_REQUIRE_REDIS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="redis-") as work:
        proc = subprocess.Popen(
            [
                binary,
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                work,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 10
            while True:
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=0.2) as conn:
                        conn.sendall(b"PING\r\n")
                        if conn.recv(16).startswith(b"+PONG"):
                            break
                except OSError:
                    pass
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError(f"redis-server did not start on port {port}")
                time.sleep(0.05)
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            proc.terminate()
            proc.wait(timeout=10)
