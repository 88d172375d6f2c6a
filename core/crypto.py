"""Encryption at rest for agent secrets (Fernet; key from EVALCONSOLE_ENCRYPTION_KEY or SECRET_KEY)."""

from __future__ import annotations

import base64
import hashlib
import json
from functools import lru_cache

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings


@lru_cache(maxsize=4)
def _fernet(key_material: str) -> Fernet:
    digest = hashlib.sha256(("evalconsole-secrets:" + key_material).encode()).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def _current() -> Fernet:
    return _fernet(settings.EVALCONSOLE_ENCRYPTION_KEY or settings.SECRET_KEY)


def encrypt_json(value: object) -> str:
    return _current().encrypt(json.dumps(value, sort_keys=True).encode()).decode()


def decrypt_json(token: str, default: object = None) -> object:
    if not token:
        return default
    try:
        return json.loads(_current().decrypt(token.encode()))
    except InvalidToken as exc:
        raise ValueError("stored secret cannot be decrypted with the current key") from exc
