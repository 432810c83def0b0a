"""Writes for systems and submissions. Every write records an audit event in its transaction."""

from __future__ import annotations

import hashlib
import json

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max

from accounts.models import Membership, Organisation
from accounts.selectors import user_is_chair, user_org_ids
from audit.services import audit_event_record
from catalog.models import Benchmark
from portal.errors import ConflictError, NotAllowedError
from submissions.models import Submission, System, SystemDescriptionRevision
from submissions.selectors import systems_for_new_drafts


def _require_submitter(actor, organisation: Organisation) -> None:
    allowed = user_org_ids(actor, roles=(Membership.Role.SUBMITTER, Membership.Role.ORG_ADMIN))
    if actor is not None and not (organisation.pk in allowed or user_is_chair(actor)):
        raise NotAllowedError(f"Only submitters of {organisation.name} can manage its systems.")


def _description_sha256(description: dict) -> str:
    canonical = json.dumps(description, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _description_changed_keys(old: dict, new: dict) -> list[str]:
    return sorted(key for key in set(old) | set(new) if old.get(key) != new.get(key))


@transaction.atomic
def system_register(*, organisation: Organisation, name: str, description: dict, actor) -> System:
    """Register a system under test for an organisation (its submitters, org admins or the chair).
    The description becomes revision 1 of the system's description history."""
    _require_submitter(actor, organisation)
    system = System(organisation=organisation, name=name, description=description)
    system.full_clean()
    system.save()
    revision = SystemDescriptionRevision(
        system=system,
        number=1,
        description=description,
        sha256=_description_sha256(description),
        changed_keys=[],
        created_by=actor,
    )
    revision.full_clean()
    revision.save()
    audit_event_record(
        actor=actor,
        action="system.registered",
        obj=system,
        data={"organisation": organisation.slug, "name": name, "description_sha256": revision.sha256},
    )
    return system


@transaction.atomic
def system_update_description(*, system: System, description: dict, actor) -> System:
    """A new description for a registered system: a new revision (the earlier ones stay), audited with the
    changed top-level keys. The same description again is refused (`system-description-unchanged`)."""
    _require_submitter(actor, system.organisation)
    if not isinstance(description, dict):
        raise ValidationError({"description": "The system description must be a JSON object."})
    system = System.objects.select_for_update().get(pk=system.pk)
    previous = system.description if isinstance(system.description, dict) else {}
    changed_keys = _description_changed_keys(previous, description)
    if not changed_keys:
        raise ConflictError(
            f"{system.name}: the new description is the same as the current one.",
            code="system-description-unchanged",
        )
    system.description = description
    system.full_clean()
    system.save(update_fields=["description", "updated_at"])
    last = system.description_revisions.aggregate(last=Max("number"))["last"] or 0
    if last == 0:  # registered before revisions were kept: keep the replaced description first
        SystemDescriptionRevision.objects.create(
            system=system,
            number=1,
            description=previous,
            sha256=_description_sha256(previous),
            changed_keys=[],
        )
        last = 1
    revision = SystemDescriptionRevision(
        system=system,
        number=last + 1,
        description=description,
        sha256=_description_sha256(description),
        changed_keys=changed_keys,
        created_by=actor,
    )
    revision.full_clean()
    revision.save()
    audit_event_record(
        actor=actor,
        action="system.description_updated",
        obj=system,
        data={"changed": changed_keys, "revision": revision.number, "description_sha256": revision.sha256},
    )
    return system


# --- Submissions and their lifecycle ---------------------------------------------------------
# Uploads and versions: submissions.uploads; the check pipeline: submissions.checks.


@transaction.atomic
def submission_create(
    *,
    actor,
    system: System,
    benchmark: Benchmark,
    division: str = "standardized",
    availability: str = "available",
    title: str = "",
    extends: Submission | None = None,
    stack: str = "",
    changes: dict | None = None,
):
    """A new draft submission of one system x benchmark for the system's organisation; with `extends`, an
    extension of that published result (leaderboard.publishing.extensions.extension_open checks the rest)."""
    if not systems_for_new_drafts(actor).filter(pk=system.pk).exists():
        # The chair included: a draft is its organisation's own and hidden from everyone else (DESIGN.md).
        raise NotAllowedError(f"Only submitters of {system.organisation.name} can create its submissions.")
    if not benchmark.is_active:
        raise ConflictError(f"{benchmark.model_id} is closed for new submissions.", code="benchmark-inactive")
    submission = Submission(
        organisation=system.organisation,
        system=system,
        benchmark=benchmark,
        division=division,
        availability=availability,
        title=title,
        created_by=actor,
        extends=extends,
        stack=stack,
        changes=changes or {},
    )
    submission.full_clean()
    submission.save()
    data = {
        "organisation": system.organisation.slug,
        "system": system.name,
        "benchmark": benchmark.model_id,
        "division": division,
        "availability": availability,
    }
    if extends is not None:
        data.update(extends=extends.pk, stack=stack, changes=changes or {})
    audit_event_record(actor=actor, action="submission.created", obj=submission, data=data)
    return submission
