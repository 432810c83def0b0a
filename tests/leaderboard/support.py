"""Published results with realistic snapshots (curve points, Pareto fronts with step vertices, headline) for the
leaderboard tests, built with the factories."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from checker.recompute.curve import curve_of
from leaderboard.models import Publication
from leaderboard.publishing.services import headline_of
from tests.factories import BenchmarkFactory, PublicationFactory, SubmissionFactory, SystemFactory

ACCELERATOR_DESCRIPTION = {
    "system_name": "Test system",
    "node_types": [
        {
            "number_of_nodes": 1,
            "host_processor_model_name": "Xeon 8480",
            "accelerator_info": [{"accelerator_model_name": "AX-1 GPU", "accelerators_per_node": 8}],
        }
    ],
}


def make_curve(
    system: str,
    model: str,
    *,
    scale: float = 1.0,
    points: int = 8,
    tps_per_kw: bool = True,
    claimed: bool = False,
) -> dict:
    """A realistic curve: throughput grows with concurrency while interactivity falls; one point off the front.
    `claimed`: no point was recomputed (raw logs missing, as a bundle without events.jsonl)."""
    rows = []
    for index in range(points):
        concurrency = 2**index
        # faster systems keep more interactivity per user at the same concurrency
        tps_per_user = round(120.0 * (0.75 + 0.15 * scale) * (1 - 0.09 * index), 3)
        system_tps = round(scale * tps_per_user * concurrency * 0.9, 2)
        rows.append(
            {
                "point": f"{system}/{model}/r{concurrency}",
                "basis": "claimed" if claimed else "recomputed",
                "concurrency": concurrency,
                "system_tps": system_tps,
                "tps_per_user": tps_per_user,
                "ttft_p90_ms": round(80 + 12 * index**1.6, 1),
                "e2e_interactivity": round(tps_per_user * 0.8, 3),
                "system_tps_per_kw": round(system_tps / 11.2, 3) if tps_per_kw else None,
                "region": "low_latency" if concurrency <= 32 else "high_concurrency",
            }
        )
    if points > 3:  # a measured point that is not on the front (lower throughput at the same interactivity)
        rows[2]["system_tps"] = round(rows[1]["system_tps"] * 0.9, 2)
    return curve_of(system=system, model=model, points=rows, ruleset="endpoints-v1.0")


def publish(
    *,
    benchmark=None,
    system=None,
    organisation=None,
    scale: float = 1.0,
    days_ago: int = 0,
    retracted: bool = False,
    claimed: bool = False,
    **submission_kwargs,
) -> Publication:
    """A published result of `system` (a new one by default) on `benchmark` with its snapshot filled in."""
    benchmark = benchmark or BenchmarkFactory()
    if system is None:
        system_kwargs = {"description": dict(ACCELERATOR_DESCRIPTION)}
        if organisation is not None:
            system_kwargs["organisation"] = organisation
        system = SystemFactory(**system_kwargs)
    submission = SubmissionFactory(
        status="published", system=system, benchmark=benchmark, **submission_kwargs
    )
    curve = make_curve(system.name, benchmark.model_id, scale=scale, claimed=claimed)
    when = timezone.now() - timedelta(days=days_ago)
    publication = PublicationFactory(
        submission=submission,
        curve=curve,
        headline=headline_of(curve),
        published_at=when,
        publish_at=when,
        check_run=submission.submitted_version.check_runs.order_by("-id").first(),
    )
    if retracted:
        Publication.objects.filter(pk=publication.pk).update(
            retracted_at=timezone.now(), retraction_reason="The load points do not reproduce."
        )
        publication.refresh_from_db()
    return publication


def refreeze(publication: Publication) -> Publication:
    """Freeze the publication's record again from the data as it is now, as if what a test added afterwards
    (a waiver, a reviewer) had been there when it was published."""
    from leaderboard.publishing.snapshot import snapshot_build

    snapshot = snapshot_build(
        submission=publication.submission,
        version=publication.version,
        check_run=publication.check_run,
        curve=publication.curve,
    )
    Publication.objects.filter(pk=publication.pk).update(snapshot=snapshot)
    publication.revisions.update(snapshot=snapshot)
    publication.refresh_from_db()
    return publication


def extend(
    publication: Publication,
    *,
    add=(),
    remeasure=(),
    factor: float = 1.25,
    stack: str = "serve 2.0",
    status: str = "audited",
    publish_now: bool = True,
    **changes,
):
    """An extension of `publication` that adds points at the concurrencies `add` and re-measures those in
    `remeasure` (throughput x `factor`), its check run holding the union curve as the pipeline makes it (inherited
    points keep their revision and stack, new ones carry `stack`); published now through the real service
    unless `publish_now` is False (then it stays in `status`)."""
    from leaderboard.publishing import services

    root = publication.submission
    base = [dict(p) for p in (publication.curve or {}).get("points") or []]
    by_concurrency = {p["concurrency"]: p for p in base}
    rows = []
    for concurrency in sorted({*by_concurrency, *add}):
        if concurrency in by_concurrency and concurrency not in remeasure:
            inherited = by_concurrency[concurrency]
            rows.append(
                {**inherited, "revision": inherited.get("revision") or 1, "stack": inherited.get("stack", "")}
            )
            continue
        template = by_concurrency.get(concurrency) or by_concurrency[max(by_concurrency)]
        scale = factor if concurrency in by_concurrency else 1.0 + 0.1 * len(rows)
        rows.append(
            {
                **template,
                "point": f"{root.system.name}/{root.benchmark.model_id}/r{concurrency}",
                "concurrency": concurrency,
                "system_tps": round(
                    template["system_tps"] * scale * (1.6 if concurrency not in by_concurrency else 1), 2
                ),
                "tps_per_user": round(
                    template["tps_per_user"] * (0.8 if concurrency not in by_concurrency else 1.05), 3
                ),
                "revision": None,
                "stack": stack,
            }
        )
    curve = curve_of(
        system=root.system.name, model=root.benchmark.model_id, points=rows, ruleset="endpoints-v1.0"
    )
    extension = SubmissionFactory(
        status=status,
        organisation=root.organisation,
        system=root.system,
        benchmark=root.benchmark,
        extends=root,
        stack=stack,
        changes={
            "software": changes.get("software", stack),
            "configuration": changes.get("configuration", ""),
        },
        title=changes.get("title", f"Extension of {publication.public_id}"),
    )
    run = (
        extension.submitted_version.check_runs.order_by("-id").first()
        if extension.submitted_version
        else None
    )
    if run is not None:
        type(run).objects.filter(pk=run.pk).update(curves=[curve])
    if publish_now:
        services.publication_schedule(submission=extension, actor=root.created_by, mode="now")
        publication.refresh_from_db()
    return extension
