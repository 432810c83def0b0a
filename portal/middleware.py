"""Compression of text answers, request-id middleware (a sane X-Request-ID from the proxy, or a new one, echoed back), the 405 page,
refusing request text the database cannot store, the security headers (CSP, Permissions-Policy) and the client
address behind trusted proxies."""

from __future__ import annotations

import re
import uuid

from django.conf import settings
from django.middleware.gzip import GZipMiddleware
from django.shortcuts import render

from accounts.selectors import request_memo
from portal import errorpages
from portal.request_context import reset_request_id, set_request_id
from portal.textsafety import UnstorableTextError, require_storable_form, text_problem

REQUEST_ID_HEADER = "X-Request-ID"
_SAFE_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


class RequestIDMiddleware:
    """Binds request.request_id for the request's duration (also visible to services via request_context)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        incoming = request.headers.get(REQUEST_ID_HEADER, "")
        # A client-chosen id lands in the audit log: only accept a short, plain token.
        request_id = incoming if _SAFE_ID.match(incoming) else uuid.uuid4().hex
        request.request_id = request_id
        token = set_request_id(request_id)
        try:
            response = self.get_response(request)
        finally:
            reset_request_id(token)
        response[REQUEST_ID_HEADER] = request_id
        return response


class RoleMemoMiddleware:
    """A read-only request (GET, HEAD) reads the user's memberships, global roles and conflicts once
    (accounts.selectors.request_memo), however many headers, visibility rules and permission checks ask."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.method not in ("GET", "HEAD"):
            return self.get_response(request)
        with request_memo():
            return self.get_response(request)


class MethodNotAllowedPageMiddleware:
    """A page address opened with the wrong method (a GET on a form's POST-only target) gets the portal's 405 page.

    Django's `require_POST` and class-based views answer with an empty `HttpResponseNotAllowed`, which a browser
    shows as a blank "HTTP ERROR 405". The API keeps its JSON errors: only empty, non-API answers are replaced.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if response.status_code != 405 or request.path.startswith("/api/") or response.content:
            return response
        page = render(
            request,
            "405.html",
            {
                "method": request.method,
                "allowed": response.get("Allow", ""),
                "back": _back_link(request.path),
            },
            status=405,
        )
        if response.has_header("Allow"):
            page["Allow"] = response["Allow"]
        return page


_ACTION_PATH = re.compile(r"^/submissions/(\d+)/")


def _back_link(path: str) -> tuple[str, str]:
    """Where a lost user most likely wanted to be: the submission an action belongs to, else the dashboard."""
    match = _ACTION_PATH.match(path)
    if match:
        return f"/submissions/{match.group(1)}/", "Back to the submission"
    if path.startswith("/systems/"):
        return "/systems/", "Back to your systems"
    if path.startswith("/accounts/logout"):
        return "/", "Back to the home page"
    return "/dashboard/", "Go to your dashboard"


class StorableInputMiddleware:
    """Headers, query strings and URL-encoded page forms holding a NUL character are refused with a 400 naming
    the field (JSON and API form bodies are checked by portal.parsers, multipart page forms by their form fields);
    a path with a NUL names nothing (404). PostgreSQL would otherwise refuse the text with a 500."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if text_problem(request.path):
            return errorpages.page_not_found(request)
        try:
            for name, value in request.headers.items():  # e.g. an Idempotency-Key is stored
                if name != "Cookie" and isinstance(value, str) and text_problem(value):
                    raise UnstorableTextError(f"The {name} header", text_problem(value) or "")
            require_storable_form(request.GET)
            if (
                request.method == "POST"
                and not errorpages.is_api(request)
                and request.content_type == "application/x-www-form-urlencoded"
            ):
                require_storable_form(request.POST)
        except UnstorableTextError as refused:
            if errorpages.is_api(request):
                return errorpages.api_error(refused.code, refused.detail, 400, field=refused.field)
            return render(request, "400.html", {"detail": refused.detail}, status=400)
        return self.get_response(request)


class SecurityHeadersMiddleware:
    """Content-Security-Policy and Permissions-Policy on every response (settings.PORTAL_CONTENT_SECURITY_POLICY,
    settings.PORTAL_PERMISSIONS_POLICY). Scripts come only from the portal's own files: no inline <script>, no
    onclick=, no eval. A view that sets its own header keeps it."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        csp = settings.PORTAL_CONTENT_SECURITY_POLICY
        if csp and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = csp
        policy = settings.PORTAL_PERMISSIONS_POLICY
        if policy and "Permissions-Policy" not in response:
            response["Permissions-Policy"] = policy
        return response


def client_ip(request) -> str:
    """The client's address: REMOTE_ADDR, or - behind settings.PORTAL_TRUSTED_PROXIES reverse proxies, each
    appending to X-Forwarded-For - the address the outermost trusted proxy saw. With no trusted proxy (the
    default) a client-sent X-Forwarded-For is ignored; DRF's throttles follow the same setting (NUM_PROXIES)."""
    remote = request.META.get("REMOTE_ADDR", "")
    hops = settings.PORTAL_TRUSTED_PROXIES
    if hops <= 0:
        return remote
    forwarded = [
        part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()
    ]
    if not forwarded:
        return remote
    return forwarded[-min(hops, len(forwarded))]


# What is worth compressing: pages, JSON, CSV, scripts and styles, SVG. Archives, images and logs a download
# streams are sent as they are (their bytes are compressed already, or a Range request must reach them whole).
COMPRESSIBLE = re.compile(r"^(text/|application/(json|javascript|xml|problem\+json)|image/svg\+xml)")


class CompressTextMiddleware(GZipMiddleware):
    """Django's gzip of an answer (for a client that accepts it, above 200 bytes, Vary: Accept-Encoding), for
    whole text answers only: the board's HTML goes from 19 KB to under 5 KB. Static files are whitenoise's, which
    serves its own precompressed copies."""

    def process_response(self, request, response):
        if response.streaming or not COMPRESSIBLE.match(response.get("Content-Type", "")):
            return response
        return super().process_response(request, response)
