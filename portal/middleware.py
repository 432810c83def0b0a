"""Request-id middleware: accepts a sane X-Request-ID from the proxy or makes one, and echoes it back."""

from __future__ import annotations

import re
import uuid

from portal.request_context import reset_request_id, set_request_id

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
