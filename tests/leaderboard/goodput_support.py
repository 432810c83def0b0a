"""Published results made of the real sample runs (AX-8000 and NB-2 run archives) checked by the real pipeline:
their curve is what the checker built from the raw logs, and every point's per-sample arrays are stored the way
the check task stores them (submissions.checks.samples.point_samples_save)."""

from __future__ import annotations

import functools
from pathlib import Path

from checker.cli.pipeline import check_point, judge_version, list_points, open_version
from checker.read.inputs import Limits
from checker.recompute.tokens import TokenCounter
from leaderboard.publishing.services import headline_of
from submissions.checks.common import json_storable
from submissions.checks.samples import point_samples_save
from tests.factories import PointMetricFactory, SystemFactory
from tests.leaderboard.support import publish

FIXTURES = Path(__file__).resolve().parents[1] / "checker" / "fixtures"
RUNS = {
    "Acme_AX-8000": sorted((FIXTURES / "run_archives").glob("AX-8000_c*.tar.gz")),
    "Nimbus_NB-2": sorted((FIXTURES / "second_system").glob("NB-2_c*.tar.gz")),
}
TOKENIZER = FIXTURES / "tokenizer" / "tokenizer.json"


def checked(system: str):
    """(curve, {point key: SampleSeries}) of one sample system's real runs, through the check pipeline."""
    curve, samples, _ = checked_with_recomputation(system)
    return curve, samples


@functools.cache
def checked_with_recomputation(system: str):
    """(curve, {point key: SampleSeries}, {point key: its recomputed summary, as the check task stores it}) of one
    sample system's real runs, through the check pipeline."""
    from tokenizers import Tokenizer

    counter = TokenCounter(Tokenizer.from_file(str(TOKENIZER)))
    limits = Limits()
    with open_version(RUNS[system], limits=limits) as opened:
        outcomes = [
            check_point(opened.layout, key, token_counter=counter, limits=limits)
            for key in list_points(opened.layout)
        ]
        report = judge_version(opened, outcomes, limits=limits)
    (curve,) = report.curves
    return (
        curve,
        {o.result.key: o.samples for o in outcomes},
        {o.result.key: json_storable(o.result.recomputed) for o in outcomes},
    )


def publish_sample_run(
    *, benchmark, system_name: str, accelerators: int, days_ago: int = 0, organisation=None
):
    """A published result whose snapshot is the real curve of `system_name`'s sample runs (renamed points keep
    their raw-log arrays), with a PointMetric per point linked to its stored per-sample arrays and holding its
    recomputed summary."""
    curve, samples, recomputed = checked_with_recomputation(system_name)
    system_kwargs = {
        "name": system_name,
        "description": {
            "system_name": system_name,
            "node_types": [
                {
                    "number_of_nodes": 1,
                    "accelerator_info": [
                        {"accelerator_model_name": "AX GPU", "accelerators_per_node": accelerators}
                    ],
                }
            ],
        },
    }
    if organisation is not None:
        system_kwargs["organisation"] = organisation
    system = SystemFactory(**system_kwargs)
    publication = publish(benchmark=benchmark, system=system, days_ago=days_ago)
    publication.check_run.point_metrics.all().delete()  # the factory's made-up metrics
    points = []
    for point in curve["points"]:
        key = point["point"].replace(point["point"].split("/")[1], benchmark.model_id, 1)
        points.append({**point, "point": key})
        samples_key, sha256 = point_samples_save(samples=samples[point["point"]])
        PointMetricFactory(
            check_run=publication.check_run,
            system=system_name,
            model=benchmark.model_id,
            concurrency=point["concurrency"],
            key=key,
            samples_key=samples_key,
            samples_sha256=sha256,
            recomputed=recomputed[point["point"]],
        )
    publication.curve = {**curve, "model": benchmark.model_id, "points": points}
    publication.headline = headline_of(publication.curve)
    publication.save(update_fields=["curve", "headline"])
    return publication
