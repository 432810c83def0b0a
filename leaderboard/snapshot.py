"""The published record: what a result showed the day it (or its newest revision) was published, frozen.

Publishing writes `snapshot` on the publication and on its revision (DESIGN.md, "Lifecycle"): the system (name,
organisation, its whole system description and the facts the pages show of it: accelerator model and count,
nodes, software), the division and availability, the stack, the verification level (checker.judge.verification), the
check's verdict with its waivers, and the provenance (bundle SHA-256, version, checker version, rule set). The
points and the curve are the snapshot's `curve`. Every public page, filter, export and API answer reads
`publication.record` (leaderboard.record.PublishedRecord over that JSON), never the live system: an edit of a system afterwards
changes its drafts and future revisions only.
"""

from __future__ import annotations

from typing import Any

from checker.judge.verification import curve_verification
from review.models import Waiver
from review.selectors import check_verdict
from submissions.models import Submission

SNAPSHOT_SCHEMA = 1


def _waiver_rows(version) -> list[dict[str, Any]]:
    rows = Waiver.objects.filter(Waiver.states.q("granted"), version=version).order_by("rule", "point", "id")
    return [
        {
            "rule": waiver.rule,
            "point": waiver.point,
            "file": waiver.file,
            "reason": waiver.decision_reason or waiver.request_reason,
            "decided_at": waiver.decided_at.isoformat() if waiver.decided_at else None,
        }
        for waiver in rows
    ]


def snapshot_build(*, submission: Submission, version, check_run, curve: dict) -> dict[str, Any]:
    """The record publishing freezes, from the data as it is now (the caller holds the rows it publishes)."""
    system = submission.system
    organisation = submission.organisation
    description = system.description if isinstance(system.description, dict) else {}
    verdict = check_verdict(version, check_run)
    return {
        "schema": SNAPSHOT_SCHEMA,
        "system": {"id": system.pk, "name": system.name, "description": description},
        "organisation": {"id": organisation.pk, "name": organisation.name, "slug": organisation.slug},
        "division": submission.division,
        "division_display": submission.get_division_display(),
        "availability": submission.availability,
        "availability_display": submission.get_availability_display(),
        "stack": submission.stack_label,
        "verification": curve_verification((curve or {}).get("points") or []).as_dict(),
        "check": verdict,
        "provenance": {
            "bundle_sha256": version.sha256,
            "version": version.number,
            "checker_version": getattr(check_run, "checker_version", "") or "",
            "ruleset": getattr(check_run, "ruleset", "") or (curve or {}).get("ruleset") or "",
            "waivers": _waiver_rows(version),
        },
    }
