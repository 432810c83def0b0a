"""Incremental submissions (docs/extensions.md): an organisation opens an extension of its published result (a new
draft holding only new or re-measured load points), which goes through the ordinary lifecycle; publishing it makes
the result's next revision. The public id stays; the result's snapshot (Publication.curve, headline, version,
check_run) becomes the newest revision's, so rankings use it; every revision keeps its own in PublicationRevision.
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.db.models import Max

from leaderboard.models import Publication, PublicationRevision
from leaderboard.workflow import PUBLICATION, REVISION
from portal.errors import ApplicationError, ConflictError
from submissions.models import Submission, SystemDescriptionRevision
from submissions.selectors import extension_open_of
from submissions.services import submission_create

HARDWARE_CHANGE_DETAIL = (
    "A hardware change is not an extension: results on other hardware are a new submission. Register the new "
    "hardware as a system (or give the system a new description revision) and create a submission for it from "
    "the dashboard."
)
CURVE_METRICS_SHOWN = ("system_tps", "tps_per_user", "ttft_p90_ms", "e2e_interactivity", "system_tps_per_kw")


@transaction.atomic
def extension_open(
    *,
    publication: Publication,
    actor,
    stack: str,
    software: str = "",
    configuration: str = "",
    description_revision: int | None = None,
    hardware_changed: bool = False,
    title: str = "",
) -> Submission:
    """A new draft extension of a published result: same organisation, system, benchmark, division and
    availability; it declares its stack label and what changed (software, configuration, the system description
    revision). A hardware change is refused: that is a new submission."""
    root = Submission.objects.select_for_update().get(pk=publication.submission_id)
    # a published (and not retracted) result, its organisation's submitters
    PUBLICATION.require(
        actor, Publication.objects.select_related("submission").get(pk=publication.pk), "extend"
    )
    if hardware_changed:
        raise ApplicationError(HARDWARE_CHANGE_DETAIL, code="extension-hardware-change")
    stack = (stack or "").strip()
    if not stack:
        raise ApplicationError(
            "Name the software stack the new points were measured with (e.g. 'acme-serve 1.0, driver 1.2'): the "
            "curve labels them with it.",
            code="invalid",
        )
    open_one = extension_open_of(root)
    if open_one is not None:
        raise ConflictError(
            f"Submission #{open_one.pk} already extends {publication.public_id} ({open_one.get_status_display()}): "
            "finish or withdraw it first.",
            code="extension-open",
            extra={"submission": open_one.pk},
        )
    if (
        description_revision is not None
        and not SystemDescriptionRevision.objects.filter(
            system_id=root.system_id, number=description_revision
        ).exists()
    ):
        raise ApplicationError(
            f"{root.system.name} has no system description revision {description_revision}.", code="invalid"
        )
    changes = {
        "software": (software or "").strip(),
        "configuration": (configuration or "").strip(),
        "system_description_revision": description_revision,
    }
    # The same service as every new draft: the benchmark must still take submissions, the actor must submit for
    # the organisation; the audit event says what it extends.
    extension = submission_create(
        actor=actor,
        system=root.system,
        benchmark=root.benchmark,
        division=root.division,
        availability=root.availability,
        title=(title or "").strip() or f"Extension of {publication.public_id}",
        extends=root,
        stack=stack,
        changes=changes,
    )
    return extension


def _metrics(point: dict) -> dict:
    return {name: point.get(name) for name in CURVE_METRICS_SHOWN}


def replaced_points(previous_curve: dict, new_curve: dict) -> list[dict]:
    """The points of the previous revision the new curve holds a newer measurement of, side by side."""
    before = {p.get("concurrency"): p for p in previous_curve.get("points") or []}
    out = []
    for point in new_curve.get("points") or []:
        old = before.get(point.get("concurrency"))
        if old is None or (point.get("revision") or 1) == (old.get("revision") or 1):
            continue
        out.append(
            {
                "concurrency": point.get("concurrency"),
                "from_revision": old.get("revision") or 1,
                "from_stack": old.get("stack") or "",
                "before": _metrics(old),
                "after": _metrics(point),
            }
        )
    return out


def labelled_curve(curve: dict, *, number: int, stack: str) -> dict:
    """The curve with the points this revision measured labelled with its number and stack."""
    points = []
    for point in curve.get("points") or []:
        if point.get("revision") is None:
            point = {**point, "revision": number, "stack": point.get("stack") or stack}
        points.append(point)
    return {**curve, "points": points, "revision": number}


def revision_number_next(publication: Publication, submission: Submission) -> int:
    """The number publishing `submission` gives its revision of `publication`: 1 for the first publication; an
    extension of a result published before revisions were recorded makes revision 2 (the first is revision 1)."""
    numbers = PublicationRevision.objects.filter(publication=publication, number__isnull=False)
    number = (numbers.aggregate(last=Max("number"))["last"] or 0) + 1
    return 2 if number == 1 and submission.extends_id is not None else number


def revision_record(
    *,
    publication: Publication,
    submission: Submission,
    check_run,
    curve: dict,
    headline: dict,
    snapshot: dict,
    actor,
    now: datetime,
) -> PublicationRevision:
    """Write the published revision `submission` makes of `publication` (the caller holds the row locks) with its
    frozen record (`snapshot`, leaderboard.snapshot), and make the publication's snapshot the newest revision's."""
    number = revision_number_next(publication, submission)
    if number == 2 and not PublicationRevision.objects.filter(publication=publication, number=1).exists():
        # A result published before revisions were recorded: its first publication becomes revision 1.
        first = publication.submission
        record = PublicationRevision(
            publication=publication,
            submission=first,
            number=1,
            version=publication.version,
            check_run=publication.check_run,
            stack=first.stack_label,
            mode=publication.mode,
            publish_at=publication.publish_at,
            published_at=publication.published_at,
            chosen_by=publication.chosen_by,
            curve=labelled_curve(publication.curve or {}, number=1, stack=first.stack_label),
            headline=publication.headline or {},
            snapshot=publication.snapshot or {},
        )
        REVISION.create(actor, record, "record")
        Submission.objects.filter(pk=first.pk).update(revision=1)
    curve = labelled_curve(curve, number=number, stack=submission.stack_label)
    previous = publication.curve or {}
    revision = PublicationRevision.objects.filter(submission=submission).first()
    fields = {
        "number": number,
        "version": submission.submitted_version,
        "check_run": check_run,
        "stack": submission.stack_label,
        "changes": submission.changes or {},
        "published_at": now,
        "curve": curve,
        "headline": headline,
        "snapshot": snapshot,
        "replaced": replaced_points(previous, curve) if submission.extends_id else [],
    }
    if revision is None:
        revision = REVISION.create(
            actor,
            PublicationRevision(
                publication=publication,
                submission=submission,
                mode=publication.mode,
                publish_at=now,
                chosen_by=actor or publication.chosen_by,
                **fields,
            ),
            "record",
        )
    else:
        REVISION.take(actor, revision, "publish", fields=fields)
        revision.refresh_from_db()
    Submission.objects.filter(pk=submission.pk).update(revision=number)
    return revision
