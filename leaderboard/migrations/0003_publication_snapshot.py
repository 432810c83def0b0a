"""The published record becomes a snapshot: `snapshot` on publications and their revisions, and a backfill that
freezes every already-published result (and revision) from the data as it is when this migration runs. The
backfill is self-contained (historical models only); leaderboard.snapshot.snapshot_build writes the same shape
from then on."""

from django.db import migrations, models

RESULT_LEVELS = ("fully recomputed", "partly recomputed", "claimed")


def _verification(points):
    claimed = sorted(p.get("concurrency") or 0 for p in points if p.get("basis") != "recomputed")
    recomputed = len(points) - len(claimed)
    if points and not claimed:
        level = "fully recomputed"
    elif recomputed:
        level = "partly recomputed"
    else:
        level = "claimed"
    return {
        "level": level,
        "recomputed_points": recomputed,
        "total_points": len(points),
        "claimed_concurrencies": claimed,
    }


def _labelled(curve):
    if not isinstance(curve, dict) or not curve:
        return curve
    points = []
    for point in curve.get("points") or []:
        if isinstance(point, dict):
            point = {**point, "verification": "recomputed" if point.get("basis") == "recomputed" else "claimed"}
        points.append(point)
    return {**curve, "points": points, "verification": _verification(points)}


def _verdict(apps, version, check_run):
    Finding = apps.get_model("submissions", "Finding")
    Waiver = apps.get_model("review", "Waiver")
    if check_run is None:
        return {"status": "none", "label": "not checked", "waived": 0, "errors": 0}
    errors = int((check_run.counts or {}).get("error") or 0)
    granted = set(
        Waiver.objects.filter(version=version, status="granted").values_list("rule", "point", "file")
    )
    waived = 0
    if check_run.status == "failed" and granted:
        waived = sum(
            1
            for rule, point, file in Finding.objects.filter(check_run=check_run, severity="error").values_list(
                "rule", "point", "file"
            )
            if (rule, point or "", file or "") in granted
        )
    if check_run.status == "failed" and errors and waived >= errors:
        return {"status": "passed_with_waivers", "label": f"passed with {waived} waived", "waived": waived,
                "errors": errors}
    return {"status": check_run.status, "label": check_run.status, "waived": waived, "errors": errors}


def _snapshot(apps, submission, version, check_run, curve):
    Waiver = apps.get_model("review", "Waiver")
    system = submission.system
    organisation = submission.organisation
    description = system.description if isinstance(system.description, dict) else {}
    framework = description.get("serving_framework")
    stack = submission.stack or (framework[:200] if isinstance(framework, str) else "")
    waivers = [
        {
            "rule": w.rule,
            "point": w.point,
            "file": w.file,
            "reason": w.decision_reason or w.request_reason,
            "decided_at": w.decided_at.isoformat() if w.decided_at else None,
        }
        for w in Waiver.objects.filter(version=version, status="granted").order_by("rule", "point", "id")
    ]
    return {
        "schema": 1,
        "system": {"id": system.pk, "name": system.name, "description": description},
        "organisation": {"id": organisation.pk, "name": organisation.name, "slug": organisation.slug},
        "division": submission.division,
        "division_display": submission.get_division_display(),
        "availability": submission.availability,
        "availability_display": submission.get_availability_display(),
        "stack": stack,
        "verification": _verification((curve or {}).get("points") or []),
        "check": _verdict(apps, version, check_run),
        "provenance": {
            "bundle_sha256": version.sha256,
            "version": version.number,
            "checker_version": getattr(check_run, "checker_version", "") or "",
            "ruleset": getattr(check_run, "ruleset", "") or (curve or {}).get("ruleset") or "",
            "waivers": waivers,
        },
    }


def snapshot_published(apps, schema_editor):
    """Freeze every published result and revision that has no snapshot yet, from the current data."""
    Publication = apps.get_model("leaderboard", "Publication")
    PublicationRevision = apps.get_model("leaderboard", "PublicationRevision")
    for publication in Publication.objects.filter(status="published", snapshot={}).select_related(
        "submission__system", "submission__organisation", "version", "check_run"
    ):
        curve = _labelled(publication.curve)
        Publication.objects.filter(pk=publication.pk).update(
            curve=curve,
            snapshot=_snapshot(apps, publication.submission, publication.version, publication.check_run, curve),
        )
    for revision in PublicationRevision.objects.filter(status="published", snapshot={}).select_related(
        "submission__system", "submission__organisation", "version", "check_run"
    ):
        curve = _labelled(revision.curve)
        PublicationRevision.objects.filter(pk=revision.pk).update(
            curve=curve,
            snapshot=_snapshot(apps, revision.submission, revision.version, revision.check_run, curve),
        )


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0002_publication_revisions"),
        ("review", "0001_initial"),
        ("submissions", "0005_merge_0004_check_outbox_0004_extensions"),
    ]

    operations = [
        migrations.AddField(
            model_name="publication",
            name="snapshot",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="The published record beside the curve (leaderboard.snapshot): system, organisation, "
                "description, verification level, check verdict and provenance, frozen when published.",
            ),
        ),
        migrations.AddField(
            model_name="publicationrevision",
            name="snapshot",
            field=models.JSONField(
                blank=True, default=dict, help_text="The published record of this revision (leaderboard.snapshot)."
            ),
        ),
        migrations.RunPython(snapshot_published, migrations.RunPython.noop),
    ]
