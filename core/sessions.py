"""The session engine (settings.SESSION_ENGINE): Django's database sessions, each request's read of its
session compiled once per process (core.prepared) instead of ~750 calls a request.

Same table, cookies and data as ``django.contrib.sessions.backends.db``; the session is read by its key
and kept only while its ``expire_date`` is after now, as Django's own read does in SQL.
"""

from __future__ import annotations

from django.contrib.sessions.backends import db
from django.contrib.sessions.models import Session
from django.db import router
from django.utils import timezone

from core.prepared import PreparedRead, concrete_attnames, instance


def _by_key(key: str):
    return Session.objects.filter(session_key=key).values_list(*concrete_attnames(Session))


_SESSION_READ = PreparedRead(_by_key, (str,))


class SessionStore(db.SessionStore):
    def _get_session_from_db(self):
        key = self.session_key
        if key is None:  # Django's read: no row has a null key
            return super()._get_session_from_db()
        using = router.db_for_read(Session)
        rows = _SESSION_READ.rows(key, using=using)
        found = instance(Session, rows[0], using) if rows else None
        if found is None or not found.expire_date > timezone.now():
            self._session_key = None
            return None
        return found
