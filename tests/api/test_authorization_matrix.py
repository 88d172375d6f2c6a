"""Every endpoint of the /api/v1/ router × every persona → the expected status code.

The cases are generated from the router's URL list: an endpoint added to the router without a row in
EXPECTED fails `test_every_router_endpoint_has_a_row` (and its own cases), so nobody can ship an endpoint
whose authorization was never decided.

Personas (tests/api/conftest.py): anonymous (no header), viewer / member / admin of team Acme, outsider
(admin of team Globex), revoked (an admin token that was revoked), readonly (a read-only admin token).
Every object in a path belongs to Acme.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from django.test import Client

from tests.api.conftest import PERSONAS, Api, make_library, persona_secrets
from tests.support.shared_rows import shared_rows

pytestmark = pytest.mark.django_db

SCENE = "scene: lookup\ntask: Look the customer up.\nchecks:\n  - { id: c, trace: { called: '*' } }\n"

# Shorthands for the common rows.
ANON = {"anonymous": 401, "revoked": 401}


def read(code: int = 200, outsider: int = 200) -> dict[str, int]:
    """A read every team member (and the read-only token) may do; `outsider` sees lists but no object."""
    return {**ANON, "viewer": code, "member": code, "admin": code, "readonly": code, "outsider": outsider}


def write(*, viewer: int = 403, member: int, admin: int, outsider: int) -> dict[str, int]:
    return {**ANON, "viewer": viewer, "member": member, "admin": admin, "outsider": outsider, "readonly": 403}


def collection(resource: str, *, members_edit: bool = True) -> dict[str, dict[str, int]]:
    """The six rows of a resource the router registers in full: list, create, read, replace, edit, archive.

    Members create and edit (or, with ``members_edit=False``, only admins do); only admins archive. The
    outsider lists (an empty page), cannot create (the Acme parent "does not exist" for them: 400) and
    gets 404 for an Acme object.
    """
    create, edit = (201, 200) if members_edit else (403, 403)
    return {
        f"GET /api/v1/{resource}/": read(),
        f"POST /api/v1/{resource}/": write(member=create, admin=201, outsider=400),
        f"GET /api/v1/{resource}/{{id}}/": read(outsider=404),
        f"PUT /api/v1/{resource}/{{id}}/": write(member=edit, admin=200, outsider=404),
        f"PATCH /api/v1/{resource}/{{id}}/": write(member=edit, admin=200, outsider=404),
        f"DELETE /api/v1/{resource}/{{id}}/": write(member=403, admin=204, outsider=404),
    }


# "METHOD /path/{id}/" → persona → status. {id} is an Acme object of that resource.
EXPECTED: dict[str, dict[str, int]] = {
    "GET /api/v1/": read(),
    # agents: admins manage them; members may ping.
    **collection("agents", members_edit=False),  # outsider's create: "Team 1 does not exist"
    "POST /api/v1/agents/{id}/ping/": write(member=200, admin=200, outsider=404),
    # checks: members build them; admins archive them.
    # The world's test uses its check: an admin is allowed, and told so first (409 until ?confirm=true).
    **collection("checks"),  # outsider's create: "Agent 1 does not exist"
    "DELETE /api/v1/checks/{id}/": write(member=403, admin=409, outsider=404),
    "GET /api/v1/checks/{id}/versions/": read(outsider=404),
    # test sets and tests: members build them and launch runs; admins archive them.
    **collection("test-sets"),
    "POST /api/v1/test-sets/{id}/runs/": write(member=202, admin=202, outsider=404),
    **collection("tests"),
    # scenes: members build them; admins archive them.
    **collection("scenes"),
    "GET /api/v1/scenes/{id}/versions/": read(outsider=404),
    # runs
    "GET /api/v1/runs/": read(),
    "POST /api/v1/runs/": write(member=202, admin=202, outsider=400),  # "Test 1 does not exist"
    "GET /api/v1/runs/{id}/": read(outsider=404),
    "GET /api/v1/runs/{id}/samples/": read(outsider=404),
    "GET /api/v1/runs/{id}/samples/{sample_id}/world/": read(outsider=404),
    "GET /api/v1/runs/{id}/export/": read(outsider=404),
    "POST /api/v1/runs/{id}/cancel/": write(member=200, admin=200, outsider=404),
    "POST /api/v1/runs/trials/": write(member=202, admin=202, outsider=400),  # "Test 1 does not exist"
    "POST /api/v1/runs/batch/": write(member=202, admin=202, outsider=400),  # "Test 1 does not exist"
    "GET /api/v1/runs/batches/{batch}/": read(outsider=404),  # the batch of Acme's run
    # tokens: everyone manages their own; {id} is the admin's token, nobody else's.
    "GET /api/v1/tokens/": read(),
    "POST /api/v1/tokens/": write(viewer=201, member=201, admin=201, outsider=201),
    "GET /api/v1/tokens/{id}/": {
        **ANON,
        "viewer": 404,
        "member": 404,
        "admin": 200,
        "readonly": 200,
        "outsider": 404,
    },
    "DELETE /api/v1/tokens/{id}/": write(viewer=404, member=404, admin=204, outsider=404),
    # live tasks, monitors and evaluations (issue 8)
    "POST /api/v1/agents/{agent_id}/tasks/": write(member=201, admin=201, outsider=404),
    "GET /api/v1/tasks/": read(),
    "GET /api/v1/tasks/{id}/": read(outsider=404),
    **collection("monitors"),
    "GET /api/v1/monitors/{id}/results/": read(outsider=404),
    "GET /api/v1/evaluations/": read(),
    "POST /api/v1/evaluations/": write(member=202, admin=202, outsider=400),
    "GET /api/v1/evaluations/{id}/": read(outsider=404),
    "GET /api/v1/evaluations/{id}/results/": read(outsider=404),
    # human review (issue 20): members create queues, send items and label; viewers read.
    "GET /api/v1/review-queues/": read(),
    "POST /api/v1/review-queues/": write(member=201, admin=201, outsider=400),  # "Team 1 does not exist"
    "GET /api/v1/review-queues/{id}/": read(outsider=404),
    "GET /api/v1/review-queues/{id}/items/": read(outsider=404),
    "POST /api/v1/review-queues/{id}/items/": write(member=201, admin=201, outsider=404),
    "GET /api/v1/review-queues/{id}/labels/": read(outsider=404),
    "POST /api/v1/review-queues/{id}/labels/": write(member=201, admin=201, outsider=404),
    "GET /api/v1/review-queues/{id}/export/": read(outsider=404),
    "GET /api/v1/checks/{id}/calibration/": read(outsider=404),
}


def router_endpoints() -> list[str]:
    """ "METHOD /api/v1/route/" for every method of every route of the router (format suffixes left out)."""
    from evalconsole.api_urls import router

    found = []
    for pattern in router.urls:
        regex = pattern.pattern.regex.pattern
        if "(?P<format>" in regex:
            continue
        route = regex.lstrip("^").removesuffix("\\Z").rstrip("$")
        route = re.sub(r"\(\?P<pk>[^)]*\)", "{id}", route)
        route = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"{\1}", route)
        actions = getattr(pattern.callback, "actions", None) or {"get": "root"}
        for method in actions:
            if method in ("head", "options"):
                continue
            found.append(f"{method.upper()} /api/v1/{route}")
    return sorted(set(found))


def test_every_router_endpoint_has_a_row():
    endpoints = set(router_endpoints())
    missing = sorted(endpoints - set(EXPECTED))
    assert not missing, f"add rows to EXPECTED for: {missing}"
    stale = sorted(set(EXPECTED) - endpoints)
    assert not stale, f"rows for endpoints the router no longer has: {stale}"
    for endpoint, row in EXPECTED.items():
        assert set(row) == set(PERSONAS), f"{endpoint}: a status for each persona"


@pytest.fixture(scope="module")
def acme(django_db_setup, django_db_blocker):
    """The personas, their tokens and the world, made once for the module's cases (tests/support/
    shared_rows.py: each case runs in a savepoint rolled back after it, so each sees them exactly as made)."""
    from tests import factories

    def build():
        team = factories.team("Acme")
        personas = {"admin": factories.member_of(team, "admin", "ada"),
                    "member": factories.member_of(team, "member", "alice"),
                    "viewer": factories.member_of(team, "viewer", "victor"),
                    "outsider": factories.member_of(factories.team("Globex"), "admin", "bob")}
        secrets = persona_secrets(personas)
        agent = factories.agent(team, personas["admin"], name="Support bot")
        test_set = factories.test_set(agent, personas["member"], name="Orders")
        library = make_library(agent, personas["member"], test_set)
        return {"team": team, "secrets": secrets, "world": _world(library, personas, team)}

    with shared_rows(django_db_blocker, build) as made:
        yield made


@pytest.fixture
def team(acme, db):
    return acme["team"]


@pytest.fixture
def world(acme, db):
    return acme["world"]


@pytest.fixture
def api(acme, db):
    return Api(client=Client(), secrets=acme["secrets"])


def _world(library, personas, team):
    """Objects of every resource in team Acme (plus a task, a monitor and an evaluation)."""
    from teams.models import ApiToken
    from worlds.services import create_scene

    objects = {
        "agents": library["agent"],
        "checks": library["check"],
        "test-sets": library["test_set"],
        "tests": library["test"],
        "runs": library["run"],
        "tokens": ApiToken.objects.filter(user=personas["admin"], name="admin ci").get(),
        "scenes": create_scene(agent=library["agent"], by=personas["member"], source=SCENE),
    }
    # The run's first sample plays in a world of that scene (GET runs/{id}/samples/{sample_id}/world/).
    from runs.models import Sample
    from worlds.services import start_world

    sample = Sample.objects.filter(run=library["run"]).order_by("pk").first()
    row, _ = start_world(version=objects["scenes"].current_version)
    Sample.objects.filter(pk=sample.pk).update(world=row)
    objects["scene_sample"] = sample
    try:
        from monitors import services as monitoring
    except ImportError:  # issue 8 not merged yet: its endpoints are not in the router either
        return objects
    agent, member = library["agent"], personas["member"]
    ingested = monitoring.ingest_tasks(
        agent=agent,
        by=member,
        items=[
            {
                "external_id": "conv-1",
                "completed_at": "2026-01-02T03:04:05Z",
                "output": "Order EC-1042 has shipped.",
                "messages": [{"role": "user", "content": "Where is EC-1042?"}],
            }
        ],
    )
    from monitors.models import Task

    objects["tasks"] = Task.objects.get(pk=ingested.ids[0])
    objects["monitors"] = monitoring.create_monitor(
        agent=agent, by=member, name="Live", checks=[library["check"]], sample_rate=50
    )
    objects["evaluations"] = monitoring.launch_evaluation(
        agent=agent, by=member, check_ids=[library["check"].pk], task_ids=[objects["tasks"].pk]
    )
    # A review queue holding the task, which the check judged (as the evaluation's worker would record).
    from reviews.services import create_queue, send_tasks
    from runs.models import CheckResult

    CheckResult.objects.create(task=objects["tasks"], evaluation=objects["evaluations"], outcome="pass",
                               check_version=library["check"].current_version)
    objects["review-queues"] = create_queue(team=team, by=member, name="Review")
    send_tasks(queue=objects["review-queues"], by=member, task_ids=[objects["tasks"].pk])
    objects["review_item"] = objects["review-queues"].items.get()
    return objects


def bodies(world, team) -> dict[str, object]:
    """A valid body per write endpoint (valid for Acme's member or admin; the same body for everyone)."""
    agent, check, test, test_set = world["agents"], world["checks"], world["tests"], world["test-sets"]
    new_check = {
        "agent": agent.pk,
        "name": "Mentions delivery",
        "kind": "text_includes",
        "config": {"text": "deliver"},
    }
    new_test = {
        "test_set": test_set.pk,
        "name": "Refunds",
        "scenarios": [{"input": "I want a refund for EC-1042"}],
        "checks": [{"check": check.pk, "required": True}],
    }
    stamp = datetime.now(UTC).isoformat()
    return {
        "POST /api/v1/agents/": {
            "team": team.pk,
            "name": "Second bot",
            "endpoint_url": "http://127.0.0.1:9/two",
        },
        "PUT /api/v1/agents/{id}/": {"name": "Support bot", "endpoint_url": "http://127.0.0.1:9/v2"},
        "PATCH /api/v1/agents/{id}/": {"timeout_s": 5},
        "POST /api/v1/agents/{id}/ping/": {},
        "POST /api/v1/checks/": new_check,
        "PUT /api/v1/checks/{id}/": {**new_check, "name": "Mentions shipping"},
        "PATCH /api/v1/checks/{id}/": {"config": {"text": "shipped", "case_sensitive": False}},
        "POST /api/v1/test-sets/": {"agent": agent.pk, "name": "Refund flows"},
        "PUT /api/v1/test-sets/{id}/": {"agent": agent.pk, "name": "Orders (renamed)"},
        "PATCH /api/v1/test-sets/{id}/": {"description": "Order questions"},
        "POST /api/v1/test-sets/{id}/runs/": {},
        "POST /api/v1/tests/": new_test,
        "PUT /api/v1/tests/{id}/": {**new_test, "name": "Order status"},
        "PATCH /api/v1/tests/{id}/": {"required_pass_rate": 100},
        "POST /api/v1/scenes/": {"agent": agent.pk, "source": SCENE.replace("lookup", "second")},
        "PUT /api/v1/scenes/{id}/": {"agent": agent.pk, "source": SCENE.replace("Look", "Find")},
        "PATCH /api/v1/scenes/{id}/": {"source": SCENE.replace("Look", "Search")},
        "POST /api/v1/runs/": {"test": test.pk},
        "POST /api/v1/runs/{id}/cancel/": {},
        "POST /api/v1/runs/trials/": {"test": test.pk, "trials": 2},
        "POST /api/v1/runs/batch/": {"tests": [test.pk, test.pk]},
        "POST /api/v1/tokens/": {"name": "ci", "can_write": False},
        "POST /api/v1/agents/{agent_id}/tasks/": {
            "external_id": f"conv-{stamp}",
            "completed_at": stamp,
            "output": "Hello",
        },
        "POST /api/v1/monitors/": {
            "agent": agent.pk,
            "name": "Second",
            "checks": [check.pk],
            "sample_rate": 10,
        },
        "PUT /api/v1/monitors/{id}/": {
            "agent": agent.pk,
            "name": "Live",
            "checks": [check.pk],
            "sample_rate": 20,
        },
        "PATCH /api/v1/monitors/{id}/": {"sample_rate": 25},
        "POST /api/v1/evaluations/": {
            "tasks": [world["tasks"].pk] if "tasks" in world else [],
            "checks": [check.pk],
        },
        "POST /api/v1/review-queues/": {"team": team.pk, "name": "Second review"},
        "POST /api/v1/review-queues/{id}/items/": {"tasks": [world["tasks"].pk] if "tasks" in world else []},
        "POST /api/v1/review-queues/{id}/labels/": {
            "item": world["review_item"].pk if "review_item" in world else 0,
            "check_version": check.current_version_id,
            "verdict": "pass",
        },
    }


def _path(endpoint: str, world) -> str:
    route = endpoint.split(" ", 1)[1]
    resource = route.removeprefix("/api/v1/").split("/", 1)[0]
    if "{agent_id}" in route:
        route = route.replace("{agent_id}", str(world["agents"].pk))
    if "{id}" in route:
        route = route.replace("{id}", str(world[resource].pk))
    if "{sample_id}" in route:
        route = route.replace("{sample_id}", str(world["scene_sample"].pk))
    if "{batch}" in route:
        from runs.models import Run

        Run.objects.filter(pk=world["runs"].pk).update(batch="acme-batch")
        route = route.replace("{batch}", "acme-batch")
    return route


@pytest.mark.parametrize("persona", PERSONAS)
@pytest.mark.parametrize("endpoint", router_endpoints())
def test_authorization(endpoint, persona, api, world, team):
    assert endpoint in EXPECTED, f"no row in EXPECTED for {endpoint}"
    method = endpoint.split(" ", 1)[0]
    body = bodies(world, team).get(endpoint) if method in ("POST", "PUT", "PATCH") else None
    if method in ("POST", "PUT", "PATCH"):
        assert body is not None, f"add a valid body for {endpoint} to bodies()"
    response = api.call(persona, method, _path(endpoint, world), body)
    expected = EXPECTED[endpoint][persona]
    assert response.status_code == expected, (
        f"{endpoint} as {persona}: {response.status_code} (expected {expected}): {response.content[:300]!r}"
    )
    if response.status_code >= 400:
        assert response["Content-Type"].startswith("application/json")
