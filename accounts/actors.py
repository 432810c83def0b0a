"""Every actor the workflow tables name, and the role sets behind them, defined once (portal.policy.Actor).

An actor is judged on the object of the row at the moment of the action. The ones here need only accounts/ to
judge: the organisation that owns an object (`owner_organisation_id`), the global roles, and the portal itself
acting with no user (a worker, a schedule). Actors that need a review's state (an assigned reviewer, an
objector) live beside the submission's table in review.lifecycle, each once too.
"""

from __future__ import annotations

from django.core.exceptions import FieldDoesNotExist

from accounts.models import Membership
from accounts.selectors import user_is_auditor, user_is_chair, user_org_ids
from portal.policy import Actor

# Who acts for an organisation: uploads, submits, publishes, declares endpoints, creates previews.
SUBMITTER_ROLES = (Membership.Role.SUBMITTER, Membership.Role.ORG_ADMIN)


def owner_organisation_id(obj) -> int | None:
    """The organisation that owns a row of any table with a status: its submission's (an upload, a publication, a
    review's rows), its version's submission's (a check run, a waiver), its publication's submission's (a revision,
    a challenge), else its own (a submission, a preview, a system). A challenge's or an assignment's own
    `organisation` is the challenger's or the reviewer's, never the owner: the submission comes first."""
    for path in OWNER_PATHS:
        value = obj
        for name in path:
            value = _forward(value, name)
            if value is None:
                break
        else:
            return value
    return None


def _forward(obj, name: str):
    """`obj.name` when it is a field the row holds (never a reverse relation, which would cost a query and name
    another row: a submission's publication)."""
    try:
        field = obj._meta.get_field(name)
    except (AttributeError, FieldDoesNotExist):
        return None
    return getattr(obj, name, None) if field.concrete else None


OWNER_PATHS = (
    ("submission", "organisation_id"),
    ("version", "submission", "organisation_id"),
    ("publication", "submission", "organisation_id"),
    ("organisation_id",),
)


SUBMITTER = Actor(
    "submitter",
    "submitters and org admins of the owning organisation",
    lambda user, obj: owner_organisation_id(obj) in user_org_ids(user, roles=SUBMITTER_ROLES),
)
MEMBER = Actor(
    "member",
    "members of the owning organisation",
    lambda user, obj: owner_organisation_id(obj) in user_org_ids(user),
)


def _member_of_another_organisation(user, obj) -> bool:
    """A member of an organisation, not of the one that owns the object: nobody challenges their own result."""
    organisations = user_org_ids(user)
    return bool(organisations) and owner_organisation_id(obj) not in organisations


ORG_MEMBER = Actor(
    "org_member", "members of another organisation than the result's", _member_of_another_organisation
)
AUDITOR = Actor("auditor", "auditors", lambda user, obj: user_is_auditor(user))
CHAIR = Actor("chair", "the chair", lambda user, obj: user_is_chair(user))
OVERSEER = Actor(
    "overseer", "auditors and the chair", lambda user, obj: user_is_auditor(user) or user_is_chair(user)
)

# The portal itself, acting with no user.
WORKER = Actor(
    "worker", "the portal's workers (checks, previews, spot-checks)", lambda user, obj: False, system=True
)
SCHEDULE = Actor(
    "schedule",
    "the portal's schedule (publication dates, review deadlines, scheduled spot-checks)",
    lambda user, obj: False,
    system=True,
)
# A step that follows from a person's own (the approval or the closed objection that completes the quorum) is
# taken by the portal once that person's row was judged: the person is guarded once, and named in the event.
QUORUM = Actor(
    "quorum",
    "the portal, when an approval or a closed objection completes the quorum",
    lambda user, obj: False,
    system=True,
)
# A spot-check outside tolerance (spotchecks.services) raises its challenge as the portal, not as a person.
SPOTCHECK = Actor("spotcheck", "a spot-check outside tolerance", lambda user, obj: False, system=True)
