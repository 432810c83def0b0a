"""Fixtures borrowed from the review tests: peer-reviewed submissions, a requested waiver, one in review."""

from tests.review.test_audit_pages import audit_world  # noqa: F401
