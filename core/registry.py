"""A registry of named things (the check kinds, the simulated tools). Standard library only: the pure
``checks.kinds`` and ``worlds.engine`` import it."""

from __future__ import annotations

from typing import Protocol

__all__ = ["Registry", "UnknownName"]


class _Named(Protocol):
    name: str


class UnknownName(KeyError):
    """No thing is registered under ``name``; ``str()`` is the message (a KeyError's would quote it)."""

    def __init__(self, name: object, message: str) -> None:
        self.name = name
        self.message = message
        super().__init__(message)

    def __str__(self) -> str:
        return self.message


class Registry[T: _Named](dict[str, T]):
    """Things by their ``name``, in registration order. A second thing under a taken name is refused;
    a name not registered (or not a string) raises ``unknown`` (an UnknownName) saying which are."""

    def __init__(self, noun: str, plural: str, unknown: type[UnknownName]) -> None:
        super().__init__()
        self.noun = noun
        self.plural = plural
        self.unknown = unknown

    def add(self, item: T) -> T:
        if item.name in self:
            raise ValueError(f"{self.noun} {item.name!r} is already registered")
        self[item.name] = item
        return item

    def named(self, name: object) -> T:
        try:
            return self[name]  # type: ignore[index]
        except (KeyError, TypeError):
            known = ", ".join(self) or "none"
            raise self.unknown(name, f"unknown {self.noun} {name!r}; known {self.plural}: {known}") from None
