"""Fixtures for the adapters' end-to-end tests: the real qcluster worker fixtures."""

from tests.support.workers import pytest_runtest_makereport, qcluster, qcluster_factory  # noqa: F401
