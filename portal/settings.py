"""Django settings, read from the environment (see .env.example); zero-config gives a local SQLite demo.

One module over 600 lines on purpose: Django reads one settings module, and every setting a deployment can set is
here beside the check that refuses a bad value, in sections by topic (database, storage, security, queues, uploads,
audit, re-measurement); .env.example follows the same order."""

from __future__ import annotations

import os
import re
import secrets
from pathlib import Path

from celery.schedules import crontab
from kombu import Queue

from portal.api_tags import SPECTACULAR_TAGS
from portal.env import (
    EnvError,
    env_bool,
    env_choice,
    env_int,
    env_list,
    env_secret,
    env_str,
    env_url,
    parse_database_url,
    parse_email_url,
)
from portal.queues import queue_names, time_limits_from_env, visibility_timeout_check

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("PORTAL_VAR_DIR", str(BASE_DIR / "var")))
if not VAR_DIR.is_absolute():
    VAR_DIR = BASE_DIR / VAR_DIR

DEBUG = env_bool("DEBUG", False)


def _generated_secret(name: str) -> str:
    """A random secret generated once into VAR_DIR/name (outside git: var/ is ignored), so it survives restarts.
    Written owner-only to a private file, then linked into place (atomic, never overwrites), so processes
    starting together (runserver's reloader, gunicorn workers) all read back the same complete value."""
    key_file = VAR_DIR / name
    if not key_file.exists():
        VAR_DIR.mkdir(parents=True, exist_ok=True)
        draft = VAR_DIR / f"{name}.{os.getpid()}.tmp"
        with os.fdopen(os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as handle:
            handle.write(secrets.token_urlsafe(50))
        try:
            os.link(draft, key_file)
        except FileExistsError:
            pass
        finally:
            draft.unlink()
    return key_file.read_text(encoding="utf-8").strip()


def _secret_key() -> str:
    key = env_secret("SECRET_KEY")
    if key:
        if len(key) < 32:
            raise EnvError("SECRET_KEY is shorter than 32 characters: generate a long random value.")
        return key
    # Zero-config: a per-checkout key kept outside git.
    return _generated_secret("secret_key")


SECRET_KEY = _secret_key()

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
for _origin in CSRF_TRUSTED_ORIGINS:
    if not _origin.startswith(("http://", "https://")):
        raise EnvError(f"CSRF_TRUSTED_ORIGINS item {_origin!r} must start with http:// or https://.")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "knox",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_otp",
    "django_otp.plugins.otp_totp",
    "django_otp.plugins.otp_static",
    # Lowest layer first (docs/portal.md): each app's models import only the apps listed before it.
    "audit",
    "accounts",
    "catalog",
    "submissions",
    "review",
    "leaderboard",
    "spotchecks",
    "previews",
    "access",
]

MIDDLEWARE = [
    # Compresses text answers last, after every other middleware has written them (portal.middleware).
    "portal.middleware.CompressTextMiddleware",
    "portal.middleware.RequestIDMiddleware",
    "portal.middleware.RoleMemoMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "portal.middleware.SecurityHeadersMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django_otp.middleware.OTPMiddleware",
    # The chair and auditors act only from a session verified by their second factor (docs/accounts.md).
    "accounts.middleware.SecondFactorRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "portal.middleware.MethodNotAllowedPageMiddleware",
    "portal.middleware.StorableInputMiddleware",
]

ROOT_URLCONF = "portal.urls"
WSGI_APPLICATION = "portal.wsgi.application"
ASGI_APPLICATION = "portal.asgi.application"

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
                "portal.context_processors.navigation",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------------------------
DATABASE_URL = env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'portal.sqlite3'}")
DATABASES = {"default": parse_database_url(DATABASE_URL, base_dir=BASE_DIR)}
if DATABASES["default"]["ENGINE"].endswith("sqlite3") and DATABASES["default"]["NAME"] != ":memory:":
    Path(DATABASES["default"]["NAME"]).parent.mkdir(parents=True, exist_ok=True)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Redis: Celery broker and cache ---------------------------------------------------------
REDIS_URL = env_url("REDIS_URL", ("redis", "rediss"))
if REDIS_URL:
    CACHES = {
        "default": {
            # Redis with an outage read as misses (portal/cache_backend.py): pages are then built uncached.
            "BACKEND": "portal.cache_backend.ResilientRedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "portal",
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 2},
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# Signed-in pages and API lists cached per user under a write generation (portal/private_cache.py): only
# coherent when every process shares the cache, so on with Redis and off with the in-process cache.
PORTAL_PRIVATE_CACHE = env_bool("PORTAL_PRIVATE_CACHE", bool(REDIS_URL))

CELERY_BROKER_URL = REDIS_URL or "memory://"
# Without a broker, tasks run in-process at .delay() time: the zero-config demo needs no worker.
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", not REDIS_URL)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True
# Global limits, for a task that declares no kind; every portal task has one (portal/queues.py, below).
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 3600, minimum=1)
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 3900, minimum=1)
if CELERY_TASK_TIME_LIMIT <= CELERY_TASK_SOFT_TIME_LIMIT:
    raise EnvError("CELERY_TASK_TIME_LIMIT must be greater than CELERY_TASK_SOFT_TIME_LIMIT.")
# Queues per kind of task (unpack, point, judge, notify, publish, housekeeping), named <prefix><kind>; each kind
# has its own (soft, hard) time limits. Workers consume the queues of their role (docs/deploy.md).
PORTAL_QUEUE_PREFIX = env_str("PORTAL_QUEUE_PREFIX", "portal.")
PORTAL_TASK_TIME_LIMITS = time_limits_from_env(env_int)
CELERY_TASK_ROUTES = ("portal.queues.route_task",)
CELERY_TASK_DEFAULT_QUEUE = f"{PORTAL_QUEUE_PREFIX}housekeeping"
# What a worker started without -Q consumes: every kind (one machine, one worker); -Q picks some.
CELERY_TASK_QUEUES = [Queue(name) for name in queue_names(prefix=PORTAL_QUEUE_PREFIX)]
# One message reserved per worker process: a long point never waits behind another in a busy worker's buffer.
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TIMEZONE = "UTC"
# The hour (UTC) the daily notification digest leaves.
PORTAL_DIGEST_HOUR_UTC = env_int("PORTAL_DIGEST_HOUR_UTC", 7, minimum=0, maximum=23)
CELERY_BEAT_SCHEDULE = {
    # Verify the audit chain, then write a signed checkpoint of its head (audit.tasks.audit_checkpoint_task).
    "audit-checkpoint-daily": {
        "task": "audit.tasks.audit_checkpoint_task",
        "schedule": crontab(minute=5, hour=0),
    },
    # The one reconciler of every job kind (portal.reconcile): check runs, spot-checks, previews, direct uploads.
    "check-runs-reconcile": {"task": "submissions.tasks.check_runs_reconcile_task", "schedule": 60.0},
    "uploads-cleanup": {"task": "submissions.tasks.uploads_cleanup_task", "schedule": 900.0},
    # Multipart uploads in the bucket that no open upload owns any more (submissions.uploads.direct).
    "multipart-uploads-sweep": {"task": "submissions.tasks.multipart_uploads_sweep_task", "schedule": 3600.0},
    "review-deadlines": {"task": "review.tasks.review_deadlines_task", "schedule": 900.0},
    "publications-publish-due": {"task": "leaderboard.tasks.publications_publish_due_task", "schedule": 60.0},
    # Re-checks of what is published after a checker or rule-set change (leaderboard.publishing.rechecks): the report of a
    # campaign whose runs ended; the start only with PORTAL_RECHECK_AUTOMATIC (otherwise the chair starts one).
    "rechecks-advance": {"task": "leaderboard.tasks.rechecks_advance_task", "schedule": 60.0},
    "rechecks-start-if-due": {"task": "leaderboard.tasks.rechecks_start_if_due_task", "schedule": 3600.0},
    # Spot-checks of published results whose endpoint stays up: only with PORTAL_SPOTCHECK_SCHEDULE.
    "spotchecks-schedule": {"task": "spotchecks.tasks.spotchecks_schedule_task", "schedule": 3600.0},
    # One e-mail a day to each user who chose the digest (accounts.services.notifications.notifications_digest_send).
    "notifications-digest": {
        "task": "accounts.tasks.notifications_digest_task",
        "schedule": crontab(minute=0, hour=PORTAL_DIGEST_HOUR_UTC),
    },
}

# --- File storage ---------------------------------------------------------------------------
STORAGE_BACKEND = env_choice("STORAGE_BACKEND", ("local", "s3"), "local")
MEDIA_ROOT = Path(env_str("PORTAL_MEDIA_ROOT", str(VAR_DIR / "media")))
MEDIA_URL = "/media/"
STATIC_ROOT = Path(env_str("PORTAL_STATIC_ROOT", str(VAR_DIR / "static")))
STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
try:  # whitenoise warns on every start when STATIC_ROOT is missing (before the first collectstatic)
    STATIC_ROOT.mkdir(parents=True, exist_ok=True)
except OSError:
    pass

if STORAGE_BACKEND == "s3":
    AWS_STORAGE_BUCKET_NAME = env_str("AWS_STORAGE_BUCKET_NAME")
    if not AWS_STORAGE_BUCKET_NAME:
        raise EnvError("STORAGE_BACKEND=s3 needs AWS_STORAGE_BUCKET_NAME.")
    _default_storage = {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": AWS_STORAGE_BUCKET_NAME,
            "endpoint_url": env_url("AWS_S3_ENDPOINT_URL", ("http", "https")),
            "region_name": env_str("AWS_S3_REGION_NAME"),
            "access_key": env_secret("AWS_ACCESS_KEY_ID"),
            "secret_key": env_secret("AWS_SECRET_ACCESS_KEY"),
            "default_acl": None,
            "querystring_auth": True,
            "file_overwrite": False,
            "addressing_style": env_choice("AWS_S3_ADDRESSING_STYLE", ("path", "virtual", "auto"), "path"),
            "signature_version": "s3v4",
        },
    }
else:
    _default_storage = {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": str(MEDIA_ROOT), "base_url": MEDIA_URL},
    }
# Signed daily checkpoints of the audit log's head (audit.checkpoints): outside the database, so that whoever
# rewrites or empties the log cannot rewrite them too. The bundle store, in a folder of its own (for S3 a bucket
# with versioning or Object Lock keeps even the storage's credentials from removing them).
if STORAGE_BACKEND == "s3":
    _checkpoint_storage = {
        **_default_storage,
        "OPTIONS": {**_default_storage["OPTIONS"], "location": "audit-checkpoints"},
    }
else:
    _checkpoint_storage = {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {
            "location": str(
                BASE_DIR / env_str("PORTAL_AUDIT_CHECKPOINT_DIR", str(VAR_DIR / "audit-checkpoints"))
            )
        },
    }
# In production (docker-compose.yml sets it) static URLs carry their content's hash (portal.css ->
# portal.3f2a9c1b.css), collectstatic writes .gz and .br beside each file, and whitenoise serves those with
# Cache-Control max-age of ten years, immutable: a changed file gets a new URL. Off (the zero-config demo, the
# tests), files are served from the source folders without collectstatic, cached 60 s.
PORTAL_STATIC_MANIFEST = env_bool("PORTAL_STATIC_MANIFEST", False)
STORAGES = {
    "default": _default_storage,
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if PORTAL_STATIC_MANIFEST
        else "whitenoise.storage.CompressedStaticFilesStorage"
    },
    "audit_checkpoints": _checkpoint_storage,
}
# Without the manifest, serve straight from the source folders too, so the demo works before collectstatic has run.
WHITENOISE_USE_FINDERS = not PORTAL_STATIC_MANIFEST
WHITENOISE_ROOT = BASE_DIR / "static" / "root"  # /favicon.ico, served at the site's root like a browser asks
WHITENOISE_AUTOREFRESH = DEBUG

# Upload caps (bytes): one bundle, and everything one organisation keeps.
PORTAL_MAX_UPLOAD_BYTES = env_int("PORTAL_MAX_UPLOAD_BYTES", 20 * 1024**3, minimum=1024)
PORTAL_ORG_QUOTA_BYTES = env_int("PORTAL_ORG_QUOTA_BYTES", 500 * 1024**3, minimum=1024)
if PORTAL_ORG_QUOTA_BYTES < PORTAL_MAX_UPLOAD_BYTES:
    raise EnvError("PORTAL_ORG_QUOTA_BYTES must be at least PORTAL_MAX_UPLOAD_BYTES.")
# A system_desc.json registered through the Systems page or API (bytes).
PORTAL_SYSTEM_DESC_MAX_BYTES = env_int("PORTAL_SYSTEM_DESC_MAX_BYTES", 1024**2, minimum=1024)
# Uploads larger than this go to a temporary file instead of memory.
FILE_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024**2
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024**2

# Tokenizer files shipped with the portal; Benchmark.tokenizer_path is relative to this folder.
PORTAL_TOKENIZERS_DIR = BASE_DIR / "portal_data" / "tokenizers"

# --- E-mail ---------------------------------------------------------------------------------
_email = parse_email_url(env_str("EMAIL_URL", "console://"))
EMAIL_BACKEND = _email.backend
EMAIL_HOST = _email.host
EMAIL_PORT = _email.port
EMAIL_HOST_USER = _email.user
EMAIL_HOST_PASSWORD = env_secret("EMAIL_HOST_PASSWORD") or _email.password
EMAIL_USE_TLS = _email.use_tls
EMAIL_USE_SSL = _email.use_ssl
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "Endpoints Portal <noreply@localhost>")
SERVER_EMAIL = DEFAULT_FROM_EMAIL

# --- Auth -----------------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 10}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
AUTHENTICATION_BACKENDS = ["accounts.backends.UsernameOrEmailBackend"]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "submissions:dashboard"
LOGOUT_REDIRECT_URL = "home"
# Sign-in throttling (accounts.sign_in_lockout): failed sign-ins counted per account and per client address within the
# window; at the limit, that account (or address) is locked out for PORTAL_LOGIN_LOCKOUT_S, the right password
# included, and the account's owner gets an e-mail.
PORTAL_LOGIN_MAX_FAILURES_PER_ACCOUNT = env_int("PORTAL_LOGIN_MAX_FAILURES_PER_ACCOUNT", 5, minimum=1)
PORTAL_LOGIN_MAX_FAILURES_PER_ADDRESS = env_int("PORTAL_LOGIN_MAX_FAILURES_PER_ADDRESS", 20, minimum=1)
PORTAL_LOGIN_WINDOW_S = env_int("PORTAL_LOGIN_WINDOW_S", 900, minimum=1)
PORTAL_LOGIN_LOCKOUT_S = env_int("PORTAL_LOGIN_LOCKOUT_S", 900, minimum=1)
# The cache alias holding the counters (a shared one, Redis, when several web processes serve the site).
PORTAL_LOGIN_THROTTLE_CACHE = env_str("PORTAL_LOGIN_THROTTLE_CACHE", "default")
if PORTAL_LOGIN_THROTTLE_CACHE not in CACHES:
    raise EnvError(f"PORTAL_LOGIN_THROTTLE_CACHE names no cache: use one of {', '.join(CACHES)}.")
# Invitations to an organisation: the signed link works once, for this many days.
PORTAL_INVITATION_DAYS = env_int("PORTAL_INVITATION_DAYS", 7, minimum=1)
# The name authenticator apps show next to the six-digit codes.
OTP_TOTP_ISSUER = "Endpoints Portal"

# --- Security -------------------------------------------------------------------------------
# Secure cookies unless DEBUG; PORTAL_SECURE_COOKIES=0 lets the demo log in over plain http.
_secure_cookies = env_bool("PORTAL_SECURE_COOKIES", not DEBUG)
SESSION_COOKIE_SECURE = _secure_cookies
CSRF_COOKIE_SECURE = _secure_cookies
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SECURE_SSL_REDIRECT = env_bool("PORTAL_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = env_int("PORTAL_HSTS_SECONDS", 0 if DEBUG else 31_536_000, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("PORTAL_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("PORTAL_HSTS_PRELOAD", False)
# Forwarded headers are trusted only when these say so (gunicorn itself trusts none: deploy/gunicorn.conf.py).
if env_bool("PORTAL_BEHIND_TLS_PROXY", False):
    # Only safe when a proxy in front always sets (and strips client-sent) X-Forwarded-Proto.
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# Reverse proxies in front that each append the client's address to X-Forwarded-For (deploy/nginx.conf: 1).
# 0: the header is ignored and the client is REMOTE_ADDR (portal.middleware.client_ip, DRF's throttles).
PORTAL_TRUSTED_PROXIES = env_int("PORTAL_TRUSTED_PROXIES", 0, minimum=0)
# Scripts only from the portal's own files (no inline script or handler, no eval); styles may be inline (series
# colours are style attributes); nothing from other sites; no framing.
PORTAL_CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; object-src 'none'; base-uri 'self'; "
    "form-action 'self'; frame-ancestors 'none'"
)
# Browser features no page of the portal uses.
PORTAL_PERMISSIONS_POLICY = (
    "accelerometer=(), autoplay=(), camera=(), display-capture=(), geolocation=(), gyroscope=(), "
    "magnetometer=(), microphone=(), midi=(), payment=(), serial=(), usb=(), xr-spatial-tracking=()"
)

# --- Internationalisation -------------------------------------------------------------------
LANGUAGE_CODE = "en-gb"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# --- API ------------------------------------------------------------------------------------
# API tokens (docs/api-tokens.md): django-rest-knox keeps a SHA-512 digest of each key, never the key; the
# token rows are accounts.ApiToken (name, scope, last use, revocation). Keys are sent as "Authorization: Token <key>".
KNOX_TOKEN_MODEL = "accounts.ApiToken"
# knox's own AuthToken is swapped out for accounts.ApiToken: its migrations would only make an unused table (whose
# foreign key to the users would also stop `flush` from emptying them).
MIGRATION_MODULES = {"knox": None}
REST_KNOX = {
    "AUTH_HEADER_PREFIX": "Token",
    "TOKEN_TTL": None,  # each token's expiry is chosen when it is created (accounts.services.api_token_create)
    "AUTO_REFRESH": False,
    "TOKEN_PREFIX": "ep_",  # recognisable in a leaked file or a secret scanner
}
# Requests per account and per address for token-authenticated API calls, and failed token attempts per address
# (then 429 with Retry-After). Session (browser) requests are not throttled here.
PORTAL_API_THROTTLE_RATES = {
    "token_user": env_str("PORTAL_API_RATE_PER_ACCOUNT", "600/minute"),
    "token_address": env_str("PORTAL_API_RATE_PER_ADDRESS", "1200/minute"),
    "token_failure": env_str("PORTAL_API_RATE_FAILED_TOKENS", "20/minute"),
}
for _scope, _rate in PORTAL_API_THROTTLE_RATES.items():
    if not re.fullmatch(r"[1-9][0-9]*/(s|sec|second|m|min|minute|h|hour|d|day)", _rate or ""):
        raise EnvError(
            f"API rate {_rate!r} ({_scope}) must look like 600/minute (per second, minute, hour or day)."
        )
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # knox digests, scopes, expiry, revocation, last use; a chair's or auditor's token acts only once its owner
        # has set up two-factor sign-in.
        "accounts.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # TokenScopeAllows: a read-only token may only read. A view that sets its own permission_classes lists it too
    # (tests/accounts/test_api_tokens.py tries every unsafe endpoint with a read-only token).
    "DEFAULT_PERMISSION_CLASSES": [
        "accounts.permissions.TokenScopeAllows",
        "rest_framework.permissions.IsAuthenticated",
    ],
    "DEFAULT_THROTTLE_CLASSES": [
        "accounts.throttles.TokenAccountThrottle",
        "accounts.throttles.TokenAddressThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": dict(PORTAL_API_THROTTLE_RATES),
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "portal.api_schema.GroupedAutoSchema",
    "DEFAULT_PAGINATION_CLASS": "portal.pagination.PortalPagination",
    "DEFAULT_PARSER_CLASSES": [
        "portal.parsers.SafeJSONParser",
        "portal.parsers.SafeFormParser",
        "portal.parsers.SafeMultiPartParser",
    ],
    "PAGE_SIZE": 100,
    "EXCEPTION_HANDLER": "portal.api.exception_handler",
    # Throttles key anonymous clients by address: X-Forwarded-For only behind trusted proxies.
    "NUM_PROXIES": PORTAL_TRUSTED_PROXIES,
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Endpoints Portal API",
    "DESCRIPTION": "MLPerf Endpoints results: benchmarks, submissions, reviews and published leaderboards.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "TAGS": SPECTACULAR_TAGS,  # one section per group of users (portal/api_tags.py)
    "ENUM_NAME_OVERRIDES": {
        "SubmissionStatusEnum": "submissions.models.Submission.Status",
        "CheckRunStatusEnum": "submissions.models.CheckRun.Status",
        "UploadStatusEnum": "submissions.models.Upload.Status",
    },
}

# --- HTTP edge (docs/http-edge.md) -------------------------------------------------------------
# An API JSON or form body larger than this is refused (body-too-large); files go through the upload API.
PORTAL_API_BODY_MAX_BYTES = env_int("PORTAL_API_BODY_MAX_BYTES", 4 * 1024**2, minimum=64 * 1024)
if PORTAL_API_BODY_MAX_BYTES < 2 * PORTAL_SYSTEM_DESC_MAX_BYTES:
    raise EnvError("PORTAL_API_BODY_MAX_BYTES must be at least twice PORTAL_SYSTEM_DESC_MAX_BYTES.")
# Arrays/objects nested deeper than this in an API JSON body are refused (json-too-deep).
PORTAL_API_JSON_MAX_DEPTH = env_int("PORTAL_API_JSON_MAX_DEPTH", 32, minimum=4, maximum=200)
# The largest ?limit= of an API list (a larger one is clamped).
PORTAL_API_MAX_PAGE_SIZE = env_int("PORTAL_API_MAX_PAGE_SIZE", 1000, minimum=100)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    # An expected 4xx (403, 404, a refused request) is logged on one line; only 5xx keep their traceback.
    "filters": {"client_errors_one_line": {"()": "portal.log_filters.ExpectedClientErrorsOneLine"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "plain",
            "filters": ["client_errors_one_line"],
        }
    },
    "loggers": {"django.request": {"filters": ["client_errors_one_line"]}},
    "root": {
        "handlers": ["console"],
        "level": env_choice("LOG_LEVEL", ("DEBUG", "INFO", "WARNING", "ERROR"), "INFO"),
    },
}

# --- Review and audit (review app) --------------------------------------------------------------
# Where e-mails link to (notifications name pages by their path on this site).
PORTAL_SITE_URL = env_str("PORTAL_SITE_URL", "http://127.0.0.1:8000")
# Reviewers the chair's "assign N" draws; approvals that make a submission peer reviewed.
PORTAL_REVIEWERS_PER_SUBMISSION = env_int("PORTAL_REVIEWERS_PER_SUBMISSION", 2, minimum=1)
PORTAL_REVIEW_QUORUM = env_int("PORTAL_REVIEW_QUORUM", 2, minimum=1)
# Days a reviewer has for the review (then released, and the chair told).
PORTAL_REVIEW_DEADLINE_DAYS = env_int("PORTAL_REVIEW_DEADLINE_DAYS", 14, minimum=1)
# Business days the submitter has to answer an objection (a reminder the day before, escalation after).
PORTAL_OBJECTION_ANSWER_BUSINESS_DAYS = env_int("PORTAL_OBJECTION_ANSWER_BUSINESS_DAYS", 3, minimum=1)
# Days the submitter has to answer an auditor's evidence request.
PORTAL_EVIDENCE_DAYS = env_int("PORTAL_EVIDENCE_DAYS", 5, minimum=1)

# --- Audit log (audit app) ------------------------------------------------------------------------
# Key of the HMAC every audit event carries (audit.hashing.event_signature), kept outside the database: whoever
# can write the audit table but lacks this key cannot forge or rewrite an event unnoticed. Unset: generated once
# into VAR_DIR/audit_hmac_key (shared by web, worker and beat through the var volume). Never change it: events
# signed with the old key no longer verify.
PORTAL_AUDIT_HMAC_KEY = env_secret("PORTAL_AUDIT_HMAC_KEY") or _generated_secret("audit_hmac_key")
if len(PORTAL_AUDIT_HMAC_KEY) < 32:
    raise EnvError("PORTAL_AUDIT_HMAC_KEY is shorter than 32 characters: generate a long random value.")

# --- Evidence packs and the public transparency log (docs/evidence.md) ------------------------------------
# The Ed25519 key that signs every pack's statement and every checkpoint of the public log, as a signed-note signer
# key line (PRIVATE+KEY+<name>+<id>+<base64>), from PORTAL_EVIDENCE_KEY or the file named by PORTAL_EVIDENCE_KEY_FILE;
# never in the repository. Unset: generated once into VAR_DIR/evidence_signing_key (the demo's own key).
PORTAL_EVIDENCE_KEY = env_secret("PORTAL_EVIDENCE_KEY")
PORTAL_EVIDENCE_KEY_PATH = VAR_DIR / "evidence_signing_key"
# Retired keys' public halves (verifier key lines), so what they signed stays verifiable after a rotation.
PORTAL_EVIDENCE_RETIRED_KEYS_FILE = env_str("PORTAL_EVIDENCE_RETIRED_KEYS_FILE", "") or None
# The log's name (its checkpoints' origin line, and the signing key's name).
PORTAL_LOG_ORIGIN = env_str("PORTAL_LOG_ORIGIN", "") or (
    PORTAL_SITE_URL.split("://", 1)[-1].rstrip("/") + "/log"
).replace(":", "-")

# --- Declared endpoints and re-measurement (docs/remeasurement.md) ----------------------------------------
# Key of the Fernet encryption of a declared endpoint's credential (any long string; the Fernet key is its SHA-256).
# Required in production; unset in DEBUG or the zero-config run (no SECRET_KEY set), derived from SECRET_KEY.
# Changing it makes every stored credential unreadable (the submitter declares it again).
PORTAL_ENDPOINT_KEY = env_secret("PORTAL_ENDPOINT_KEY") or ""
if not PORTAL_ENDPOINT_KEY:
    if not (DEBUG or env_secret("SECRET_KEY") is None):
        raise EnvError(
            "PORTAL_ENDPOINT_KEY is not set: generate a long random value (it encrypts declared endpoints' "
            "credentials; docs/remeasurement.md)."
        )
    PORTAL_ENDPOINT_KEY = "derived-from-secret-key:" + SECRET_KEY
elif len(PORTAL_ENDPOINT_KEY) < 32:
    raise EnvError("PORTAL_ENDPOINT_KEY is shorter than 32 characters: generate a long random value.")
# The egress guard (portal.egress): loopback endpoints are refused unless this is set (tests and the demo only).
PORTAL_EGRESS_ALLOW_LOOPBACK = env_bool("PORTAL_EGRESS_ALLOW_LOOPBACK", False)
PORTAL_EGRESS_CONNECT_TIMEOUT_S = env_int("PORTAL_EGRESS_CONNECT_TIMEOUT_S", 5, minimum=1, maximum=60)
PORTAL_EGRESS_READ_TIMEOUT_S = env_int("PORTAL_EGRESS_READ_TIMEOUT_S", 60, minimum=1, maximum=600)
PORTAL_EGRESS_MAX_REQUESTS = env_int("PORTAL_EGRESS_MAX_REQUESTS", 2000, minimum=1)
PORTAL_EGRESS_MAX_DURATION_S = env_int("PORTAL_EGRESS_MAX_DURATION_S", 600, minimum=1)
PORTAL_EGRESS_RATE_PER_S = env_int("PORTAL_EGRESS_RATE_PER_S", 50, minimum=1)
# GuideLLM's executable in its own venv (`make guidellm`), and how long a spot-check measures one point.
PORTAL_GUIDELLM_BIN = env_str("PORTAL_GUIDELLM_BIN", str(BASE_DIR / ".venv-guidellm" / "bin" / "guidellm"))
PORTAL_SPOTCHECK_DURATION_S = env_int("PORTAL_SPOTCHECK_DURATION_S", 30, minimum=5, maximum=3600)
if PORTAL_SPOTCHECK_DURATION_S > PORTAL_EGRESS_MAX_DURATION_S:
    raise EnvError(
        f"PORTAL_SPOTCHECK_DURATION_S ({PORTAL_SPOTCHECK_DURATION_S} s) is longer than the egress guard lets a "
        f"spot-check run (PORTAL_EGRESS_MAX_DURATION_S, {PORTAL_EGRESS_MAX_DURATION_S} s): shorten it or raise that."
    )
# GuideLLM's synthetic prompts: their size in tokens (counted with this tokenizer folder) and the output asked for.
PORTAL_SPOTCHECK_TOKENIZER = Path(
    env_str("PORTAL_SPOTCHECK_TOKENIZER", str(BASE_DIR / "portal_data" / "tokenizers" / "sample-bpe-4k"))
)
if not PORTAL_SPOTCHECK_TOKENIZER.is_absolute():
    PORTAL_SPOTCHECK_TOKENIZER = BASE_DIR / PORTAL_SPOTCHECK_TOKENIZER
PORTAL_SPOTCHECK_PROMPT_TOKENS = env_int("PORTAL_SPOTCHECK_PROMPT_TOKENS", 128, minimum=1, maximum=32768)
PORTAL_SPOTCHECK_OUTPUT_TOKENS = env_int("PORTAL_SPOTCHECK_OUTPUT_TOKENS", 128, minimum=1, maximum=32768)
# The beat schedule spot-checks published results whose endpoint stays up, each every N days (off by default:
# auditors and the chair start spot-checks from the audit page).
PORTAL_SPOTCHECK_SCHEDULE = env_bool("PORTAL_SPOTCHECK_SCHEDULE", False)
PORTAL_SPOTCHECK_EVERY_DAYS = env_int("PORTAL_SPOTCHECK_EVERY_DAYS", 7, minimum=1)

# --- Check pipeline and uploads (submissions app) -------------------------------------------
# Chords (one task per load point, joined by one task per version) need a result backend.
CELERY_RESULT_BACKEND = REDIS_URL or None
CELERY_RESULT_EXPIRES = 24 * 3600
# acks_late tasks: Redis re-delivers an unacknowledged message after this; it must exceed the longest hard time
# limit, or a long point is handed to a second worker while it still runs (start-up stops otherwise).
CELERY_BROKER_VISIBILITY_TIMEOUT_S = env_int(
    "CELERY_BROKER_VISIBILITY_TIMEOUT_S",
    max(hard for _soft, hard in [*PORTAL_TASK_TIME_LIMITS.values(), (0, CELERY_TASK_TIME_LIMIT)]) + 600,
    minimum=1,
)
visibility_timeout_check(
    visibility_timeout_s=CELERY_BROKER_VISIBILITY_TIMEOUT_S,
    time_limits={**PORTAL_TASK_TIME_LIMITS, "task": (CELERY_TASK_SOFT_TIME_LIMIT, CELERY_TASK_TIME_LIMIT)},
)
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": CELERY_BROKER_VISIBILITY_TIMEOUT_S}
CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS = CELERY_BROKER_TRANSPORT_OPTIONS
# Start messages of checks committed while the broker was down wait in the outbox (submissions.CheckOutbox);
# this task sends them once the broker is back (on the housekeeping queue).
PORTAL_CHECK_OUTBOX_EVERY_S = env_int("PORTAL_CHECK_OUTBOX_EVERY_S", 10, minimum=1)
CELERY_BEAT_SCHEDULE["check-outbox-send"] = {
    "task": "submissions.tasks.check_outbox_send_task",
    "schedule": float(PORTAL_CHECK_OUTBOX_EVERY_S),
    "options": {"expires": float(PORTAL_CHECK_OUTBOX_EVERY_S) * 3},
}
# The beat schedule starts a re-check of every published revision by itself when the checker or a rule set changed
# version (leaderboard.publishing.rechecks); off, the chair starts one from /review/chair/rechecks/.
PORTAL_RECHECK_AUTOMATIC = env_bool("PORTAL_RECHECK_AUTOMATIC", False)
# A running check whose heartbeat is older than this is re-queued (or failed after the last attempt).
PORTAL_CHECK_HEARTBEAT_TIMEOUT_S = env_int("PORTAL_CHECK_HEARTBEAT_TIMEOUT_S", 300, minimum=5)
PORTAL_CHECK_MAX_ATTEMPTS = env_int("PORTAL_CHECK_MAX_ATTEMPTS", 3, minimum=1)
# Also run the official checker (the `official` extra) on every version and report disagreements.
PORTAL_CHECK_OFFICIAL = env_bool("PORTAL_CHECK_OFFICIAL", True)
# A queued check that has not started after this long lost its start message (e.g. Redis was flushed): it is
# sent again as the next attempt (or failed after the last). Keep it above the longest normal wait in the queue.
PORTAL_CHECK_QUEUED_TIMEOUT_S = env_int("PORTAL_CHECK_QUEUED_TIMEOUT_S", 3600, minimum=5)
# Each check worker keeps the stored files it read in this folder, keyed by SHA-256 (a point task reads only
# its own archive; repeats read nothing from storage), least recently used evicted beyond the byte cap.
PORTAL_CHECK_CACHE_DIR = Path(env_str("PORTAL_CHECK_CACHE_DIR", str(VAR_DIR / "check-cache")))
if not PORTAL_CHECK_CACHE_DIR.is_absolute():
    PORTAL_CHECK_CACHE_DIR = BASE_DIR / PORTAL_CHECK_CACHE_DIR
# The goodput tables of the SLO finder (leaderboard.board.goodput): written by the publish worker after a publication,
# memory-mapped read-only by the web processes. Web and workers of one host share this directory.
PORTAL_GOODPUT_TABLE_DIR = Path(env_str("PORTAL_GOODPUT_TABLE_DIR", str(VAR_DIR / "goodput-tables")))
if not PORTAL_GOODPUT_TABLE_DIR.is_absolute():
    PORTAL_GOODPUT_TABLE_DIR = BASE_DIR / PORTAL_GOODPUT_TABLE_DIR
# Build them in the worker when a publication commits (off: the first SLO query after one builds them).
PORTAL_GOODPUT_TABLE_ON_PUBLISH = env_bool("PORTAL_GOODPUT_TABLE_ON_PUBLISH", True)
PORTAL_CHECK_CACHE_MAX_BYTES = env_int("PORTAL_CHECK_CACHE_MAX_BYTES", 20 * 1024**3, minimum=0)
# A version whose archives inflate to more than this many times its size fails its check at the start with an
# `archive-inflation` finding (real result files compress 5 to 20 times; the per-member cap of 1000 x still
# lets a 19 MB archive inflate to 19 GB). Every step reads with the same cap.
PORTAL_CHECK_MAX_INFLATION = env_int("PORTAL_CHECK_MAX_INFLATION", 100, minimum=2)
# Test hook only: each per-point task sleeps this long (heart-beating) before checking its point.
PORTAL_CHECK_TEST_POINT_DELAY_S = env_int("PORTAL_CHECK_TEST_POINT_DELAY_S", 0, minimum=0)
# Chunked uploads: every part but the last has exactly this size.
PORTAL_UPLOAD_PART_BYTES = env_int("PORTAL_UPLOAD_PART_BYTES", 8 * 1024**2, minimum=64 * 1024)
# Direct uploads (S3 storage; docs/uploads-and-checks.md, "Direct uploads"): parts of this size go from the client
# straight to the bucket (S3 allows 5 MiB to 5 GiB), raised for a file that would need more than MAX_PARTS parts;
# each presigned part URL is valid this long (a client signs again when one expired).
PORTAL_UPLOAD_DIRECT_PART_BYTES = env_int(
    "PORTAL_UPLOAD_DIRECT_PART_BYTES", 64 * 1024**2, minimum=5 * 1024**2, maximum=5 * 1024**3
)
PORTAL_UPLOAD_DIRECT_MAX_PARTS = env_int("PORTAL_UPLOAD_DIRECT_MAX_PARTS", 10_000, minimum=1, maximum=10_000)
PORTAL_UPLOAD_SIGN_EXPIRY_S = env_int("PORTAL_UPLOAD_SIGN_EXPIRY_S", 3600, minimum=60, maximum=7 * 24 * 3600)
# The bucket's address as submitters' machines reach it, when it differs from AWS_S3_ENDPOINT_URL (docker-compose:
# the portal reaches http://s3:8333, a submitter http://localhost:8333); presigned part URLs name it.
PORTAL_UPLOAD_BUCKET_URL = env_url("PORTAL_UPLOAD_BUCKET_URL", ("http", "https"))
if STORAGE_BACKEND == "s3":
    # The upload page PUTs direct upload parts to the bucket: its origin joins the CSP's connect-src (AWS without
    # an endpoint URL: the regional S3 hosts).
    _bucket_url = PORTAL_UPLOAD_BUCKET_URL or _default_storage["OPTIONS"]["endpoint_url"]
    _bucket_origin = "/".join(_bucket_url.split("/")[:3]) if _bucket_url else "https://*.amazonaws.com"
    PORTAL_CONTENT_SECURITY_POLICY = PORTAL_CONTENT_SECURITY_POLICY.replace(
        "connect-src 'self'", f"connect-src 'self' {_bucket_origin}"
    )
# An upload (open, or verified but never joined to a version) idle this long is aborted by the cleanup task:
# its parts are deleted and its bytes stop counting against the organisation's quota.
PORTAL_UPLOAD_EXPIRY_HOURS = env_int("PORTAL_UPLOAD_EXPIRY_HOURS", 24, minimum=1)
# Idempotency-Keys are remembered this long (a retry after that is a new request); the cleanup task deletes them.
PORTAL_IDEMPOTENCY_KEY_TTL_HOURS = env_int("PORTAL_IDEMPOTENCY_KEY_TTL_HOURS", 24, minimum=1)
