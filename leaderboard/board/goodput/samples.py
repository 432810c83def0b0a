"""Which per-sample arrays (checker.recompute.goodput.SampleSeries, kept per point when its check ran) the published results'
points have, and reading one back from storage, checked against its SHA-256."""

from __future__ import annotations

import logging

from django.core.files.storage import default_storage

from checker.recompute.goodput import SampleSeries, sha256_of
from leaderboard.models import Publication, PublicationRevision
from submissions.models import CheckRun, PointMetric

logger = logging.getLogger(__name__)


def published_check_runs() -> list[CheckRun]:
    """The check runs every published result's numbers come from (its newest revision and older ones)."""
    ids = set(
        Publication.objects.filter(Publication.states.q("published"), check_run__isnull=False).values_list(
            "check_run_id", flat=True
        )
    )
    ids |= set(
        PublicationRevision.objects.filter(
            Publication.states.q("published", via="publication"),
            PublicationRevision.states.q("published"),
            check_run__isnull=False,
        ).values_list("check_run_id", flat=True)
    )
    return list(
        CheckRun.objects.filter(pk__in=ids).select_related("version__submission__benchmark").order_by("pk")
    )


def published_point_samples(public_ids: list[str]) -> dict[str, dict[str, tuple[str, str]]]:
    """Per published result, per point key, the (storage key, SHA-256) of its per-sample arrays: from the check
    run of its newest revision first, then older revisions' (an extension's inherited points)."""
    runs: dict[str, list[int]] = {}
    for public_id, run_id in Publication.objects.filter(public_id__in=public_ids).values_list(
        "public_id", "check_run_id"
    ):
        if run_id is not None:
            runs.setdefault(public_id, []).append(run_id)
    for public_id, run_id in (
        PublicationRevision.objects.filter(
            PublicationRevision.states.q("published"),
            publication__public_id__in=public_ids,
            check_run__isnull=False,
        )
        .order_by("-number")
        .values_list("publication__public_id", "check_run_id")
    ):
        if run_id not in runs.setdefault(public_id, []):
            runs[public_id].append(run_id)
    order = {run_id: (public_id, rank) for public_id, ids in runs.items() for rank, run_id in enumerate(ids)}
    found: dict[str, dict[str, tuple[int, str, str]]] = {}
    for run_id, key, samples_key, sha256 in (
        PointMetric.objects.filter(check_run_id__in=list(order))
        .exclude(samples_key="")
        .values_list("check_run_id", "key", "samples_key", "samples_sha256")
    ):
        public_id, rank = order[run_id]
        current = found.setdefault(public_id, {}).get(key)
        if current is None or rank < current[0]:
            found[public_id][key] = (rank, samples_key, sha256)
    return {pid: {k: (v[1], v[2]) for k, v in points.items()} for pid, points in found.items()}


def load_samples(samples_key: str, sha256: str) -> SampleSeries | None:
    """A point's stored arrays, or None (logged) when they are missing or no longer hash to their SHA-256."""
    try:
        with default_storage.open(samples_key, "rb") as stream:
            data = stream.read()
    except OSError:
        logger.warning("per-sample arrays %s are missing from storage", samples_key)
        return None
    if sha256_of(data) != sha256:
        logger.warning("per-sample arrays %s do not match their SHA-256", samples_key)
        return None
    try:
        return SampleSeries.from_npz(data)
    except ValueError:
        logger.warning("per-sample arrays %s cannot be read", samples_key)
        return None
