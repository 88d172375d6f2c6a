"""Settings from the environment, and production settings that pass `check --deploy`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from evalconsole.settings import database_from_url, env_bool, env_int

ROOT = Path(__file__).resolve().parents[2]


def test_database_url_parsing():
    pg = database_from_url("postgresql://app:p%40ss@db.local:5433/evalconsole")
    assert (pg["ENGINE"], pg["NAME"], pg["USER"], pg["PASSWORD"], pg["HOST"], pg["PORT"]) == (
        "django.db.backends.postgresql", "evalconsole", "app", "p@ss", "db.local", "5433")
    lite = database_from_url("sqlite:////tmp/x.sqlite3")
    assert lite["NAME"] == "/tmp/x.sqlite3" and "WAL" in lite["OPTIONS"]["init_command"]
    with pytest.raises(ImproperlyConfigured, match="DATABASE_URL"):
        database_from_url("mysql://x/y")


def test_env_helpers_reject_bad_values(monkeypatch):
    monkeypatch.setenv("X_BOOL", "maybe")
    with pytest.raises(ImproperlyConfigured, match="X_BOOL"):
        env_bool("X_BOOL")
    monkeypatch.setenv("X_INT", "ten")
    with pytest.raises(ImproperlyConfigured, match="X_INT"):
        env_int("X_INT", 1)
    monkeypatch.setenv("X_INT", "0")
    with pytest.raises(ImproperlyConfigured, match="at least 1"):
        env_int("X_INT", 1, minimum=1)


def _manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DJANGO_SETTINGS_MODULE", "SECRET_KEY", "DEBUG", "DJANGO_ALLOW_ASYNC_UNSAFE"}
    }
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env={**clean, **env},
                          capture_output=True, text=True, timeout=120)


def test_production_settings_pass_check_deploy(tmp_path):
    result = _manage(
        "check", "--deploy", "--fail-level", "WARNING",
        EVALCONSOLE_PRODUCTION="true", SECRET_KEY="x" * 20 + "-Production-Secret-Key-0123456789-abcdef",
        ALLOWED_HOSTS="evalconsole.example.com", DATABASE_URL=f"sqlite:///{tmp_path}/db.sqlite3",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_production_requires_a_secret_key(tmp_path):
    result = _manage("check", EVALCONSOLE_PRODUCTION="true", DATABASE_URL=f"sqlite:///{tmp_path}/db.sqlite3")
    assert result.returncode != 0
    assert "SECRET_KEY: required" in result.stderr
