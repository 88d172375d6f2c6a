"""Property-based run of schemathesis against the live OpenAPI schema: no 5xx, nothing off-schema.

The schemathesis CLI (installed with the test extras) runs against pytest-django's live_server with an
admin's token, a bounded number of generated requests per operation (valid and invalid data), and these
checks: not_a_server_error, status_code_conformance, content_type_conformance,
response_headers_conformance, response_schema_conformance. The seed is fixed so CI is reproducible; set
SCHEMATHESIS_SEED / SCHEMATHESIS_MAX_EXAMPLES to explore further.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CHECKS = ",".join(
    [
        "not_a_server_error",
        "status_code_conformance",
        "content_type_conformance",
        "response_headers_conformance",
        "response_schema_conformance",
    ]
)


def _schemathesis() -> list[str]:
    found = shutil.which("schemathesis", path=str(Path(sys.executable).parent)) or shutil.which(
        "schemathesis"
    )
    if found is None:
        pytest.fail("schemathesis is not installed: pip install -e '.[test]'")
    return [found]


@pytest.fixture
def seeded(transactional_db, team, admin_user, member, agent, monkeypatch):
    """One of every object for generated ids to land on, and a token that schemathesis cannot revoke."""
    from checks import services as checks
    from runs import services as runs
    from teams.services import issue_token
    from teams.throttling import TokenRateThrottle

    monkeypatch.setattr(TokenRateThrottle, "THROTTLE_RATES", {"token": "100000/min"})
    check = checks.create_check(
        agent=agent, by=member, name="Shipped", kind="text_includes", config={"text": "x"}
    )
    test_set = checks.create_test_set(agent=agent, by=member, name="Orders")
    test = checks.create_test(
        test_set=test_set,
        by=member,
        name="Status",
        scenarios=[{"input": "EC-1042?"}],
        checks=[{"check": check.pk}],
    )
    runs.launch_run(test=test, by=member)
    return issue_token(user=admin_user, name="schemathesis").secret


def test_api_conforms_to_its_schema(live_server, seeded, tmp_path):
    max_examples = os.environ.get("SCHEMATHESIS_MAX_EXAMPLES", "10")
    seed = os.environ.get("SCHEMATHESIS_SEED", "20261130")
    command = [
        *_schemathesis(),
        "run",
        f"{live_server.url}/api/schema/",
        "--header",
        f"Authorization: Bearer {seeded}",
        "--checks",
        CHECKS,
        "--phases",
        "examples,fuzzing",
        "--max-examples",
        max_examples,
        "--seed",
        seed,
        "--workers",
        "2",
        "--request-timeout",
        "20",
        # How fast the CLI generates data says nothing about the API, and on a loaded machine its too_slow
        # health check failed a run whose 651 cases all passed (PostgreSQL, load 17).
        "--suppress-health-check=too_slow",
        # Revoking its own token would turn the rest of the run into 401s (revocation has its own tests).
        "--exclude-path-regex",
        r"^/api/v1/tokens/\{id\}/$",
        "--no-color",
    ]
    result = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env={**os.environ, "SCHEMATHESIS_TELEMETRY": "false", "NO_COLOR": "1"},
    )
    output = result.stdout + result.stderr
    summary = re.search(r"(\d+) generated, (.*)", output)
    print(summary.group(0) if summary else output[-2000:])
    assert result.returncode == 0, output[-8000:]
    tested = re.search(r"Tested: (\d+)", output)
    assert tested and int(tested.group(1)) >= 40, output[-3000:]  # every operation but token revocation
