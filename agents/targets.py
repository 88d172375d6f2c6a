"""How to call an agent: its protocol target, built from the model and the site's settings.

Used by the run worker, the ping button and the API's ping; the target carries the decrypted headers
in memory only.
"""

from __future__ import annotations

from django.conf import settings

from agents.models import Agent
from agents.protocols import AgentTarget


def target_for(agent: Agent) -> AgentTarget:
    """How to call ``agent`` (headers decrypted here, kept in memory only)."""
    return AgentTarget(
        protocol=agent.protocol,
        endpoint_url=agent.endpoint_url,
        headers=agent.get_headers(),
        timeout_s=float(agent.timeout_s),
        retries=int(agent.retries),
        max_response_bytes=int(settings.EVALCONSOLE_MAX_RESPONSE_BYTES),
        model=agent.model_name or "",
        allow_private=bool(settings.EVALCONSOLE_ALLOW_PRIVATE_URLS),
    )
