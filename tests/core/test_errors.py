"""core.errors: a page view catches Rejected for its form; a refusal (PermissionDenied) is the only
DomainError that is not one, and goes on to the 403 page (core.views.RefusalMiddleware)."""

from __future__ import annotations

import importlib

from core.errors import Conflict, DomainError, ImmutableError, PermissionDenied, Rejected, ValidationFailed

SERVICES = ("agents", "checks", "monitors", "reviews", "runs", "teams", "worlds")


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def test_every_domain_error_but_a_refusal_is_the_forms():
    for app in SERVICES:  # the services define their own (CheckInUse, SceneRejected...)
        importlib.import_module(f"{app}.services")
    kinds = set(_subclasses(DomainError))
    assert {Rejected, PermissionDenied, ValidationFailed, ImmutableError, Conflict} <= kinds
    assert {k for k in kinds if not issubclass(k, Rejected)} == {PermissionDenied}
