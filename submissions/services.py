"""Writes for people, roles, the catalog and systems. Every write records an audit event in its transaction."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.text import slugify
from rest_framework.authtoken.models import Token

from audit.services import audit_event_record
from portal.errors import ApplicationError, ConflictError, NotAllowedError
from submissions.models import Benchmark, GlobalRole, Membership, Organisation, System
from submissions.selectors import user_is_chair, user_org_ids

User = get_user_model()


def _require_chair(actor) -> None:
    # actor None is the system itself (migrations, seed_demo, management commands).
    if actor is not None and not user_is_chair(actor):
        raise NotAllowedError("Only the chair can do this.")


@transaction.atomic
def organisation_create(*, name: str, kind: str, slug: str | None = None, actor=None) -> Organisation:
    _require_chair(actor)
    organisation = Organisation(name=name, slug=slug or slugify(name), kind=kind)
    organisation.full_clean()
    organisation.save()
    audit_event_record(
        actor=actor, action="organisation.created", obj=organisation, data={"name": name, "kind": kind}
    )
    return organisation


@transaction.atomic
def user_create(
    *,
    username: str,
    email: str = "",
    password: str | None = None,
    is_staff: bool = False,
    is_superuser: bool = False,
    actor=None,
) -> User:
    _require_chair(actor)
    user = User(username=username, email=email, is_staff=is_staff or is_superuser, is_superuser=is_superuser)
    if password:
        user.set_password(password)
    else:
        user.set_unusable_password()
    user.full_clean(exclude=["password"])
    user.save()
    audit_event_record(
        actor=actor,
        action="user.created",
        obj=user,
        data={"username": username, "is_staff": user.is_staff, "is_superuser": is_superuser},
    )
    return user


@transaction.atomic
def membership_grant(*, user, organisation: Organisation, role: str, actor=None) -> Membership:
    """Give a user a role in an organisation (chair, or an org_admin of that organisation)."""
    if actor is not None and not (
        user_is_chair(actor) or organisation.pk in user_org_ids(actor, roles=(Membership.Role.ORG_ADMIN,))
    ):
        raise NotAllowedError("Only the chair or an admin of this organisation can add members.")
    membership, created = Membership.objects.get_or_create(user=user, organisation=organisation, role=role)
    if created:
        membership.full_clean()
        audit_event_record(
            actor=actor,
            action="membership.granted",
            obj=membership,
            data={"user": user.username, "organisation": organisation.slug, "role": role},
        )
    return membership


@transaction.atomic
def global_role_grant(*, user, role: str, actor=None) -> GlobalRole:
    _require_chair(actor)
    global_role, created = GlobalRole.objects.get_or_create(user=user, role=role)
    if created:
        global_role.full_clean()
        audit_event_record(
            actor=actor,
            action="global_role.granted",
            obj=global_role,
            data={"user": user.username, "role": role},
        )
    return global_role


@transaction.atomic
def benchmark_create(
    *,
    model_id: str,
    display_name: str,
    dataset: str,
    workload: str,
    tokenizer_path: str,
    tokenizer_is_placeholder: bool = False,
    ruleset_version: str = "endpoints-v1.0",
    dataset_sample_count: int | None = None,
    actor=None,
) -> Benchmark:
    _require_chair(actor)
    benchmark = Benchmark(
        model_id=model_id,
        display_name=display_name,
        dataset=dataset,
        workload=workload,
        tokenizer_path=tokenizer_path,
        tokenizer_is_placeholder=tokenizer_is_placeholder,
        ruleset_version=ruleset_version,
        dataset_sample_count=dataset_sample_count,
    )
    benchmark.full_clean()
    benchmark.save()
    audit_event_record(actor=actor, action="benchmark.created", obj=benchmark, data={"model_id": model_id})
    return benchmark


def _require_submitter(actor, organisation: Organisation) -> None:
    allowed = user_org_ids(actor, roles=(Membership.Role.SUBMITTER, Membership.Role.ORG_ADMIN))
    if actor is not None and not (organisation.pk in allowed or user_is_chair(actor)):
        raise NotAllowedError(f"Only submitters of {organisation.name} can manage its systems.")


def _description_sha256(description: dict) -> str:
    import hashlib
    import json

    canonical = json.dumps(description, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _description_changed_keys(old: dict, new: dict) -> list[str]:
    return sorted(key for key in set(old) | set(new) if old.get(key) != new.get(key))


@transaction.atomic
def system_register(*, organisation: Organisation, name: str, description: dict, actor) -> System:
    """Register a system under test for an organisation (its submitters, org admins or the chair).
    The description becomes revision 1 of the system's description history."""
    from submissions.models import SystemDescriptionRevision

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
    from django.db.models import Max

    from submissions.models import SystemDescriptionRevision

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


@transaction.atomic
def api_token_issue(*, user, rotate: bool = False, actor=None) -> Token:
    """The user's API token; rotate=True replaces any existing one (the old one stops working)."""
    if actor is not None and actor.pk != user.pk:
        _require_chair(actor)
    existing = Token.objects.filter(user=user).first()
    if existing is not None and not rotate:
        return existing
    if existing is not None:
        existing.delete()
    token = Token.objects.create(user=user)
    audit_event_record(
        actor=actor,
        action="api_token.rotated" if existing else "api_token.issued",
        obj=user,
        data={"user": user.username},
    )
    return token


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
):
    """A new draft submission of one system x benchmark for the system's organisation."""
    from submissions.models import Submission
    from submissions.selectors import user_can_submit_for

    if not user_can_submit_for(actor, system.organisation):
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
    )
    submission.full_clean()
    submission.save()
    audit_event_record(
        actor=actor,
        action="submission.created",
        obj=submission,
        data={
            "organisation": system.organisation.slug,
            "system": system.name,
            "benchmark": benchmark.model_id,
            "division": division,
            "availability": availability,
        },
    )
    return submission


def _transition(*, submission, old: str, new: str, **fields) -> None:
    """Compare-and-set: the row changes only if it is still in `old`; otherwise someone else won."""
    from django.utils import timezone

    from submissions.models import Submission

    updated = Submission.objects.filter(pk=submission.pk, status=old).update(
        status=new, status_changed_at=timezone.now(), updated_at=timezone.now(), **fields
    )
    if not updated:
        current = Submission.objects.filter(pk=submission.pk).values_list("status", flat=True).first()
        raise ConflictError(
            f"Submission #{submission.pk} is {current}, not {old}: it changed meanwhile. Reload and try again.",
            code="state-conflict",
            extra={"status": current},
        )
    submission.refresh_from_db()


@transaction.atomic
def submission_submit(*, submission, actor):
    """draft -> submitted, only when the latest version's latest check passed; that version is frozen."""
    from submissions.models import CheckRun, Submission
    from submissions.selectors import check_run_latest, user_can_submit_for, version_latest

    if not user_can_submit_for(actor, submission.organisation):
        raise NotAllowedError("Only submitters of the organisation can submit.")
    if submission.status != Submission.Status.DRAFT:
        raise ConflictError(
            f"Submission #{submission.pk} is {submission.status}, not draft.",
            code="state-conflict",
            extra={"status": submission.status},
        )
    version = version_latest(submission)
    check_run = check_run_latest(version)
    if version is None or check_run is None or check_run.status != CheckRun.Status.PASSED:
        raise ConflictError(
            "Submit needs a version whose latest check passed"
            + (
                ""
                if version is None
                else f" (version {version.number}: "
                f"{'no check yet' if check_run is None else check_run.status})"
            )
            + ".",
            code="check-not-passed",
        )
    _transition(
        submission=submission,
        old=Submission.Status.DRAFT,
        new=Submission.Status.SUBMITTED,
        submitted_version=version,
    )
    audit_event_record(
        actor=actor,
        action="submission.submitted",
        obj=submission,
        data={"version": version.number, "sha256": version.sha256, "check_run": check_run.pk},
    )
    return submission


@transaction.atomic
def submission_withdraw(*, submission, actor, reason: str):
    """Any non-terminal state -> withdrawn, by a submitter of the organisation, with a reason."""
    from submissions.models import Submission
    from submissions.selectors import user_can_submit_for

    if not user_can_submit_for(actor, submission.organisation):
        raise NotAllowedError("Only submitters of the organisation can withdraw.")
    reason = (reason or "").strip()
    if not reason:
        raise ApplicationError("Say why the submission is withdrawn.", code="invalid")
    old = submission.status
    if old in Submission.TERMINAL_STATUSES or old == Submission.Status.PUBLISHED:
        # A published result is retracted through a challenge, never withdrawn silently.
        raise ConflictError(
            f"Submission #{submission.pk} is {old}: it cannot be withdrawn.",
            code="state-conflict",
            extra={"status": old},
        )
    _transition(submission=submission, old=old, new=Submission.Status.WITHDRAWN, status_reason=reason)
    audit_event_record(
        actor=actor, action="submission.withdrawn", obj=submission, data={"from": old, "reason": reason}
    )
    return submission
