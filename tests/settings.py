"""Test settings: the real settings plus fast hashing, synchronous tasks and per-process test databases."""

import os

os.environ.setdefault("SECRET_KEY", "test-secret-key-not-for-production-use-0123456789abcdefghij")

from evalconsole.settings import *  # noqa: F401,F403,E402
from evalconsole.settings import DATABASES, MIDDLEWARE, Q_CLUSTER, VAR_DIR  # noqa: E402

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# A real worker started by tests/support/workers.py runs these settings with EVALCONSOLE_TEST_Q_SYNC=0.
Q_CLUSTER = {**Q_CLUSTER, "sync": os.environ.get("EVALCONSOLE_TEST_Q_SYNC", "1") != "0"}
# The test client builds its middleware for every Client; WhiteNoise's then lists and describes every static
# file again (~14 ms). This one finds them once per process (tests/support/static_files.py).
MIDDLEWARE = [
    "tests.support.static_files.FilesFoundOnceWhiteNoiseMiddleware"
    if name == "whitenoise.middleware.WhiteNoiseMiddleware" else name
    for name in MIDDLEWARE
]
EVALCONSOLE_JUDGE_API_KEY = ""
# Nothing listens there; judge tests start their own server.
EVALCONSOLE_JUDGE_BASE_URL = "http://127.0.0.1:9/v1"

# Each pytest process (xdist worker, or a developer's parallel run) gets its own test database, and the
# SQLite one is a file so that a real qcluster subprocess can open it.
_worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
_suffix = f"{_worker}_{os.getpid()}"
_db = DATABASES["default"]
if _db["ENGINE"].endswith("sqlite3"):
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    _db["TEST"] = {"NAME": str(VAR_DIR / f"test_{_suffix}.sqlite3")}
else:
    _db["TEST"] = {"NAME": f"test_evalconsole_{_suffix}"}
