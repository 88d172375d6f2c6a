"""API personas: each one a Bearer token (or none), and a JSON client that speaks as a persona."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
from django.core.cache import cache
from django.test import Client

PERSONAS = ("anonymous", "viewer", "member", "admin", "outsider", "revoked", "readonly")


@pytest.fixture(autouse=True)
def _fresh_throttle_counters():
    # Throttle counters live in the cache; ids repeat across rolled-back tests, so start clean.
    cache.clear()
    yield
    cache.clear()


@dataclass
class Api:
    client: Client
    secrets: dict[str, str]

    def call(self, persona: str, method: str, path: str, body=None, **extra):
        headers = {}
        secret = self.secrets.get(persona)
        if secret:
            headers["HTTP_AUTHORIZATION"] = f"Bearer {secret}"
        kwargs = {}
        if body is not None:
            kwargs = {"data": json.dumps(body), "content_type": "application/json"}
        return getattr(self.client, method.lower())(path, **kwargs, **headers, **extra)

    def get(self, persona, path, **extra):
        return self.call(persona, "get", path, **extra)

    def post(self, persona, path, body=None, **extra):
        return self.call(persona, "post", path, {} if body is None else body, **extra)

    def patch(self, persona, path, body, **extra):
        return self.call(persona, "patch", path, body, **extra)

    def delete(self, persona, path, **extra):
        return self.call(persona, "delete", path, **extra)


@pytest.fixture
def personas(admin_user, member, viewer, outsider):
    return {"admin": admin_user, "member": member, "viewer": viewer, "outsider": outsider}


def persona_secrets(personas) -> dict[str, str]:
    """A token per persona (none for anonymous), plus the admin's revoked and read-only ones."""
    from teams.services import issue_token, revoke_token

    secrets = {name: issue_token(user=user, name=f"{name} ci").secret for name, user in personas.items()}
    revoked = issue_token(user=personas["admin"], name="old")
    revoke_token(token=revoked.token, by=personas["admin"])
    secrets["revoked"] = revoked.secret
    secrets["readonly"] = issue_token(user=personas["admin"], name="dashboards", can_write=False).secret
    return secrets


@pytest.fixture
def api(personas):
    return Api(client=Client(), secrets=persona_secrets(personas))


@pytest.fixture
def library(agent, member, test_set):
    return make_library(agent, member, test_set)


def make_library(agent, member, test_set) -> dict:
    """One of everything of `team`: checks, a test, a run (queued: no worker in these tests)."""
    from checks import services as checks
    from runs import services as runs

    passes = checks.create_check(
        agent=agent, by=member, name="Mentions shipping", kind="text_includes", config={"text": "shipped"}
    )
    extra = checks.create_check(
        agent=agent,
        by=member,
        name="Polite",
        kind="text_includes",
        config={"text": "thanks", "case_sensitive": False},
    )
    test = checks.create_test(
        test_set=test_set,
        by=member,
        name="Order status",
        scenarios=[{"name": "Where is EC-1042", "input": "Where is my order EC-1042?"}],
        checks=[{"check": passes.pk, "required": True}],
        samples_per_scenario=2,
        min_valid_per_scenario=1,
        required_pass_rate=50,
    )
    run = runs.launch_run(test=test, by=member)
    return {
        "check": passes,
        "extra_check": extra,
        "test": test,
        "run": run,
        "test_set": test_set,
        "agent": agent,
    }
