"""A reader that goes away (`evalconsole scene explain results/ | head`) ends the command quietly."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_closed_stdout_ends_the_command_with_141_and_no_traceback():
    process = subprocess.Popen(
        [sys.executable, "-m", "evalconsole.cli", "scene", "validate", "worlds/scenes/support-export.yaml"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    process.stdout.close()  # the reader is gone before the command writes its line
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=60) == 141
    assert stderr == ""


def test_an_open_stdout_still_gets_the_whole_answer():
    done = subprocess.run(
        [sys.executable, "-m", "evalconsole.cli", "scene", "validate", "worlds/scenes/support-export.yaml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0
    assert done.stdout.startswith("worlds/scenes/support-export.yaml: ok: scene support-export")
