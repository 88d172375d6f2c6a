"""Every write to agents and their workforce nodes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from urllib.parse import urlparse

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from agents import netpolicy
from agents.models import Agent, AgentKind, Node, NodeKind, Protocol
from core.errors import ValidationFailed
from teams import access
from teams.models import Team

HEADER_NAME_CHARS = set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _validate_fields(values: Mapping) -> dict[str, str]:
    errors: dict[str, str] = {}
    if "name" in values:
        name = (values["name"] or "").strip()
        if not name:
            errors["name"] = "an agent needs a name"
        elif len(name) > 100:
            errors["name"] = "at most 100 characters"
    if "kind" in values and values["kind"] not in AgentKind.values:
        errors["kind"] = f"must be one of {', '.join(AgentKind.values)}"
    if "protocol" in values and values["protocol"] not in Protocol.values:
        errors["protocol"] = f"must be one of {', '.join(Protocol.values)}"
    if "endpoint_url" in values:
        url = values["endpoint_url"].strip() if isinstance(values["endpoint_url"], str) else ""
        try:
            parsed = urlparse(url)
            has_host = parsed.scheme in {"http", "https"} and bool(parsed.netloc.rpartition("@")[2])
        except ValueError:
            has_host = False
        if not has_host:
            errors["endpoint_url"] = "must be an http:// or https:// URL with a host"
        elif len(url) > 500:
            errors["endpoint_url"] = "at most 500 characters"
        else:
            # The rules the workers apply when they connect (agents.netpolicy), as far as they can be
            # judged without DNS: ports, credentials, and addresses the policy refuses.
            allow_private = bool(getattr(settings, "EVALCONSOLE_ALLOW_PRIVATE_URLS", True))
            problem = netpolicy.check_url_syntax(url, allow_private=allow_private)
            if problem:
                errors["endpoint_url"] = problem
    if "timeout_s" in values:
        try:
            timeout = float(values["timeout_s"])
        except (TypeError, ValueError):
            errors["timeout_s"] = "must be a number of seconds"
        else:
            if not 0.1 <= timeout <= 600:
                errors["timeout_s"] = "must be between 0.1 and 600 seconds"
    if "retries" in values and (not isinstance(values["retries"], int) or not 0 <= values["retries"] <= 10):
        errors["retries"] = "must be a whole number between 0 and 10"
    if "max_concurrency" in values and (
        not isinstance(values["max_concurrency"], int) or not 1 <= values["max_concurrency"] <= 200
    ):
        errors["max_concurrency"] = "must be a whole number between 1 and 200"
    if values.get("headers") is not None:
        headers = values["headers"]
        if not isinstance(headers, Mapping):
            errors["headers"] = "must be an object of header names to values"
        else:
            for key, value in headers.items():
                if not key or not set(key) <= HEADER_NAME_CHARS:
                    errors["headers"] = f"{key!r} is not a valid header name"
                    break
                if not isinstance(value, str) or "\n" in value or "\r" in value:
                    errors["headers"] = f"the value of {key} must be a single-line string"
                    break
    return errors


def validate_agent_fields(values: Mapping) -> dict[str, str]:
    """The messages create_agent/update_agent would raise for these fields (field -> message), so a form
    can show every problem at once, each on its field. Writes nothing."""
    return _validate_fields(values)


def _set_nodes(agent: Agent, nodes: Sequence[Mapping]) -> None:
    seen: set[str] = set()
    rows = []
    for index, node in enumerate(nodes):
        name = (node.get("name") or "").strip() if isinstance(node, Mapping) else ""
        kind = node.get("kind", NodeKind.SUBAGENT) if isinstance(node, Mapping) else None
        if not name:
            raise ValidationFailed("every node needs a name", field=f"nodes.{index}.name")
        if kind not in NodeKind.values:
            raise ValidationFailed(
                f"must be one of {', '.join(NodeKind.values)}", field=f"nodes.{index}.kind"
            )
        if name in seen:
            raise ValidationFailed(f"node {name!r} is listed twice", field=f"nodes.{index}.name")
        seen.add(name)
        rows.append(Node(agent=agent, name=name, kind=kind))
    agent.nodes.all().delete()
    Node.objects.bulk_create(rows)


def create_agent(
    *,
    team: Team,
    by,
    name: str,
    endpoint_url: str,
    kind: str = AgentKind.AGENT,
    protocol: str = Protocol.EVALCONSOLE,
    headers: Mapping[str, str] | None = None,
    timeout_s: float = 30.0,
    retries: int = 2,
    max_concurrency: int = 10,
    model_name: str = "",
    description: str = "",
    nodes: Sequence[Mapping] = (),
) -> Agent:
    """Register an agent. Admins only. Raises ValidationFailed naming the field."""
    access.require(by, access.CREATE, Agent, team=team)
    values = dict(
        name=name, endpoint_url=endpoint_url, kind=kind, protocol=protocol, headers=headers,
        timeout_s=timeout_s, retries=retries, max_concurrency=max_concurrency,
    )
    errors = _validate_fields(values)
    if not errors and Agent.objects.filter(team=team, name=name.strip()).exists():
        errors["name"] = f"this team already has an agent called {name.strip()!r}"
    if errors:
        raise ValidationFailed(errors)
    agent = Agent(
        team=team, name=name.strip(), endpoint_url=endpoint_url.strip(), kind=kind, protocol=protocol,
        timeout_s=float(timeout_s), retries=retries, max_concurrency=max_concurrency,
        model_name=model_name or "", description=description or "",
    )
    agent.set_headers(dict(headers or {}))
    try:
        with transaction.atomic():
            agent.save()
            if nodes:
                _set_nodes(agent, nodes)
    except IntegrityError as exc:  # another request registered the same name since the check above
        message = f"this team already has an agent called {agent.name!r}"
        raise ValidationFailed(message, field="name") from exc
    return agent


def update_agent(
    *, agent: Agent, by, headers: Mapping[str, str] | None = None, nodes=None, **changes
) -> Agent:
    """Change fields of an agent. `headers=None` keeps the stored secrets; `{}` clears them."""
    access.require(by, access.CHANGE, agent, team=agent.team)
    allowed = {"name", "endpoint_url", "kind", "protocol", "timeout_s", "retries", "max_concurrency",
               "model_name", "description"}
    unknown = set(changes) - allowed
    if unknown:
        raise ValidationFailed({field: "cannot be changed" for field in sorted(unknown)})
    errors = _validate_fields({**changes, "headers": headers})
    new_name = (changes.get("name") or agent.name).strip()
    if (
        "name" not in errors
        and Agent.objects.filter(team=agent.team, name=new_name).exclude(pk=agent.pk).exists()
    ):
        errors["name"] = f"this team already has an agent called {new_name!r}"
    if errors:
        raise ValidationFailed(errors)
    for field, value in changes.items():
        if field == "timeout_s":
            value = float(value)
        elif isinstance(value, str):
            value = value.strip()
        setattr(agent, field, value)
    if headers is not None:
        agent.set_headers(dict(headers))
    try:
        with transaction.atomic():
            agent.save()
            if nodes is not None:
                _set_nodes(agent, nodes)
    except IntegrityError as exc:  # a concurrent rename
        message = f"this team already has an agent called {agent.name!r}"
        raise ValidationFailed(message, field="name") from exc
    return agent


def archive_agent(*, agent: Agent, by, archived: bool = True) -> Agent:
    """Archive an agent (`archived=False` restores it). Admins only; its runs and checks stay."""
    access.require(by, access.ARCHIVE, agent, team=agent.team)
    if (agent.archived_at is None) == archived:
        agent.archived_at = timezone.now() if archived else None
        agent.save(update_fields=["archived_at", "updated_at"])
    return agent
