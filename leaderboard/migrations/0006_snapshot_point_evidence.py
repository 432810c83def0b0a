"""Per-point evidence in the published record (snapshot schema 2, docs/published-record.md): every published result and
revision frozen before it gets `revision`, `sources` (each revision whose points make its curve: version, bundle,
files, stack, checker, rule set, verdict, waivers, system description) and `points` (each point's revision, version,
archive, path inside it, raw log SHA-256 and waivers), and its check's verdict in the one vocabulary. Revisions are
upgraded oldest first, so a later revision reads the sources its earlier ones froze.

Self-contained (historical models only; the verdict's words from submissions.verdicts, plain Python); runs checked
before the portal kept where each point was read give the archive that only that point's task fetched, and no path
inside it. leaderboard.snapshot.snapshot_build writes the same shape from then on."""

from django.db import migrations

from submissions.verdicts import verdict


def _waivers(apps, version):
    Waiver = apps.get_model("review", "Waiver")
    return [
        {
            "rule": w.rule,
            "point": w.point,
            "file": w.file,
            "reason": w.decision_reason or w.request_reason,
            "decided_at": w.decided_at.isoformat() if w.decided_at else None,
        }
        for w in Waiver.objects.filter(version=version, status="granted").order_by("rule", "point", "id")
    ]


def _check(apps, version, check_run):
    if check_run is None:
        return verdict(None, official=None)
    Finding = apps.get_model("submissions", "Finding")
    errors = int((check_run.counts or {}).get("error") or 0)
    granted = {(w["rule"], w["point"] or "", w["file"] or "") for w in _waivers(apps, version)}
    waived = 0
    if check_run.status == "failed" and granted:
        waived = sum(
            1
            for rule, point, file in Finding.objects.filter(
                check_run=check_run, severity="error"
            ).values_list("rule", "point", "file")
            if (rule, point or "", file or "") in granted
        )
    official = (check_run.report or {}).get("official") if isinstance(check_run.report, dict) else None
    return verdict(check_run.status, errors=errors, waived=waived, official=official)


def _position_of(point_files, key):
    mine = set(point_files.get(key) or [])
    others = [set(positions) for other, positions in point_files.items() if other != key]
    own = mine - set.intersection(*others) if others else mine
    return next(iter(own)) if len(own) == 1 else None


def _source(apps, number, version, check_run, stack, description):
    PointMetric = apps.get_model("submissions", "PointMetric")
    VersionFile = apps.get_model("submissions", "VersionFile")
    files = {
        f.position: {
            "position": f.position,
            "filename": f.original_filename,
            "sha256": f.sha256,
            "size_bytes": f.size_bytes,
        }
        for f in VersionFile.objects.filter(version=version).order_by("position")
    }
    waivers = _waivers(apps, version)
    point_files = (check_run.point_files or {}) if check_run is not None else {}
    points, measured_on = {}, None
    metrics = (
        PointMetric.objects.filter(check_run=check_run).order_by("concurrency", "key") if check_run else []
    )
    for metric in metrics:
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
        "check": _check(apps, version, check_run),
        "waivers": waivers,
        "system_description": measured_on if measured_on is not None else description,
    }
    return source, points


def _upgraded(apps, snapshot, curve, number, version, check_run, stack, earlier):
    description = (snapshot.get("system") or {}).get("description") or {}
    own, own_points = _source(apps, number, version, check_run, stack, description)
    sources = {number: own}
    evidence = {}
    for point in (curve or {}).get("points") or []:
        measured_by = point.get("revision") or number
        if measured_by != number and measured_by in earlier:
            sources[measured_by] = earlier[measured_by][0]
        known = own_points if measured_by == number else earlier.get(measured_by, ({}, {}))[1]
        if point.get("point") in known:
            evidence[point["point"]] = known[point["point"]]
    return (
        {
            **snapshot,
            "schema": 2,
            "revision": number,
            "check": _check(apps, version, check_run),
            "sources": [sources[n] for n in sorted(sources)],
            "points": evidence,
        },
        (own, own_points),
    )


def point_evidence(apps, schema_editor):
    Publication = apps.get_model("leaderboard", "Publication")
    PublicationRevision = apps.get_model("leaderboard", "PublicationRevision")
    for publication in Publication.objects.filter(status="published").select_related(
        "version", "check_run", "submission"
    ):
        earlier = {}
        newest = None
        revisions = PublicationRevision.objects.filter(
            publication=publication, status="published", number__isnull=False
        ).select_related("version", "check_run")
        for revision in revisions.order_by("number"):
            snapshot = revision.snapshot if isinstance(revision.snapshot, dict) else {}
            if not snapshot or snapshot.get("schema", 1) >= 2:
                continue
            upgraded, earlier[revision.number] = _upgraded(
                apps, snapshot, revision.curve, revision.number, revision.version, revision.check_run,
                revision.stack, earlier,
            )  # fmt: skip
            PublicationRevision.objects.filter(pk=revision.pk).update(snapshot=upgraded)
            newest = upgraded
        snapshot = publication.snapshot if isinstance(publication.snapshot, dict) else {}
        if not snapshot or snapshot.get("schema", 1) >= 2:
            continue
        if newest is None:  # a result with no revision rows: its first publication
            newest, _ = _upgraded(
                apps, snapshot, publication.curve, 1, publication.version, publication.check_run,
                snapshot.get("stack") or "", {},
            )  # fmt: skip
        Publication.objects.filter(pk=publication.pk).update(snapshot=newest)


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0005_challenge_raised_by_portal"),
        ("review", "0001_initial"),
        ("submissions", "0010_merge_0009_checkrun_purpose_0009_endpoint"),
    ]

    operations = [migrations.RunPython(point_evidence, migrations.RunPython.noop)]
