"""The submitter's own transitions: submit and withdraw."""

from __future__ import annotations

from review.lifecycle import SUBMISSION


def submission_submit(*, submission, actor):
    """draft -> submitted, only when the latest version's latest check passed; that version is frozen.
    The `submit` row of review.lifecycle.SUBMISSION."""
    SUBMISSION.take(actor, submission, "submit")
    return submission


def submission_withdraw(*, submission, actor, reason: str):
    """Any non-terminal state -> withdrawn, by a submitter of the organisation, with a reason.
    The `withdraw` row of review.lifecycle.SUBMISSION."""
    SUBMISSION.take(actor, submission, "withdraw", reason=reason)
    return submission
