"""Without Chromium, the browser tests say why they were skipped, once, at the end (issue 14, defect 16)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_missing_chromium_is_explained_in_one_line_at_the_end(tmp_path):
    absent = tmp_path / "no-such-dir" / "chromium"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "DJANGO_SETTINGS_MODULE"))}
    env.update(EVALCONSOLE_CHROMIUM=str(absent), PYTHONPATH=str(ROOT))
    # The browser tests as `make test` runs them (one pytest run), on the folders that hold them.
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-m", "browser", "tests/browser",
         "tests/monitors/test_browser.py"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.strip().splitlines()
    skipped = int(re.search(r"(\d+) skipped", lines[-1]).group(1))
    assert skipped >= 4, result.stdout
    expected = f"{skipped} browser tests skipped: no Chromium at {absent}; apt-get install chromium"
    assert lines[-2] == expected, result.stdout  # the line just above pytest's "N skipped in 1.2s"
    assert result.stdout.count("no Chromium") == 1, result.stdout
