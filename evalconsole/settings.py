"""evalconsole settings: every deployment knob is an environment variable (see .env.example)."""

from __future__ import annotations

import os
import secrets
import warnings
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlparse

from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("EVALCONSOLE_VAR_DIR", BASE_DIR / "var"))


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}: expected true or false, got {raw!r}")


def _env_number(name: str, default, convert, what: str, minimum, spec: str = ""):
    """The number in ``name`` (``default`` when unset or empty), read by ``convert``; ``spec`` formats
    the bound and the value in the too-small message."""
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = convert(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}: expected {what}, got {raw!r}") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}: must be at least {minimum:{spec}}, got {value:{spec}}")
    return value


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    return _env_number(name, default, int, "an integer", minimum)


def env_float(name: str, default: float, *, minimum: float | None = None) -> float:
    return _env_number(name, default, float, "a number", minimum, "g")


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_secret(name: str) -> str:
    """Read X from X_FILE first (Docker/Kubernetes secrets), then from X."""
    path = os.environ.get(f"{name}_FILE")
    if path:
        try:
            return Path(path).read_text().strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE: cannot read {path}: {exc}") from exc
    return os.environ.get(name, "")


def database_from_url(url: str) -> dict:
    """Parse DATABASE_URL (postgresql://user:pw@host:port/name or sqlite:///path)."""
    if not url:
        VAR_DIR.mkdir(parents=True, exist_ok=True)
        url = f"sqlite:///{VAR_DIR / 'evalconsole.sqlite3'}"
    parsed = urlparse(url)
    options = dict(parse_qsl(parsed.query))
    if parsed.scheme in {"postgres", "postgresql", "pgsql"}:
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": unquote(parsed.path.lstrip("/")),
            "USER": unquote(parsed.username or ""),
            "PASSWORD": unquote(parsed.password or ""),
            "HOST": parsed.hostname or "",
            "PORT": str(parsed.port or ""),
            "CONN_MAX_AGE": env_int("EVALCONSOLE_CONN_MAX_AGE", 60, minimum=0),
            "CONN_HEALTH_CHECKS": True,
            "OPTIONS": options,
        }
    if parsed.scheme == "sqlite":
        path = unquote(parsed.path)
        if path.startswith("//"):  # sqlite:////abs/path
            path = path[1:]
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": path or ":memory:",
            # Kept open between requests as on PostgreSQL: closing a SQLite connection checkpoints
            # the WAL, which was most of a /worlds/ call's cost (bench/README.md "Worlds").
            "CONN_MAX_AGE": env_int("EVALCONSOLE_CONN_MAX_AGE", 60, minimum=0),
            "OPTIONS": {
                "timeout": 30,
                "transaction_mode": "IMMEDIATE",
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
        }
    raise ImproperlyConfigured(f"DATABASE_URL: unsupported scheme {parsed.scheme!r} (use postgresql:// or sqlite://)")


DEBUG = env_bool("DEBUG", False)
PRODUCTION = env_bool("EVALCONSOLE_PRODUCTION", False)

SECRET_KEY = env_secret("SECRET_KEY")
if not SECRET_KEY:
    if PRODUCTION:
        raise ImproperlyConfigured("SECRET_KEY: required when EVALCONSOLE_PRODUCTION is on")
    # Local use: generate once and keep it under var/ so sessions and encrypted headers survive restarts.
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    key_file = VAR_DIR / "secret_key"
    if not key_file.exists():
        key_file.write_text(secrets.token_urlsafe(64))
        key_file.chmod(0o600)
    SECRET_KEY = key_file.read_text().strip()

# Key for encrypting agent headers at rest; defaults to one derived from SECRET_KEY.
EVALCONSOLE_ENCRYPTION_KEY = env_secret("EVALCONSOLE_ENCRYPTION_KEY")

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"] if not PRODUCTION else [])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI / Redoc served locally (no CDN)
    "django_q",
    "teams",
    "agents",
    "checks",
    "worlds",
    "runs",
    "monitors",
    "reviews",  # human review queues, labels and judge calibration (issue 20)
    "evalconsole",  # the roof: URLs, the API router, the CLI and its commands, static files
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # /worlds/<id>/<tool>/... answered here: a world call needs none of the middleware below
    "worlds.entry.WorldCallsMiddleware",
    # Static files (stylesheets, scripts, admin assets) from the web server itself, DEBUG or not.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",  # no policy unless a view sets one (API docs)
    "django_htmx.middleware.HtmxMiddleware",
    "teams.middleware.CurrentTeamMiddleware",
    "core.views.RefusalMiddleware",  # a service's PermissionDenied out of a page view: the 403 page
]

ROOT_URLCONF = "evalconsole.urls"
WSGI_APPLICATION = "evalconsole.wsgi.application"

# Django's form renderer with <select> drawn in Python (same HTML; a page's pickers cost a few ms less).
FORM_RENDERER = "core.forms.FormRenderer"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "teams.context_processors.console",
            ],
            "builtins": ["core.templatetags.names"],  # {{ name|trunc }} in every template
        },
    },
]

DATABASES = {"default": database_from_url(env_str("DATABASE_URL"))}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Django's ModelBackend and database sessions, each request's read of its user and session compiled once
# per process (core.auth, core.sessions; bench/README.md "Fifth pass"). Django's own backend stays listed
# for sessions that named it before.
AUTHENTICATION_BACKENDS = ["core.auth.ModelBackend", "django.contrib.auth.backends.ModelBackend"]
SESSION_ENGINE = "core.sessions"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(BASE_DIR / "staticfiles")))
STATICFILES_DIRS = [BASE_DIR / "evalconsole" / "static"]
# WhiteNoise serves what collectstatic gathered (make up runs it) and, failing that, finds the files
# where they live, so a checkout serves its assets without a collect step.
WHITENOISE_USE_FINDERS = True
# ... which is why a checkout without collected files is fine: no warning about the missing directory.
warnings.filterwarnings("ignore", message="No directory at: ", category=UserWarning)

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# --- Security (production settings pass `manage.py check --deploy`) ---
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
if PRODUCTION:
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000, minimum=0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True

# --- REST framework ---
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "teams.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": [
        "rest_framework.permissions.IsAuthenticated",
        "teams.permissions.TokenCanWrite",
    ],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": env_int("EVALCONSOLE_API_PAGE_SIZE", 50, minimum=1),
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_THROTTLE_CLASSES": ["teams.throttling.TokenRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {"token": env_str("EVALCONSOLE_API_THROTTLE", "600/min")},
    "EXCEPTION_HANDLER": "core.api.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "evalconsole API",
    "DESCRIPTION": "Evaluate AI agents: agents, checks, tests, runs, tasks, monitors, evaluations.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # API docs work offline; the schema and docs are public (they describe no data).
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # No web fonts (templates/api/redoc.html drops ReDoc's Google Fonts links) and no online validator.
    "REDOC_UI_SETTINGS": {
        "theme": {
            "typography": {
                "fontFamily": 'system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif',
                "headings": {"fontFamily": 'system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif'},
            }
        }
    },
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None},
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "POSTPROCESSING_HOOKS": [
        "evalconsole.schema.postprocess_enums",
        "evalconsole.schema.add_error_responses",
    ],
    "ENUM_NAME_OVERRIDES": {
        "AgentKindEnum": "agents.models.AgentKind",
        "NodeKindEnum": "agents.models.NodeKind",
        "CheckKindEnum": "checks.kinds.kind_choices",
        "OutcomeEnum": "checks.kinds.Outcome.choices",
        "RunStatusEnum": "runs.models.Run.Status",
        "SampleStatusEnum": "runs.models.Sample.Status",
        "EvaluationStatusEnum": "monitors.models.Evaluation.Status",
    },
}

# --- Background work (django-q2; ORM broker by default, Redis optional) ---
Q_CLUSTER = {
    "name": "evalconsole",
    "orm": "default",
    "workers": env_int("EVALCONSOLE_WORKERS", 2, minimum=1),
    "timeout": env_int("EVALCONSOLE_TASK_TIMEOUT", 600, minimum=1),
    "retry": env_int("EVALCONSOLE_TASK_RETRY", 660, minimum=2),
    "max_attempts": 3,
    "ack_failures": True,
    # The database broker waits for a wake-up instead of polling (core.broker, core.wakeup): "poll" is
    # only the fallback, so an idle worker asks the database once every 2 s. The guard looks at its
    # processes every 2 s (default 0.5 s).
    "broker_class": "core.broker.WakeableORM",
    "poll": env_float("EVALCONSOLE_QUEUE_POLL_S", 2.0, minimum=0.01),
    "guard_cycle": 2,
    "save_limit": 100,
    "catch_up": False,
}
if env_str("REDIS_URL"):
    Q_CLUSTER.pop("orm")
    Q_CLUSTER.pop("broker_class")  # django-q2's Redis broker blocks on BLPOP: no polling to avoid
    Q_CLUSTER["redis"] = env_str("REDIS_URL")

# --- Product limits (DESIGN.md "Limits") ---
# The console's address as agents see it: world tools' base URLs start with it (`make up` serves :8000).
EVALCONSOLE_WORLDS_URL = env_str("EVALCONSOLE_WORLDS_URL", "http://127.0.0.1:8000")
EVALCONSOLE_MAX_SCENARIOS = env_int("EVALCONSOLE_MAX_SCENARIOS", 10, minimum=1)
# Engine worlds each web process keeps between calls (worlds.services; 0: restore on every call).
EVALCONSOLE_LIVE_WORLDS = env_int("EVALCONSOLE_LIVE_WORLDS", 128, minimum=0)
# PostgreSQL: prepare the statements that store a world call (worlds.callstore). Turn off behind a
# pooler that does not keep prepared statements per client (PgBouncer in transaction mode before 1.21).
EVALCONSOLE_WORLDS_PREPARE = env_bool("EVALCONSOLE_WORLDS_PREPARE", True)
EVALCONSOLE_MAX_CHECKS = env_int("EVALCONSOLE_MAX_CHECKS", 10, minimum=1)
EVALCONSOLE_MAX_ADDITIONAL_CHECKS = env_int("EVALCONSOLE_MAX_ADDITIONAL_CHECKS", 10, minimum=0)
EVALCONSOLE_MAX_SAMPLES_PER_RUN = env_int("EVALCONSOLE_MAX_SAMPLES_PER_RUN", 10, minimum=1)
# Launch option "trials": up to this many runs of one test in one batch (each run within the limit above).
EVALCONSOLE_MAX_TRIALS = env_int("EVALCONSOLE_MAX_TRIALS", 10, minimum=1)
# `POST api/v1/runs/batch/` (runs.services.launch_batch): up to this many runs in one launch.
EVALCONSOLE_MAX_BATCH_RUNS = env_int("EVALCONSOLE_MAX_BATCH_RUNS", 200, minimum=1)
EVALCONSOLE_MAX_TASK_BATCH = env_int("EVALCONSOLE_MAX_TASK_BATCH", 1000, minimum=1)

# --- Outbound calls to agents ---
EVALCONSOLE_ALLOW_PRIVATE_URLS = env_bool("EVALCONSOLE_ALLOW_PRIVATE_URLS", True)
EVALCONSOLE_MAX_RESPONSE_BYTES = env_int("EVALCONSOLE_MAX_RESPONSE_BYTES", 5_000_000, minimum=1024)

# --- Run execution (runs/execution.py; read at call time) ---
# A dead worker's samples free their agent's slots when their lease runs out; renewed every second.
EVALCONSOLE_SAMPLE_LEASE_S = env_int("EVALCONSOLE_SAMPLE_LEASE_S", 5, minimum=1)
EVALCONSOLE_WORKER_CONCURRENCY = env_int("EVALCONSOLE_WORKER_CONCURRENCY", 200, minimum=1)  # calls per worker
EVALCONSOLE_DRAIN_IDLE_MS = env_int("EVALCONSOLE_DRAIN_IDLE_MS", 1500, minimum=0)  # linger for new launches
EVALCONSOLE_DRAIN_POLL_MS = env_int("EVALCONSOLE_DRAIN_POLL_MS", 20, minimum=1)
EVALCONSOLE_MAX_SAMPLE_EXECUTIONS = env_int("EVALCONSOLE_MAX_SAMPLE_EXECUTIONS", 3, minimum=1)
EVALCONSOLE_RATE_LIMIT_REQUEUES = env_int("EVALCONSOLE_RATE_LIMIT_REQUEUES", 5, minimum=0)

# --- AI judge ---
EVALCONSOLE_JUDGE_BASE_URL = env_str("EVALCONSOLE_JUDGE_BASE_URL", "https://api.openai.com/v1")
EVALCONSOLE_JUDGE_API_KEY = env_secret("EVALCONSOLE_JUDGE_API_KEY")
EVALCONSOLE_JUDGE_MODEL = env_str("EVALCONSOLE_JUDGE_MODEL", "gpt-4o-mini")
EVALCONSOLE_JUDGE_TIMEOUT_S = env_int("EVALCONSOLE_JUDGE_TIMEOUT_S", 60, minimum=1)
EVALCONSOLE_JUDGE_RETRIES = env_int("EVALCONSOLE_JUDGE_RETRIES", 2, minimum=0)  # after the first attempt
EVALCONSOLE_JUDGE_BACKOFF_MS = env_int("EVALCONSOLE_JUDGE_BACKOFF_MS", 500, minimum=0)  # doubles per retry
EVALCONSOLE_JUDGE_MAX_RETRY_AFTER_S = env_int("EVALCONSOLE_JUDGE_MAX_RETRY_AFTER_S", 30, minimum=0)


def _judge_context_tokens(name: str) -> dict[str, int]:
    """`model=tokens,model=tokens`: entries added to (or overriding)
    checks.kinds.judging.DEFAULT_CONTEXT_TABLE."""
    table: dict[str, int] = {}
    for item in env_list(name, []):
        model, _, tokens = item.partition("=")
        try:
            table[model.strip()] = int(tokens)
        except ValueError:
            raise ImproperlyConfigured(f"{name}: expected model=tokens, got {item!r}") from None
        if not model.strip() or table[model.strip()] < 256:
            raise ImproperlyConfigured(f"{name}: {item!r} needs a model name and at least 256 tokens")
    return table


# Context window per judge model (longest prefix match); unknown models get the default below.
EVALCONSOLE_JUDGE_CONTEXT_TOKENS = _judge_context_tokens("EVALCONSOLE_JUDGE_CONTEXT_TOKENS")
EVALCONSOLE_JUDGE_DEFAULT_CONTEXT_TOKENS = env_int(
    "EVALCONSOLE_JUDGE_DEFAULT_CONTEXT_TOKENS", 8192, minimum=256
)
EVALCONSOLE_JUDGE_REPLY_TOKENS = env_int("EVALCONSOLE_JUDGE_REPLY_TOKENS", 512, minimum=16)
# Judge tokens (in + out) a team may spend per calendar month unless the team sets its own budget.
EVALCONSOLE_JUDGE_MONTHLY_TOKEN_BUDGET = env_int(
    "EVALCONSOLE_JUDGE_MONTHLY_TOKEN_BUDGET", 2_000_000, minimum=0
)

# --- Tasks ---
EVALCONSOLE_TASK_RETENTION_DAYS = env_int("EVALCONSOLE_TASK_RETENTION_DAYS", 90, minimum=1)
# Tasks one one-off evaluation may cover ("select all matching" included).
EVALCONSOLE_MAX_EVALUATION_TASKS = env_int("EVALCONSOLE_MAX_EVALUATION_TASKS", 5000, minimum=1)
# Task ingestion has its own per-token budget, so a service posting one task at a time is not cut off.
EVALCONSOLE_API_INGEST_THROTTLE = env_str("EVALCONSOLE_API_INGEST_THROTTLE", "6000/min")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "WARNING")},
    "loggers": {
        "django_q": {"handlers": ["console"], "level": env_str("Q_LOG_LEVEL", "WARNING"), "propagate": False},
        # django-q2 logs as "django-q" (with a hyphen).
        "django-q": {"handlers": ["console"], "level": env_str("Q_LOG_LEVEL", "WARNING"), "propagate": False},
    },
}
