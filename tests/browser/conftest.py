"""Browser tests: Debian's Chromium driven by Playwright, a live server, and a real qcluster worker.

Never `playwright install` (no download here): the launch args point at /usr/bin/chromium
(../shared/recipes/CI-SERVICES.md section 3).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.playwright_fixtures import playwright_fixtures
from tests.support.workers import pytest_runtest_makereport, qcluster, qcluster_factory  # noqa: F401

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's sync API runs an event loop

CHROMIUM = os.environ.get("EVALCONSOLE_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ROOT = Path(__file__).resolve().parents[2]
# Every run saves screenshots under var/screenshots/ (git-ignored) to look at; with
# EVALCONSOLE_UPDATE_SCREENSHOTS=1 they replace the README's copies in docs/screenshots/.
SCREENSHOTS = (
    ROOT / "docs" / "screenshots" if os.environ.get("EVALCONSOLE_UPDATE_SCREENSHOTS") == "1"
    else ROOT / "var" / "screenshots"
)


def pytest_collection_modifyitems(config, items):
    if not Path(CHROMIUM).exists():
        skip = pytest.mark.skip(reason=f"no Chromium at {CHROMIUM} (apt-get install chromium)")
        for item in items:
            if "tests/browser/" in str(item.fspath):
                item.add_marker(skip)


# One Playwright and one Chromium for every module of this folder (they run in one process, one after the
# other: one xdist group, tests/conftest.py), stopped after the folder's last test.
playwright, browser_type, launch_browser, browser = playwright_fixtures("package")


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    return {
        **browser_type_launch_args,
        "executable_path": CHROMIUM,
        "args": [*browser_type_launch_args.get("args", []), *ARGS],
    }


@pytest.fixture(scope="module")  # as tests/conftest.py's, which needs a Playwright per module
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": {"width": 1280, "height": 860}, "locale": "en-GB"}


@pytest.fixture
def shot(page):
    """shot("run") saves SCREENSHOTS/run.png (the whole page)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def save(name: str, *, full_page: bool = True) -> Path:
        path = SCREENSHOTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=full_page, animations="disabled")
        return path

    return save


@pytest.fixture
def log_in(page, live_server):
    def go(username: str, password: str) -> None:
        page.goto(f"{live_server.url}/login/")
        page.get_by_label("Username").fill(username)
        page.get_by_label("Password").fill(password)
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(f"{live_server.url}/agents/")

    return go
