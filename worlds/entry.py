"""The HTTP entry point of stored worlds: ``/worlds/<id>/<tool>/<path>``.

No session or token: a world's tools authenticate each call with the world's own credentials, in
the tool's own way (a wrong one gets the tool's own refusal, recorded in the trace). An unknown world
id or tool is 404, a world whose trial has ended 410, a body over the limit 413. The view is thin:
the call is answered by ``worlds.services.call_world``.

``WorldCallsMiddleware`` (right after SecurityMiddleware in settings.MIDDLEWARE) answers these paths
itself, before the session, CSRF, auth, messages and team middleware and the URL resolver, none of
which a world call uses; ``worlds.urls`` routes the same paths to the same view for anything that
reaches the resolver (a project that leaves the middleware out).
"""

from __future__ import annotations

from django.core.exceptions import RequestDataTooBig
from django.http import HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from worlds import services
from worlds.engine.http import BODY_LIMIT, Request

PREFIX = "/worlds/"


@csrf_exempt
def world_call(request, world_id: str, tool: str, rest: str = ""):
    try:
        body = request.body
    except RequestDataTooBig:
        return JsonResponse({"message": f"the body is over {BODY_LIMIT} bytes"}, status=413)
    meta = request.META
    call = Request.make(request.method, "/" + rest, meta.get("QUERY_STRING", ""), _headers(meta), body)
    try:
        response = services.call_world(world_id, tool, call)
    except services.WorldMissing:
        return JsonResponse({"message": "Not Found"}, status=404)
    except services.WorldGone:
        return JsonResponse({"message": "this world's trial has ended"}, status=410)
    answer = HttpResponse(response.content(), status=response.status, content_type=response.content_type())
    for name, value in response.headers.items():
        if name.lower() not in ("content-type", "content-length"):
            answer[name] = value
    return answer


def _headers(meta: dict) -> dict[str, str]:
    """The request's headers with lower-case names, as ``request.headers`` has them (HTTP_* and the two
    unprefixed ones), read from META once rather than through HttpHeaders and lower-cased again."""
    headers = {}
    for key, value in meta.items():
        if key.startswith("HTTP_"):
            headers[key[5:].replace("_", "-").lower()] = value
        elif key in _UNPREFIXED:
            headers[_UNPREFIXED[key]] = value
    return headers


_UNPREFIXED = {"CONTENT_TYPE": "content-type", "CONTENT_LENGTH": "content-length"}


def world_target(path: str) -> tuple[str, str, str] | None:
    """``/worlds/<id>/<tool>/<rest>`` → (id, tool, rest), exactly the paths ``worlds.urls`` routes to
    :func:`world_call` (the tool's root needs its trailing slash); None for any other path."""
    if not path.startswith(PREFIX):
        return None
    parts = path[len(PREFIX) :].split("/", 2)
    if len(parts) < 3 or not parts[0] or not parts[1]:
        return None
    return parts[0], parts[1], parts[2]


class WorldCallsMiddleware:
    """Answer ``/worlds/...`` with :func:`world_call` straight away; pass everything else on."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        target = world_target(request.path_info)
        if target is None:
            return self.get_response(request)
        return world_call(request, *target)
