"""DRF glue: the exception handler maps domain errors to 400 with a message per field."""

from __future__ import annotations

from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from evalconsole import errors


def exception_handler(exc, context):
    if isinstance(exc, errors.PermissionDenied):
        return Response({"detail": str(exc)}, status=status.HTTP_403_FORBIDDEN)
    if isinstance(exc, errors.Conflict):
        return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
    if isinstance(exc, errors.DomainError):
        body = {("non_field_errors" if k == "__all__" else k): [v] for k, v in exc.errors.items()}
        return Response(body, status=status.HTTP_400_BAD_REQUEST)
    return drf_exception_handler(exc, context)
