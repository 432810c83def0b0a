"""The answers Django gives when a view does not (no route, an uncaught error, a refused request): the portal's
pages for people, and under /api/ the API's JSON error shape {"code", "detail"} (portal.api) for every status."""

from __future__ import annotations

import sys

from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.db import InterfaceError as DatabaseInterfaceError
from django.db import OperationalError as DatabaseOperationalError
from django.http import HttpResponse, JsonResponse
from django.utils.html import escape
from django.views import defaults
from kombu.exceptions import OperationalError as BrokerOperationalError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from portal.request_context import current_request_id

API_PREFIX = "/api/"


def is_api(request) -> bool:
    return request.path.startswith(API_PREFIX)


def api_error(code: str, detail: str, status: int, **extra) -> JsonResponse:
    return JsonResponse({"code": code, "detail": detail, **extra}, status=status)


def bad_request(request, exception=None):
    if not is_api(request):
        return defaults.bad_request(request, exception)
    if isinstance(exception, RequestDataTooBig):
        return api_error("body-too-large", "The request body is too large; send less.", 400)
    if isinstance(exception, TooManyFieldsSent | TooManyFilesSent):
        return api_error("too-many-fields", "The request carries too many form fields or files.", 400)
    return api_error("bad_request", "The request could not be read; check its headers and body.", 400)


def permission_denied(request, exception=None):
    if not is_api(request):
        return defaults.permission_denied(request, exception)
    return api_error("permission_denied", "You do not have permission to perform this action.", 403)


def page_not_found(request, exception=None):
    if not is_api(request):
        return defaults.page_not_found(request, exception)
    return api_error(
        "not_found",
        "No such API endpoint or object. The endpoints are listed at /api/v1/ and described at /api/docs/.",
        404,
    )


# What an outage of a service the portal needs raises: the database (restarting, unreachable, too many
# connections) or the broker (Redis down while a task is queued).
UNAVAILABLE = {
    "database": (DatabaseOperationalError, DatabaseInterfaceError),
    "task queue": (BrokerOperationalError, RedisConnectionError, RedisTimeoutError),
}
RETRY_AFTER_S = 30


def unavailable_service(exception: BaseException | None) -> str | None:
    """Which service's outage `exception` (or an exception it was raised from) is; None for any other error."""
    seen = 0
    while exception is not None and seen < 10:
        for service, classes in UNAVAILABLE.items():
            if isinstance(exception, classes):
                return service
        exception = exception.__cause__ or exception.__context__
        seen += 1
    return None


def service_unavailable(request, service: str) -> HttpResponse:
    """503 with Retry-After: nothing is wrong with the request, a service the portal needs is down for a moment.
    The page is plain HTML that needs no database (no template context, no session)."""
    detail = f"The portal's {service} is unavailable for a moment; nothing was lost. Try again in {RETRY_AFTER_S} s."
    if is_api(request):
        response = api_error("service-unavailable", detail, 503)
    else:
        response = HttpResponse(
            '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Unavailable for a moment'
            f"</title></head><body><h1>Unavailable for a moment</h1><p>{escape(detail)}</p></body></html>",
            status=503,
            content_type="text/html; charset=utf-8",
        )
    response["Retry-After"] = str(RETRY_AFTER_S)
    return response


def server_error(request):
    # Django calls this handler inside its `except` block: the exception is the one being handled.
    service = unavailable_service(sys.exc_info()[1])
    if service is not None:
        return service_unavailable(request, service)
    if not is_api(request):
        return defaults.server_error(request)
    request_id = getattr(request, "request_id", None) or current_request_id() or ""
    return api_error(
        "server_error",
        "The server failed to answer this request. The error is logged"
        + (f" under request id {request_id}" if request_id else "")
        + "; try again later, or report the request id if it persists.",
        500,
        request_id=request_id,
    )
