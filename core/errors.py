"""Domain errors raised by services; pages, API and CLI turn them into messages."""

from __future__ import annotations


class DomainError(Exception):
    """A write was refused. `errors` maps a field name (or "__all__") to a message."""

    def __init__(self, message: str | dict[str, str | list[str]], *, field: str | None = None) -> None:
        if isinstance(message, dict):
            self.errors = dict(message)
        else:
            self.errors = {field or "__all__": message}
        super().__init__("; ".join(f"{k}: {v}" if k != "__all__" else v for k, v in self.errors.items()))


class Rejected(DomainError):
    """A write refused for what it asks (its input, or the state of its object), not for who asks: a page
    shows it on the form. Every DomainError but PermissionDenied is one, so a page view catches Rejected
    for its form and lets a refusal go on to core.views.RefusalMiddleware (the 403 page)."""


class PermissionDenied(DomainError):
    """The user's role in the team does not allow this write."""


class ValidationFailed(Rejected):
    """Input broke a rule (a limit, a config schema, a missing field)."""


class ImmutableError(Rejected):
    """Someone tried to change or delete a frozen version."""


class Conflict(Rejected):
    """The object is in a state where the action makes no sense (e.g. cancelling a finished run)."""
