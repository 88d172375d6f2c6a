"""worlds/engine is pure Python: no Django anywhere in it (as checks/kinds is)."""

import subprocess
import sys

from tests.layout.test_floors import REPO, django_imports


def test_worlds_engine_imports_no_django():
    assert (REPO / "worlds" / "engine" / "scene.py").is_file()
    assert django_imports(REPO, ["worlds/engine"]) == []


def test_importing_the_engine_loads_no_django_module():
    code = "import sys, worlds.engine; print(sorted(m for m in sys.modules if m.split('.')[0] == 'django'))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )
    assert out.stdout.strip() == "[]"
