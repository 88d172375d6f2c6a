"""The `evalconsole` CLI as CI runs it: the installed console script's code in a separate process."""

from __future__ import annotations

import os
import subprocess
import sys


def run_cli(*args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """`python -m evalconsole.cli *args` with no EVALCONSOLE_* variables but those in `env`."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("EVALCONSOLE_")}
    return subprocess.run(
        [sys.executable, "-m", "evalconsole.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**base, **(env or {})},
    )
