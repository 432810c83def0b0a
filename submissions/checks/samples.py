"""A point's per-sample arrays (checker.recompute.goodput.SampleSeries) kept in storage, linked to its PointMetric, and the
backfill that recomputes them for points checked before they were kept (DESIGN.md, "Goodput and SLO attainment")."""

from __future__ import annotations

import io

from checker.cli.pipeline import (
    check_point,
    open_version,
)
from checker.recompute.goodput import SampleSeries, sha256_of
from submissions.checks.common import fetched, limits_for, token_counter_for
from submissions.models import CheckRun, PointMetric
from submissions.storage import storage_save_exact


def point_samples_save(*, samples: SampleSeries | None) -> tuple[str, str]:
    """Store a point's per-sample arrays (.npz, content-addressed, so a repeat stores nothing new); the
    (storage key, SHA-256) a PointMetric keeps, or two empty strings when the point had no raw log."""
    if samples is None:
        return "", ""
    data = samples.to_npz()
    sha256 = sha256_of(data)
    key = f"samples/sha256/{sha256[:2]}/{sha256}.npz"
    storage_save_exact(key, io.BytesIO(data))
    return key, sha256


def point_samples_backfill(*, check_run: CheckRun) -> int:
    """Replay the raw logs of a finished check run's points that have no per-sample arrays yet (runs checked
    before the arrays were kept), store the arrays and link them; returns how many points got them. The
    recomputed metrics and findings are left as they are: only the arrays are added."""
    missing = list(
        PointMetric.objects.filter(check_run=check_run, samples_key="", recomputed__isnull=False).order_by(
            "key"
        )
    )
    if not missing:
        return 0
    version = check_run.version
    token_counter = token_counter_for(version)
    limits = limits_for(version)
    done = 0
    for metric in missing:
        positions = set(check_run.point_files.get(metric.key) or []) or None
        with fetched(version, positions=positions, beat=None) as (files, folder):
            with open_version([path for _, path in files], limits=limits, workdir=folder) as opened:
                try:
                    outcome = check_point(
                        opened.layout, metric.key, token_counter=token_counter, limits=limits
                    )
                except KeyError:
                    continue
        key, sha256 = point_samples_save(samples=outcome.samples)
        if key:
            done += PointMetric.objects.filter(pk=metric.pk, samples_key="").update(
                samples_key=key, samples_sha256=sha256
            )
    return done
