#!/usr/bin/env python
"""How much CPU an idle `make up` uses: scripts/up.sh (web server, worker, demo agent) on a fresh SQLite
database in a temp directory and free ports, left alone; the CPU time of every process it started,
summed over a window after it settled.

  .venv/bin/python bench/idle/bench_idle.py                 # 60 s window after 15 s to settle
  .venv/bin/python bench/idle/bench_idle.py --window 30

Prints each process (its command line cut short) and the total, in CPU-seconds and % of one core.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.common import cpu_seconds as cpu  # noqa: E402
from bench.common import free_port  # noqa: E402
from bench.common import process_tree as tree  # noqa: E402


def command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()[:70]
    except OSError:
        return "?"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--settle", type=float, default=15.0, help="seconds to wait after start")
    parser.add_argument("--window", type=float, default=60.0, help="seconds measured")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-idle-") as tmp:
        env = {
            **os.environ,
            "EVALCONSOLE_VAR_DIR": tmp,
            "DATABASE_URL": "",
            "PY": str(ROOT / ".venv" / "bin" / "python"),
            "PORT": str(free_port()),
            "DEMO_AGENT_PORT": str(free_port()),
        }
        subprocess.run([env["PY"], "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
        up = subprocess.Popen(
            ["bash", "scripts/up.sh"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            time.sleep(args.settle)
            before = {pid: cpu(pid) for pid in tree(up.pid)}
            time.sleep(args.window)
            after = {pid: cpu(pid) for pid in tree(up.pid)}
            total = 0.0
            for pid, end in sorted(after.items()):
                start = before.get(pid, 0.0) or 0.0
                if end is None:
                    continue
                used = end - start
                total += used
                if used > 0 or pid in before:
                    print(f"  {pid:>7} {used:6.2f} CPU-s  {command(pid)}")
            print(
                f"idle make up: {len(after)} processes, {total:.2f} CPU-s over {args.window:.0f} s = "
                f"{100 * total / args.window:.2f} % of one core"
            )
        finally:
            os.killpg(up.pid, signal.SIGTERM)
            up.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
