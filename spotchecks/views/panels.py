"""The spot-check panel of a submission's audit page (review.views.auditor includes it): claim beside re-measurement
per figure."""

from __future__ import annotations

from access.visibility import spotchecks_visible_to
from review import lifecycle
from spotchecks import selectors
from submissions.endpoints import endpoint_visible_to
from submissions.models import Submission


def audit_panel_context(user, submission: Submission) -> dict:
    """What the audit page's spot-check panel shows (also the polled fragment)."""
    spot_checks = selectors.spotchecks_of(spotchecks_visible_to(user), submission)
    claim = selectors.claim_of(submission)
    endpoint = endpoint_visible_to(user, submission)
    return {
        "submission": submission,
        "spotcheck_endpoint": endpoint,
        "spotcheck_claim": claim,
        "spotcheck_points": claim.points,
        "spotcheck_rows": [
            {
                "spot_check": spot_check,
                "figures": selectors.spotcheck_rows(spot_check),
                "acceptance": selectors.acceptance_at_90(spot_check),
                "basis": selectors.spotcheck_basis(spot_check),
                "run_longer": selectors.spotcheck_run_longer(spot_check),
            }
            for spot_check in spot_checks
        ],
        "spotcheck_active": any(s.in_state("active") for s in spot_checks),
        "spotcheck_allowed": lifecycle.allowed(user, submission, "spot_check") and endpoint is not None,
    }
