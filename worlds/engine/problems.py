"""Validation problems, each written ``file:line: field.path: message``.

Validation never stops at the first problem: it adds every one to a :class:`Problems` collector and
raises :class:`SceneInvalid` with all of them at the end. Paths count list items from 0 (``checks[2]``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

__all__ = ["Problem", "Problems", "SceneInvalid", "join_path"]


@dataclass(frozen=True, order=True)
class Problem:
    """One problem. ``line`` is 1-based (0 when unknown); ``path`` is empty for the whole file."""

    line: int
    path: str
    message: str
    file: str = "scene.yaml"

    def __str__(self) -> str:
        where = f"{self.path}: " if self.path else ""
        return f"{self.file}:{self.line}: {where}{self.message}"


def join_path(parent: str, key: str | int) -> str:
    """``checks`` + 2 → ``checks[2]``; ``checks[2]`` + ``id`` → ``checks[2].id``."""
    if isinstance(key, int):
        return f"{parent}[{key}]"
    return f"{parent}.{key}" if parent else str(key)


class Problems:
    """Collects problems; ``line_of(path)`` (the loader's lookup) places each on its line."""

    def __init__(self, file: str, line_of: Callable[[str], int] | None = None) -> None:
        self.file = file
        self._line_of = line_of or (lambda path: 0)
        self._items: list[Problem] = []

    def add(self, path: str, message: str, *, line: int | None = None) -> None:
        self._items.append(Problem(self._line_of(path) if line is None else line, path, message, self.file))

    def __iter__(self) -> Iterator[Problem]:
        return iter(sorted(self._items, key=lambda p: p.line))  # stable: same line keeps its order

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)

    def raise_if_any(self) -> None:
        if self._items:
            raise SceneInvalid(list(self))


class SceneInvalid(Exception):
    """A scene failed to load or validate. ``problems`` lists every problem, in line order."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))

    def lines(self) -> list[str]:
        return [str(p) for p in self.problems]
