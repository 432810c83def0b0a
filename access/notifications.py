"""Notifications rendered at read time through the visibility table: what a reader sees of a notification about a
submission is decided by what they may read NOW, not when it was made.

A notification about a submission (`submission_ref`) shows its subject, body and link only while the reader may
read that submission's review (review_submissions_visible_to: its organisation's members, reviewers with an
active assignment and no conflict, auditors and the chair; never a draft, except for its own organisation). A reviewer released from the assignment, or blocked
by a conflict declared since, sees the row (it is theirs, and they may mark it read) with the submission's number
and the kind's title only: no system name, no figure, no comment text, no link."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from access.visibility import review_submissions_visible_to
from accounts.models import Notification
from accounts.selectors import user_org_ids
from accounts.services.notifications import notification_title
from submissions.models import Submission

HIDDEN_NOTE = "You can no longer see this submission: its details are hidden."


@dataclass(frozen=True)
class NotificationShown:
    """One notification as its reader may see it now."""

    id: int
    kind: str
    subject: str
    body: str
    url: str
    submission: int | None
    hidden: bool
    created_at: datetime
    read_at: datetime | None
    emailed_at: datetime | None
    times: int = 1  # events of this kind about the same thing, grouped into this row

    @property
    def pk(self) -> int:
        return self.id


def notifications_shown_to(user, rows: Iterable[Notification]) -> list[NotificationShown]:
    """`rows` (the user's own notifications) as `user` may see them now: one query for the submissions they
    still read, whatever the number of rows."""
    rows = list(rows)
    refs = {row.submission_ref for row in rows if row.submission_ref is not None}
    readable: set[int] = set()
    if refs:
        readable = set(review_submissions_visible_to(user).filter(pk__in=refs).values_list("pk", flat=True))
        # The submitting organisation also reads what it was told about its own drafts (a waiver asked for).
        own = user_org_ids(user)
        if own and refs - readable:
            readable |= set(
                Submission.objects.filter(pk__in=refs - readable, organisation_id__in=own).values_list(
                    "pk", flat=True
                )
            )
    shown = []
    for row in rows:
        hidden = row.submission_ref is not None and row.submission_ref not in readable
        shown.append(
            NotificationShown(
                id=row.pk,
                kind=row.kind,
                subject=notification_title(row) if hidden else row.subject,
                body=HIDDEN_NOTE if hidden else row.body,
                url="" if hidden else row.url,
                submission=row.submission_ref,
                hidden=hidden,
                created_at=row.created_at,
                read_at=row.read_at,
                emailed_at=row.emailed_at,
                times=row.times,
            )
        )
    return shown
