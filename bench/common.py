"""What the Django benchmarks share: a free loopback port and the objects they measure with.

Import it once the repository root is on ``sys.path`` (``from bench.common import ...``); the
object helpers need Django set up.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable

# The tool_usage config both benchmarks check: lookup_order was called.
LOOKUP_ORDER_CALLED = {"tool": "lookup_order", "mode": "at_least", "count": 1}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def admin_and_agent(*, team: str, username: str, agent: str, **agent_fields):
    """(user, agent): a new team ``team`` with ``username`` as its admin, and an agent of it called
    ``agent`` at a loopback URL nobody serves (a benchmark points it elsewhere or never calls it)."""
    from agents.services import create_agent
    from teams.services import add_member, create_team, get_or_create_user

    user, _ = get_or_create_user(username=username)
    created = create_team(name=team)
    add_member(team=created, user=user, role="admin")
    return user, create_agent(
        team=created, by=user, name=agent, endpoint_url="http://127.0.0.1:9/agent", **agent_fields
    )


def create_checks(agent, by, specs: Iterable[tuple[str, str, dict]]) -> list:
    """One check of ``agent`` per ``(name, kind, config)``, in order."""
    from checks.services import create_check

    return [
        create_check(agent=agent, by=by, name=name, kind=kind, config=config) for name, kind, config in specs
    ]
