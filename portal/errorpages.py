"""The answers Django gives when a view does not (no route, an uncaught error, a refused request): the portal's
pages for people, and under /api/ the API's JSON error shape {"code", "detail"} (portal.api) for every status."""

from __future__ import annotations

from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.http import JsonResponse
from django.views import defaults

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


def server_error(request):
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
