"""Log filters: an expected client error (a 4xx such as a refused 403 or a missing 404) is one line, not a
traceback; only server errors (5xx) keep theirs."""

from __future__ import annotations

import logging

_REASON_CHARS = 200


class ExpectedClientErrorsOneLine(logging.Filter):
    """Drops the traceback of a 4xx record (django.request, django.security) and appends the exception's message
    (first line, shortened) so the one line still says why."""

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if not isinstance(status, int) or not 400 <= status < 500 or not record.exc_info:
            return True
        exc = record.exc_info[1]
        reason = str(exc).strip().splitlines()[0] if exc is not None and str(exc).strip() else ""
        reason = reason.encode("unicode_escape").decode("ascii")[:_REASON_CHARS]
        if reason:
            record.msg = f"{record.getMessage()} ({type(exc).__name__}: {reason})"
        else:
            record.msg = f"{record.getMessage()} ({type(exc).__name__})"
        record.args = ()
        record.exc_info = None
        record.exc_text = None
        return True
