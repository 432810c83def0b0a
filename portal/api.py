"""API plumbing shared by every app: the JSON error format {"code": ..., "detail": ...}."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from django.urls import NoReverseMatch, reverse
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from portal.errors import ApplicationError, UnavailableError


def _first_message(detail) -> str:
    if isinstance(detail, list | tuple) and detail:
        return _first_message(detail[0])
    if isinstance(detail, dict) and detail:
        key, value = next(iter(detail.items()))
        message = _first_message(value)
        return message if key == "non_field_errors" else f"{key}: {message}"
    return str(detail)


def exception_handler(exc, context):
    """Every API error as {"code": stable_code, "detail": message}; validation errors add "errors"."""
    if isinstance(exc, ApplicationError):
        body = {"code": exc.code, "detail": exc.detail, **exc.extra}
        response = Response(body, status=exc.status_code)
        if isinstance(exc, UnavailableError):
            response["Retry-After"] = str(exc.retry_after_s)
        return response
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(
            exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
        )
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()

    response = drf_exception_handler(exc, context)
    if response is None:
        return None  # an unexpected error: let Django log it and answer 500
    if isinstance(exc, exceptions.ValidationError):
        response.data = {
            "code": "invalid",
            "detail": _first_message(exc.detail),
            "errors": exc.detail,
        }
        response.status_code = status.HTTP_400_BAD_REQUEST
    elif isinstance(exc, exceptions.APIException):
        codes = exc.get_codes()
        code = codes if isinstance(codes, str) else exc.default_code
        response.data = {"code": code, "detail": _first_message(exc.detail)}
        if isinstance(exc, exceptions.NotAuthenticated):
            response.data["detail"] += _token_hint(context.get("request"))
    return response


def _token_hint(request) -> str:
    """Where to get an API token (a 401 without credentials; `portal submit` shows this detail as it is)."""
    try:
        path = reverse("accounts:tokens")
    except NoReverseMatch:  # pragma: no cover - the accounts URLs are always mounted
        return ""
    where = request.build_absolute_uri(path) if request is not None else path
    return f" Send an API token as 'Authorization: Token <key>'; create one at {where}"
