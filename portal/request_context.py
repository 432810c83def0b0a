"""The id of the request being served, so services can record it without passing the request around."""

from __future__ import annotations

from contextvars import ContextVar

_request_id: ContextVar[str | None] = ContextVar("portal_request_id", default=None)


def current_request_id() -> str | None:
    """The current request's id, or None outside a request (commands, tasks)."""
    return _request_id.get()


def set_request_id(value: str | None):
    """Bind an id; returns the token to pass to reset_request_id."""
    return _request_id.set(value)


def reset_request_id(token) -> None:
    _request_id.reset(token)
