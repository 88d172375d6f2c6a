"""DRF glue: the exception handler maps domain errors to 400 with a message per field, and a body over
the size limit to a JSON 413."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from evalconsole import errors


def exception_handler(exc, context):
    if isinstance(exc, RequestDataTooBig):
        # Django's answer would be its HTML 400 page and a logged traceback (a SuspiciousOperation).
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        detail = f"The request body is larger than the limit of {limit:,} bytes; send less at a time."
        return Response({"detail": detail}, status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
    if isinstance(exc, errors.PermissionDenied):
        return Response({"detail": str(exc)}, status=status.HTTP_403_FORBIDDEN)
    if isinstance(exc, errors.Conflict):
        return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
    if isinstance(exc, errors.DomainError):
        body = {("non_field_errors" if k == "__all__" else k): [v] for k, v in exc.errors.items()}
        return Response(body, status=status.HTTP_400_BAD_REQUEST)
    return drf_exception_handler(exc, context)
