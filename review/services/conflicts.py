"""Conflicts of interest declared and removed (by the member's org admins, the member, or the chair)."""

from __future__ import annotations

from django.db import transaction

from accounts.models import Membership, Organisation
from accounts.selectors import (
    user_is_chair,
    user_org_ids,
)
from audit.services import audit_event_record
from portal.errors import ApplicationError, ConflictError, NotAllowedError
from review import selectors
from review.models import Conflict, ReviewAssignment
from review.services.assignments import assignment_release_automatic


def _may_declare_for(actor, organisation: Organisation) -> bool:
    return user_is_chair(actor) or organisation.pk in user_org_ids(actor, roles=(Membership.Role.ORG_ADMIN,))


@transaction.atomic
def conflict_declare(
    *, organisation: Organisation, other: Organisation, kind: str, reason: str, actor
) -> Conflict:
    """Declare that `organisation`'s people may not review `other`'s submissions (and the other way round).
    The chair's declarations are pinned; an organisation admin declares for their own organisation. Active
    assignments that the conflict now forbids are released."""
    if not _may_declare_for(actor, organisation):
        raise NotAllowedError(f"Only the chair or an admin of {organisation.name} can declare its conflicts.")
    if organisation.pk == other.pk:
        raise ApplicationError("An organisation is always in conflict with itself.", code="invalid")
    if kind not in Conflict.Kind.values:
        raise ApplicationError(f"Kind must be one of {', '.join(Conflict.Kind.values)}.", code="invalid")
    if not (reason or "").strip():
        raise ApplicationError("Say why the two organisations are in conflict.", code="invalid")
    if Conflict.objects.filter(
        organisation__in=(organisation, other), other__in=(organisation, other)
    ).exists():
        raise ConflictError(
            f"{organisation.name} and {other.name} are already in conflict.", code="conflict-exists"
        )
    conflict = Conflict(
        organisation=organisation,
        other=other,
        kind=kind,
        reason=reason.strip(),
        pinned=user_is_chair(actor),
        declared_by=actor,
    )
    conflict.full_clean()
    conflict.save()
    audit_event_record(
        actor=actor,
        action="conflict.declared",
        obj=conflict,
        data={
            "organisation": organisation.slug,
            "other": other.slug,
            "kind": kind,
            "pinned": conflict.pinned,
        },
    )
    for assignment in ReviewAssignment.objects.filter(ReviewAssignment.states.q("active")).select_related(
        "submission", "reviewer"
    ):
        if selectors.user_is_conflicted(assignment.reviewer, assignment.submission):
            assignment_release_automatic(
                assignment, actor=actor, reason="a conflict of interest was declared"
            )
    return conflict


@transaction.atomic
def conflict_remove(*, conflict: Conflict, actor) -> None:
    """Organisations remove their own declarations; only the chair removes a pinned one."""
    if conflict.pinned and not user_is_chair(actor):
        raise NotAllowedError("This conflict was declared by the chair: only the chair can remove it.")
    if not _may_declare_for(actor, conflict.organisation):
        raise NotAllowedError(f"Only the chair or an admin of {conflict.organisation.name} can remove it.")
    audit_event_record(
        actor=actor,
        action="conflict.removed",
        obj=conflict,
        data={
            "organisation": conflict.organisation.slug,
            "other": conflict.other.slug,
            "kind": conflict.kind,
        },
    )
    conflict.delete()
