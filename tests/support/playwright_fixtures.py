"""Playwright and its browser as fixtures of the scope a conftest chooses (pytest-playwright: per session).

While it is started, Playwright's sync API marks its event loop as running in the main thread, and
asyncio.run() in any later test of that process would refuse to start; so it is started per test module
(tests/conftest.py) or per test package (tests/browser/conftest.py: that folder's modules run one after
the other in one process, as one xdist group, and share one Playwright and one Chromium), and stopped when
the module or package ends. These replace the plugin's fixtures of the same names (and those that need
`playwright`) and do what they do.
"""

from __future__ import annotations

import json

import pytest


def _playwright(_pw_api_request_contexts):
    import asyncio

    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    if _pw_api_request_contexts:
        _pw_api_request_contexts.instrument(pw)
    yield pw
    pw.stop()
    assert asyncio._get_running_loop() is None, "Playwright left its event loop running"


def _browser_type(playwright, browser_name):
    return getattr(playwright, browser_name)


def _launch_browser(browser_type_launch_args, browser_type, connect_options):
    def launch(**kwargs):
        options = {**browser_type_launch_args, **kwargs}
        if connect_options:
            headers = {
                "x-playwright-launch-options": json.dumps(options), **(connect_options.get("headers") or {})
            }
            return browser_type.connect(**{**connect_options, "headers": headers})
        return browser_type.launch(**options)

    return launch


def _browser(launch_browser):
    browser = launch_browser()
    yield browser
    browser.close()


def playwright_fixtures(scope: str) -> tuple:
    """(playwright, browser_type, launch_browser, browser) fixtures of `scope`, for a conftest to bind."""
    return tuple(
        pytest.fixture(scope=scope, name=name)(function)
        for name, function in (
            ("playwright", _playwright),
            ("browser_type", _browser_type),
            ("launch_browser", _launch_browser),
            ("browser", _browser),
        )
    )
