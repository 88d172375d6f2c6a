"""Cross-cutting page tests use the page fixtures."""

from tests.support.page_fixtures import live_agent, login, order_test, run_now  # noqa: F401
