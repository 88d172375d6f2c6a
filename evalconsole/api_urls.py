"""/api/v1/ router, /api/schema/ and interactive docs (/api/docs/ Swagger UI, /api/redoc/)."""

from django.http import JsonResponse
from django.urls import include, path, re_path
from django.utils.csp import CSP
from django.views.decorators.csp import csp_override
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView
from rest_framework.routers import DefaultRouter

from agents.api import AgentViewSet
from checks.api import CheckViewSet
from core.api import DeployedSchemaGenerator
from evalconsole import schema  # noqa: F401  (registers the OpenAPI extensions)
from monitors.api import AgentTaskIngestViewSet, EvaluationViewSet, MonitorViewSet, TaskViewSet
from reviews.api import CheckCalibrationViewSet, ReviewQueueViewSet
from runs.api import RunViewSet, TestSetViewSet
from teams.api import TokenViewSet
from worlds.api import SceneViewSet, TestViewSet


@csrf_exempt
def api_not_found(request, *args, **kwargs) -> JsonResponse:
    return JsonResponse({"detail": "Not found."}, status=404)


# The docs pages load from this server only. The sidecar bundles still name hosts of their own (ReDoc's
# sidebar shows the Redocly logo from cdn.redoc.ly); this policy tells the browser not to fetch them.
DOCS_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.UNSAFE_INLINE],  # drf-spectacular's inline start-up scripts
    "style-src": [CSP.SELF, CSP.UNSAFE_INLINE],  # styles both UIs generate at run time
    "img-src": [CSP.SELF, "data:"],
    "font-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "worker-src": [CSP.SELF, "blob:"],  # ReDoc's search index runs in a worker made from a blob
}
offline = csp_override(DOCS_CSP)

router = DefaultRouter()
# REST API v1 (DESIGN.md): agents, checks, test sets, tests, runs, tokens.
router.register("agents", AgentViewSet, basename="agent")
# checks/{id}/calibration/ (reviews): registered before CheckViewSet so the API root keeps listing checks/.
router.register("checks", CheckCalibrationViewSet, basename="check-calibration")
router.register("checks", CheckViewSet, basename="check")
router.register("test-sets", TestSetViewSet, basename="testset")
router.register("tests", TestViewSet, basename="test")
router.register("scenes", SceneViewSet, basename="scene")
router.register("runs", RunViewSet, basename="run")
router.register("tokens", TokenViewSet, basename="api-token")  # "token-list" is the Tokens page
# Live tasks, monitors and one-off evaluations (issue 8).
router.register(r"agents/(?P<agent_id>[^/.]+)/tasks", AgentTaskIngestViewSet, basename="agent-tasks")
router.register("tasks", TaskViewSet, basename="task")
router.register("monitors", MonitorViewSet, basename="monitor")
router.register("evaluations", EvaluationViewSet, basename="evaluation")
# Human review and judge calibration (issue 20).
router.register("review-queues", ReviewQueueViewSet, basename="review-queue")

urlpatterns = [
    path("v1/", include(router.urls)),
    path("schema/", SpectacularAPIView.as_view(generator_class=DeployedSchemaGenerator), name="api-schema"),
    path("docs/", offline(SpectacularSwaggerView.as_view(url_name="api-schema")), name="api-docs"),
    path(
        "redoc/",
        offline(SpectacularRedocView.as_view(url_name="api-schema", template_name="api/redoc.html")),
        name="api-redoc",
    ),
    # Any other URL under /api/ (e.g. /api/v1/agents/0.5/) is a JSON 404, not the HTML error page.
    re_path(r"^", api_not_found),
]
