"""GET /healthz: is the database, the Celery broker and the file storage usable right now?"""

from __future__ import annotations

import logging
import os

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import connection
from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

OK = "ok"
EAGER = "eager (in-process)"
_TIMEOUT_S = 2
logger = logging.getLogger(__name__)


def _error(exc: BaseException) -> str:
    # The page is public: name the failure, keep its message (hosts, users, paths) in the log.
    logger.warning("healthz: %s: %s", type(exc).__name__, exc)
    return f"error: {type(exc).__name__}"


def check_database() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # noqa: BLE001 - any failure is the answer
        return _error(exc)
    return OK


def check_broker() -> str:
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return EAGER
    url = settings.CELERY_BROKER_URL
    try:
        if url.startswith(("redis://", "rediss://")):
            import redis

            client = redis.Redis.from_url(url, socket_connect_timeout=_TIMEOUT_S, socket_timeout=_TIMEOUT_S)
            try:
                client.ping()
            finally:
                client.close()
        else:
            from kombu import Connection

            with Connection(url, connect_timeout=_TIMEOUT_S) as conn:
                conn.ensure_connection(max_retries=1)
    except Exception as exc:  # noqa: BLE001
        return _error(exc)
    return OK


def check_storage() -> str:
    try:
        location = getattr(default_storage, "location", None)
        bucket_name = getattr(default_storage, "bucket_name", None)
        if bucket_name:
            default_storage.connection.meta.client.head_bucket(Bucket=bucket_name)
        elif location:
            os.makedirs(location, exist_ok=True)
            if not os.access(location, os.W_OK):
                logger.warning("healthz: %s is not writable", location)
                return "error: storage folder is not writable"
        else:
            default_storage.exists("healthz")
    except Exception as exc:  # noqa: BLE001
        return _error(exc)
    return OK


@never_cache
@require_safe
def healthz(request):
    checks = {"database": check_database(), "broker": check_broker(), "storage": check_storage()}
    healthy = all(value in (OK, EAGER) for value in checks.values())
    return JsonResponse(checks, status=200 if healthy else 503)
