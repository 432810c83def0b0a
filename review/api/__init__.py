"""API of the review app: each part registers its viewsets on the /api/v1/ router."""

from rest_framework.routers import BaseRouter

from review.api import auditor as api_audit
from review.api import chair as api_chair
from review.api import reviewer as api_reviewer
from review.api import submitter as api_submitter


def register(router: BaseRouter) -> None:
    """Add this app's viewsets to the /api/v1/ router."""
    api_reviewer.register(router)  # assignments, reviews, the thread, version diff and file browser
    api_audit.register(router)  # the audit queue, attest, evidence requests, waivers
    api_chair.register(router)  # the chair's dashboard, assignment by hand or drawn, conflicts
    api_submitter.register(router)  # who reviews a submission (for the submitting organisation)
