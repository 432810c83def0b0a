"""What templates ask about an object's state, so that none compares a status itself (tests/test_status_comparisons.py):

- `{% allowed waiver "grant" as may_decide %}`: may the request's user take this action on this object now? The
  object's workflow table answers (`Policy.allowed`: who and state; a missing precondition is the service's
  refusal, with its reason). Every form or button that changes a state is shown through it.
- `{% if run|in_state:"running" %}`: is the object in this state or named set of states (`portal.states`)? For
  wording and styles only. A verdict's words (`submissions.verdicts`, a dict whose `status` is the verdict, kept as
  it is in snapshots and the API) answer the same question of their own `status`.

It sits in access/, on top of every app, because it names every app's tables.
"""

from __future__ import annotations

from collections.abc import Mapping

from django import template
from django.contrib.auth.models import AnonymousUser

from leaderboard.models import Challenge, Publication, PublicationRevision, RecheckCampaign, RecheckResult
from leaderboard.workflow import CHALLENGE, PUBLICATION, RECHECK_CAMPAIGN, RECHECK_RESULT, REVISION
from portal.policy import Policy
from previews.models import Preview
from previews.workflow import PREVIEW
from review.lifecycle import ASSIGNMENT, EVIDENCE_REQUEST, OBJECTION, SUBMISSION, WAIVER
from review.models import Comment, EvidenceRequest, ReviewAssignment, Waiver
from spotchecks.models import SpotCheck
from spotchecks.workflow import SPOT_CHECK
from submissions.models import CheckRun, Submission, Upload
from submissions.workflow import CHECK_RUN, UPLOAD

register = template.Library()

# The table of each model with a state (tests/portal/test_workflow_tags.py: every registered table is here).
TABLES: dict[type, Policy] = {
    Submission: SUBMISSION,
    Upload: UPLOAD,
    CheckRun: CHECK_RUN,
    ReviewAssignment: ASSIGNMENT,
    Comment: OBJECTION,
    Waiver: WAIVER,
    EvidenceRequest: EVIDENCE_REQUEST,
    Publication: PUBLICATION,
    PublicationRevision: REVISION,
    Challenge: CHALLENGE,
    RecheckCampaign: RECHECK_CAMPAIGN,
    RecheckResult: RECHECK_RESULT,
    SpotCheck: SPOT_CHECK,
    Preview: PREVIEW,
}


@register.simple_tag(takes_context=True)
def allowed(context, obj, action: str) -> bool:
    """May the request's user take `action` on `obj` now (its workflow table; False for no object)."""
    if obj is None or obj == "":
        return False
    request = context.get("request")
    user = getattr(request, "user", None) or context.get("user") or AnonymousUser()  # never the portal itself
    return TABLES[type(obj)].allowed(user, obj, action)


@register.filter
def in_state(obj, name: str) -> bool:
    """Is `obj` in the state (or named set of states) `name`? False for no object."""
    if obj is None or obj == "":
        return False
    if isinstance(obj, Mapping):  # a verdict's words: its `status` is one of the verdict's own names
        return obj.get("status") == name
    return obj.in_state(name)
