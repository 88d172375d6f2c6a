"""The API docs (Swagger UI at /api/docs/, ReDoc at /api/redoc/) load nothing from the internet.

Every request the page makes is routed through the test: one for another host is recorded and aborted,
so the test sees what a browser without internet access would miss (issue 14, defect 17).
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("path", ["/api/docs/", "/api/redoc/"], ids=["swagger-ui", "redoc"])
def test_api_docs_load_nothing_from_outside_the_server(page: Page, live_server, path):
    outside: list[str] = []

    def route(r):
        url = r.request.url
        if url.startswith(live_server.url) or url.startswith(("data:", "blob:")):
            r.continue_()
        else:
            outside.append(url)
            r.abort()

    page.route("**/*", route)
    page.goto(f"{live_server.url}{path}")
    # The page rendered the schema: its title heading and an operation (search, sidebar, ...) are there.
    expect(page.locator("h1, h2", has_text="evalconsole API").first).to_be_visible(timeout=60_000)
    expect(page.get_by_text("List agents").first).to_be_attached()
    page.wait_for_load_state("networkidle")
    assert outside == [], f"{path} asked for {outside}"
