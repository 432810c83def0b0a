"""The published record: what a result showed the day it (or its newest revision) was published, frozen.

Publishing writes `snapshot` on the publication and on its revision (DESIGN.md, "Lifecycle"): the system (name,
organisation, its whole system description and the facts the pages show of it: accelerator model and count,
nodes, software), the division and availability, the stack, the verification level (checker.judge.verification), the
check's verdict with its waivers, and the provenance (bundle SHA-256, version, checker version, rule set). The
points and the curve are the snapshot's `curve`; beside them, each point's own evidence (`points`) and the revisions
it composes (`sources`): a revision's curve holds points measured by several versions, and each cites the version,
the archive (SHA-256, path inside it) holding its raw log, its check run, rule set and waivers, and the system
description and stack it was measured on. Every public page, filter, export and API answer reads
`publication.record` (leaderboard.publishing.record.PublishedRecord over that JSON), never the live system: an edit of a system afterwards
changes its drafts and future revisions only.
"""

from __future__ import annotations

from typing import Any

from checker.judge.verification import curve_verification
from leaderboard.models import PublicationRevision
from review.models import Waiver
from review.selectors import check_verdict
from submissions.models import PointMetric, Submission

SNAPSHOT_SCHEMA = 2


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


def _file_row(version_file) -> dict[str, Any]:
    return {
        "position": version_file.position,
        "filename": version_file.original_filename,
        "sha256": version_file.sha256,
        "size_bytes": version_file.size_bytes,
    }


def _position_of(point_files: dict, key: str) -> int | None:
    """The version file holding point `key`, for runs that did not record it (checked before per-point evidence
    was kept): of the files its task fetched, the one no other point fetched (the others hold no point); None when
    that is not one file."""
    mine = set(point_files.get(key) or [])
    others = [set(positions) for other, positions in point_files.items() if other != key]
    own = mine - set.intersection(*others) if others else mine
    return next(iter(own)) if len(own) == 1 else None


def source_build(
    *, number: int, version, check_run, stack: str, description: dict
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """What one revision contributes to a curve: its source record (version, bundle, files, check run, rule set,
    verdict, waivers, the system description its points carry, else `description`) and the evidence of each point
    it measured (point key -> the archive holding its raw log, the path inside it, the raw log's SHA-256, its
    waivers)."""
    files = {f.position: _file_row(f) for f in version.files.order_by("position")}
    waivers = _waiver_rows(version)
    metrics = (
        PointMetric.objects.filter(check_run=check_run).order_by("concurrency", "key")
        if check_run is not None
        else PointMetric.objects.none()
    )
    points: dict[str, dict[str, Any]] = {}
    measured_on = None
    point_files = (check_run.point_files or {}) if check_run is not None else {}
    for metric in metrics.only("key", "concurrency", "raw_log_sha256", "extra"):
        where = (metric.extra or {}).get("source") or {"position": _position_of(point_files, metric.key)}
        if measured_on is None and isinstance(where.get("system_desc"), dict):
            measured_on = where["system_desc"]
        points[metric.key] = {
            "point": metric.key,
            "concurrency": metric.concurrency,
            "revision": number,
            "version": version.number,
            "file": files.get(where.get("position")),
            "path": where.get("path") or "",
            "raw_log_sha256": metric.raw_log_sha256 or None,
            "waivers": [w for w in waivers if w["point"] == metric.key],
        }
    source = {
        "revision": number,
        "version": version.number,
        "bundle_sha256": version.sha256,
        "files": list(files.values()),
        "stack": stack,
        "checker_version": getattr(check_run, "checker_version", "") or "",
        "ruleset": getattr(check_run, "ruleset", "") or "",
        "check": check_verdict(version, check_run, official=True),
        "waivers": waivers,
        "system_description": measured_on if measured_on is not None else description,
    }
    return source, points


def _earlier_sources(publication, numbers: set[int]) -> dict[int, tuple[dict, dict]]:
    """The source records and point evidence of the published revisions `numbers` of `publication`: as their own
    snapshot froze them, else (revisions published before per-point evidence was kept) built from their rows."""
    found: dict[int, tuple[dict, dict]] = {}
    if publication is None or not numbers:
        return found
    revisions = PublicationRevision.objects.filter(
        PublicationRevision.states.q("published"), publication=publication, number__in=numbers
    ).select_related("version", "check_run", "submission")
    for revision in revisions:
        frozen = revision.snapshot if isinstance(revision.snapshot, dict) else {}
        source = next((s for s in frozen.get("sources") or [] if s.get("revision") == revision.number), None)
        if source is not None:
            points = {
                k: p for k, p in (frozen.get("points") or {}).items() if p.get("revision") == revision.number
            }
            found[revision.number] = (source, points)
            continue
        found[revision.number] = source_build(
            number=revision.number,
            version=revision.version,
            check_run=revision.check_run,
            stack=revision.stack,
            description=(frozen.get("system") or {}).get("description") or {},
        )
    if 1 in numbers and 1 not in found:  # a result published before revisions were recorded: it is revision 1
        found[1] = source_build(
            number=1,
            version=publication.version,
            check_run=publication.check_run,
            stack=publication.submission.stack_label,
            description=((publication.snapshot or {}).get("system") or {}).get("description") or {},
        )
    return found


def snapshot_build(
    *, submission: Submission, version, check_run, curve: dict, number: int = 1, publication=None
) -> dict[str, Any]:
    """The record publishing freezes, from the data as it is now (the caller holds the rows it publishes):
    revision `number` of `publication` (None: its first publication), whose own points are the curve's points of
    no earlier revision."""
    system = submission.system
    organisation = submission.organisation
    description = system.description if isinstance(system.description, dict) else {}
    verdict = check_verdict(version, check_run, official=True)
    own_source, own_points = source_build(
        number=number,
        version=version,
        check_run=check_run,
        stack=submission.stack_label,
        description=description,
    )
    curve_points = (curve or {}).get("points") or []
    earlier = _earlier_sources(
        publication, {p["revision"] for p in curve_points if p.get("revision") not in (None, number)}
    )
    sources = {number: own_source, **{n: source for n, (source, _) in earlier.items()}}
    evidence: dict[str, dict[str, Any]] = {}
    for point in curve_points:
        measured_by = point.get("revision") or number
        known = own_points if measured_by == number else (earlier.get(measured_by) or ({}, {}))[1]
        if point.get("point") in known:
            evidence[point["point"]] = known[point["point"]]
    return {
        "schema": SNAPSHOT_SCHEMA,
        "revision": number,
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
            "waivers": own_source["waivers"],
        },
        "sources": [sources[n] for n in sorted(sources)],
        "points": evidence,
    }
