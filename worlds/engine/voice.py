"""Optional voice (WORLDS.md "People"): with ``voice: llm`` and a judge configured, a model words what a
person says from their ``persona``. Only the wording: what they know, reveal and decide still follows
the rules, and whoever reads the message learns from the canonical ``says`` text, never from the
model's (the engine keeps both on the message event). Off by default; a failed or empty model answer
falls back to the canonical text, so a trial never breaks on the voice.

``voice_from_client(client, model)`` makes a :data:`Voice` over any judge client (``complete(model=,
messages=)`` answering JSON text: the console's budgeted judge, or the CLI's ``OpenAIJudge``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

__all__ = ["Voice", "speak", "voice_from_client"]

log = logging.getLogger(__name__)

# (persona, what they were asked, the canonical text) -> the worded text
Voice = Callable[[str, str, str], str]
MAX_REPLY = 2_000

PROMPT = (
    "You write one short chat reply in the voice of the person described, for a simulated workplace. "
    "Say exactly what the canonical text says, in your own words: keep every fact, name, number and "
    'decision in it, add no fact, question or promise. Answer with a JSON object: {"reply": "..."}.'
)


def voice_from_client(client: Any, model: str) -> Voice:
    def voice(persona: str, asked: str, says: str) -> str:
        content = json.dumps(
            {"persona": persona, "they_were_asked": asked, "canonical": says}, ensure_ascii=False
        )
        reply = client.complete(
            model=model,
            messages=[{"role": "system", "content": PROMPT}, {"role": "user", "content": content}],
        )
        worded = json.loads(reply.text).get("reply")
        if not isinstance(worded, str) or not worded.strip():
            raise ValueError("the model gave no reply")
        return worded.strip()[:MAX_REPLY]

    return voice


def speak(voice: Voice | None, persona: str, asked: str, says: str) -> str:
    """What the person writes: the voiced text, or ``says`` without a voice or when the model fails."""
    if voice is None:
        return says
    try:
        return voice(persona, asked, says)
    except Exception as exc:  # noqa: BLE001 - the voice is wording only: the canonical text stands in
        log.warning("a person's voice failed (%s: %s); the canonical text is used", type(exc).__name__, exc)
        return says
