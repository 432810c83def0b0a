"""Domain errors raised by services; the API turns them into {"code", "detail"} JSON."""

from __future__ import annotations


class ApplicationError(Exception):
    """A refusal a user can act on. `code` is stable and machine-readable; `detail` is for humans."""

    code = "application_error"
    status_code = 400

    def __init__(self, detail: str, *, code: str | None = None, extra: dict | None = None):
        super().__init__(detail)
        self.detail = detail
        if code:
            self.code = code
        self.extra = extra or {}


class NotAllowedError(ApplicationError):
    """The actor may not do this."""

    code = "permission_denied"
    status_code = 403


class ConflictError(ApplicationError):
    """The object changed under the caller (e.g. a status transition lost a race)."""

    code = "conflict"
    status_code = 409


class UnavailableError(ApplicationError):
    """The answer cannot be given now (a resource it needs is not there yet); asking again later may succeed. The API
    answers 503 with a Retry-After."""

    code = "unavailable"
    status_code = 503
    retry_after_s = 60
