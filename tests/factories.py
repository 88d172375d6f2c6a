"""The objects most tests build, made through the services (so they are what the console would make).

Each factory takes only what the test cares about; the rest has a plain default. Names are unique per
call unless given, so several objects of one kind can live in a test.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence

_numbers = itertools.count(1)


def _n() -> int:
    return next(_numbers)


def user(username: str | None = None, **extra):
    from django.contrib.auth import get_user_model

    username = username or f"user{_n()}"
    return get_user_model().objects.create_user(username=username, password="pw-" + username, **extra)


def team(name: str | None = None):
    from teams.services import create_team

    return create_team(name=name or f"Team {_n()}")


def member_of(team, role: str = "member", username: str | None = None):
    """A new user with `role` in `team`."""
    from teams.services import add_member

    person = user(username)
    add_member(team=team, user=person, role=role)
    return person


def agent(
    team, by=None, *, name: str | None = None, endpoint_url: str = "http://127.0.0.1:9/agent", **fields
):
    from agents.services import create_agent

    return create_agent(team=team, by=by, name=name or f"Agent {_n()}", endpoint_url=endpoint_url, **fields)


def check(
    agent, by=None, *, kind: str = "text_includes", config: dict | None = None, name: str | None = None
):
    from checks.services import create_check

    config = {"text": "EC-1042"} if config is None and kind == "text_includes" else config
    return create_check(agent=agent, by=by, name=name or f"Check {_n()}", kind=kind, config=config)


def test_set(agent, by=None, *, name: str | None = None):
    from checks.services import create_test_set

    return create_test_set(agent=agent, by=by, name=name or f"Set {_n()}")


def test(
    agent=None,
    by=None,
    *,
    test_set=None,
    scenarios: Sequence = ("Where is my order EC-1042?",),
    checks: Iterable = (),
    samples: int = 1,
    min_valid: int = 1,
    rate: int = 100,
    name: str | None = None,
):
    """A test in `test_set` (a new set of `agent` if none) with `checks` attached as required."""
    from checks.services import create_test

    test_set = test_set or globals()["test_set"](agent, by)
    return create_test(
        test_set=test_set,
        by=by,
        name=name or f"Test {_n()}",
        scenarios=list(scenarios),
        checks=[{"check": c.pk, "required": True} for c in checks],
        samples_per_scenario=samples,
        min_valid_per_scenario=min_valid,
        required_pass_rate=rate,
    )


test.__test__ = False  # a factory, not a pytest test function


def task(agent, by=None, *, external_id: str | None = None, **fields):
    """A task of `agent` completed now, ingested as a monitored agent reports it; `fields` are the rest of
    the task object (messages, output, tool_calls, trace)."""
    from django.utils import timezone

    from monitors.models import Task
    from monitors.services import ingest_tasks

    external_id = external_id or f"task-{_n()}"
    item = {"external_id": external_id, "completed_at": timezone.now().isoformat(), **fields}
    ingest_tasks(agent=agent, by=by, items=[item])
    return Task.objects.get(agent=agent, external_id=external_id)


def check_results(sample, run_checks, **fields) -> None:
    """A result of every run check (RunCheck) on `sample`, as the worker records them; `fields` are the
    results' outcome, expected, actual, explanation, details."""
    from runs.models import CheckResult

    for rc in run_checks:
        CheckResult.objects.create(
            sample=sample, check_version=rc.check_version, required=rc.required, **fields
        )


def scene_test(team, admin, member, *, agent_url: str, scene: str, name: str, checks=(), samples: int = 1):
    """A scene test of ``scene`` (YAML) on a new agent at ``agent_url``, with library ``checks`` given
    as ``(name, kind, config)``, each required; ``samples`` per scenario, all of them needed."""
    from worlds import services as worlds

    agent_row = agent(team, admin, endpoint_url=agent_url)
    library = [check(agent_row, member, kind=kind, config=config, name=n).pk for n, kind, config in checks]
    return worlds.create_scene_test(
        test_set=test_set(agent_row, member),
        by=member,
        name=name,
        scenes=[scene],
        checks=[{"check": pk, "required": True} for pk in library],
        samples_per_scenario=samples,
        min_valid_per_scenario=samples,
    )
