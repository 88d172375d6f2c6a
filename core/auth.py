"""The authentication backend (settings.AUTHENTICATION_BACKENDS): Django's ModelBackend, with the read of
a session's user compiled once per process (core.prepared) instead of ~850 calls a request."""

from __future__ import annotations

from django.contrib.auth import backends, get_user_model
from django.core.exceptions import PermissionDenied
from django.db import router

from core.prepared import PreparedRead, concrete_attnames, instance


def _by_pk(pk: int):
    model = get_user_model()
    return model._default_manager.filter(pk=pk).values_list(*concrete_attnames(model))


_USER_READ = PreparedRead(_by_pk, (int,))


class ModelBackend(backends.ModelBackend):
    def get_user(self, user_id):
        model = get_user_model()
        if type(user_id) is not int:  # Django passes the session's id as the primary key's own type
            return super().get_user(user_id)
        using = router.db_for_read(model)
        rows = _USER_READ.rows(user_id, using=using)
        if not rows:
            return None
        user = instance(model, rows[0], using)
        return user if self.user_can_authenticate(user) else None

    def authenticate(self, request, username=None, password=None, **kwargs):
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if username is None:
            username = kwargs.get(get_user_model().USERNAME_FIELD)
        if user is None and username is not None and password is not None:
            # Django's own ModelBackend follows in the settings only for sessions that named it before;
            # it would check the same password against the same user again (a second hash).
            raise PermissionDenied
        return user
