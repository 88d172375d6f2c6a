"""A declared other tool (``world.tools.crm``): any method and path, answered from the scene's
``answers`` (a glob on ``"METHOD /path"``, ``*`` spanning ``/``) or ``200 {}``; trace only, no state."""

from __future__ import annotations

import re
from functools import lru_cache

from .http import Request, Response
from .simulator import Simulator

__all__ = ["OtherSimulator"]


@lru_cache(maxsize=512)
def _glob(pattern: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in pattern.split("*")) + r"\Z", re.DOTALL)


class OtherSimulator(Simulator):
    """Has no credential: every call is answered and traced."""

    def __init__(self, world, state, name: str) -> None:
        super().__init__(world, state)
        self.tool = name

    def call(self, request: Request) -> Response:
        other = self.world.scene.other_tools[self.tool]
        target = f"{request.method} {request.path}"
        for pattern, answer in other.answers.items():
            if _glob(pattern).match(target):
                return Response(
                    int(answer.get("status", 200)),
                    answer.get("body", {}),
                    headers=dict(answer.get("headers") or {}),
                )
        return Response(200, {})
