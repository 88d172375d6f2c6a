"""Test databases copied from one migrated schema instead of migrated again in every pytest process.

Every xdist process used to run all the migrations into its own test database (about 5 s of CPU each).
Now the first process to need a database migrates it from zero as before and keeps a copy of it, the
*schema*, named by a digest of every migration file (and the Django version): var/test_schema-<digest>.sqlite3
for SQLite, a database test_evalconsole_schema_<digest> on PostgreSQL (copied with CREATE DATABASE ...
TEMPLATE). Every other process, in this run or a later one, starts from a copy and lets `migrate` find
nothing to do (it still runs, so a schema that is somehow behind is brought up to date, and the
post-migrate signals run as before). A changed migration file changes the digest: the next run migrates
from zero again. tests/monitors/test_layout_migration.py migrates real data back and forth in every run.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import shutil
from collections.abc import Iterator
from pathlib import Path

PREFIX = "test_schema-"


def migrations_digest() -> str:
    """A digest of every installed app's migration files, the Django version and the database engine."""
    import django
    from django.apps import apps
    from django.db import connection

    digest = hashlib.sha256(f"{django.get_version()} {connection.vendor}".encode())
    for app in sorted(apps.get_app_configs(), key=lambda config: config.label):
        for path in sorted(Path(app.path, "migrations").glob("*.py")):
            digest.update(f"{app.label}/{path.name}\0".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def setup_test_databases(verbosity: int):
    """setup_databases() for the default database, from the kept schema when there is one."""
    from django.db import connection

    if connection.vendor == "sqlite":
        return _setup_sqlite(verbosity)
    if connection.vendor == "postgresql":
        return _setup_postgresql(verbosity)
    return _setup(verbosity, keepdb=False)


def _setup(verbosity: int, keepdb: bool):
    from django.test.utils import setup_databases

    return setup_databases(verbosity=verbosity, interactive=False, aliases={"default"}, keepdb=keepdb)


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _setup_sqlite(verbosity: int):
    import sqlite3

    from django.db import connection

    test_name = Path(connection.settings_dict["TEST"]["NAME"])
    schema = test_name.parent / f"{PREFIX}{migrations_digest()}.sqlite3"
    with _file_lock(test_name.parent / f"{PREFIX}lock"):
        if not schema.exists():
            config = _setup(verbosity, keepdb=False)  # migrates from zero
            connection.close()
            partial = schema.with_suffix(".partial")
            with (
                contextlib.closing(sqlite3.connect(test_name)) as source,
                contextlib.closing(sqlite3.connect(partial)) as target,
            ):
                source.backup(target)
            partial.replace(schema)
            for old in schema.parent.glob(f"{PREFIX}*.sqlite3"):
                if old != schema:
                    old.unlink(missing_ok=True)
            return config
    shutil.copyfile(schema, test_name)
    return _setup(verbosity, keepdb=True)


def kept_sqlite_schema() -> Path | None:
    """The kept SQLite schema of this run's migrations (after ``django_db_setup``), or None: on PostgreSQL,
    or when no process has migrated yet. A copy is a database that ``migrate`` finds up to date."""
    from django.db import connection

    if connection.vendor != "sqlite":
        return None
    schema = Path(connection.settings_dict["TEST"]["NAME"]).parent / f"{PREFIX}{migrations_digest()}.sqlite3"
    return schema if schema.is_file() else None


def _setup_postgresql(verbosity: int):
    from django.db import connection

    creation = connection.creation
    schema = f"test_evalconsole_schema_{migrations_digest()}"
    test_name = creation._get_test_db_name()
    with creation._nodb_cursor() as cursor:
        # Every process of every run against this server waits here while one builds the schema.
        cursor.execute("SELECT pg_advisory_lock(hashtext('evalconsole test schema'))")
        try:
            cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [schema])
            if cursor.fetchone() is None:
                config = _setup(verbosity, keepdb=False)  # migrates from zero
                connection.close()
                cursor.execute(f'CREATE DATABASE "{schema}" TEMPLATE "{test_name}"')
                cursor.execute(
                    "SELECT datname FROM pg_database WHERE datname LIKE 'test_evalconsole_schema_%%'"
                    " AND datname <> %s", [schema]
                )
                for (old,) in cursor.fetchall():
                    with contextlib.suppress(Exception):  # still a template of another run: left
                        cursor.execute(f'DROP DATABASE IF EXISTS "{old}"')
                return config
            cursor.execute(f'DROP DATABASE IF EXISTS "{test_name}"')
            cursor.execute(f'CREATE DATABASE "{test_name}" TEMPLATE "{schema}"')
        finally:
            cursor.execute("SELECT pg_advisory_unlock(hashtext('evalconsole test schema'))")
    return _setup(verbosity, keepdb=True)


def teardown_test_databases(config, verbosity: int) -> None:
    """Drop this process's database (never the kept schema)."""
    from django.test.utils import teardown_databases

    teardown_databases(config, verbosity=verbosity, keepdb=False)
