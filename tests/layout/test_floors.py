"""The house's floors: a package imports only from its own floor's package and the floors below.

This list is the one place the floors are written (README "Layout" draws it). A pure module imports no
Django at all: the check kinds and the outcome rules run anywhere, the worker and the CLI included.
"""

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

FLOORS = [
    "core",  # errors, immutability, crypto, HTMX, API and view helpers
    "teams",  # teams, memberships, roles and the permission rule, API tokens, judge budgets
    "agents",  # agents and workforces, their protocols, URL policy, the demo agent
    "checks",  # the check library, tests, check kinds, the judge client
    "worlds",  # scenes and the simulated tools they are played in (engine/ is pure)
    "runs",  # runs, samples, results, the worker
    "monitors",  # live tasks, monitors, one-off evaluations, retention
    "reviews",  # human review queues, labels, judge calibration (agreement.py is pure)
    "evalconsole",  # the roof: settings, URLs, the API router, the CLI and commands
]
PURE = [
    "core/ids.py",
    "core/jsonvalue.py",
    "core/registry.py",
    "checks/kinds",
    "runs/outcomes.py",
    "worlds/engine",
    "reviews/agreement.py",
]
NOT_DJANGO_FREE = ("django", "rest_framework", "django_filters", "django_htmx", "django_q", "drf_spectacular")


def _modules(path: Path):
    files = [path] if path.is_file() else sorted(path.rglob("*.py"))
    for file in files:
        for node in ast.walk(ast.parse(file.read_text(), str(file))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                yield file, node.lineno, node.module
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    yield file, node.lineno, alias.name


def upward_imports(root: Path, floors: list[str]) -> list[str]:
    """Every `file:line: package -> module` where a package imports from a floor above its own."""
    rank = {name: i for i, name in enumerate(floors)}
    found = []
    for package in floors:
        if not (root / package).is_dir():
            continue
        for file, line, module in _modules(root / package):
            top = module.split(".")[0]
            if top in rank and rank[top] > rank[package]:
                found.append(f"{file.relative_to(root)}:{line}: {package} -> {module}")
    return found


def django_imports(root: Path, paths: list[str]) -> list[str]:
    return [
        f"{file.relative_to(root)}:{line}: {module}"
        for path in paths
        for file, line, module in _modules(root / path)
        if module.split(".")[0] in NOT_DJANGO_FREE
    ]


def test_no_package_imports_from_a_higher_floor():
    assert upward_imports(REPO, FLOORS) == []


def test_the_pure_domain_imports_no_django():
    assert django_imports(REPO, PURE) == []


def test_every_app_package_has_a_floor():
    apps = {p.parent.name for p in REPO.glob("*/apps.py")}
    assert apps <= set(FLOORS), f"put {sorted(apps - set(FLOORS))} on a floor in FLOORS"


@pytest.fixture
def house(tmp_path):
    for package in ("core", "runs", "checks/kinds"):
        (tmp_path / package).mkdir(parents=True)
    (tmp_path / "core" / "errors.py").write_text("class DomainError(Exception):\n    pass\n")
    return tmp_path


def test_an_import_from_a_higher_floor_is_found(house):
    (house / "core" / "helpers.py").write_text("import json\n\n\ndef f():\n    from runs.models import Run\n")
    (house / "runs" / "models.py").write_text("from core.errors import DomainError\n")
    assert upward_imports(house, ["core", "runs"]) == ["core/helpers.py:5: core -> runs.models"]


def test_a_django_import_in_the_pure_domain_is_found(house):
    (house / "checks" / "kinds" / "kind.py").write_text("from django.conf import settings\n")
    assert django_imports(house, ["checks/kinds"]) == ["checks/kinds/kind.py:1: django.conf"]
