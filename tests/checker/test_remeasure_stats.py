"""The re-measurement judged with statistics (checker.judge.remeasure_stats), on real per-request samples: NimbusCloud's
published NB-2 c2 point (the official client's raw log, replayed) against the demo's re-measurement of it (GuideLLM
0.8.1's benchmarks.json against a mock with the settings that point was recorded against)."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest
import tokenizers

from checker.judge.remeasure_stats import (
    INCONCLUSIVE,
    MARGIN_ANOTHER_PARTY,
    OUTSIDE,
    WITHIN,
    judge_with_intervals,
    overall,
)
from checker.read.inputs import Limits
from checker.read.kinds.guidellm import GuideLLMKind
from checker.recompute.goodput import SampleSeries
from checker.recompute.imported import request_series
from checker.recompute.replay import recompute_point
from checker.report import Findings

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "checker" / "fixtures"
NB2_C2 = FIXTURES / "second-system" / "NB-2_c2.tar.gz"
REMEASURED = ROOT / "tests" / "fixtures" / "spotcheck" / "nb2-c2" / "benchmarks.json"


@pytest.fixture(scope="module")
def published(tmp_path_factory) -> SampleSeries:
    root = tmp_path_factory.mktemp("nb2")
    with tarfile.open(NB2_C2) as tar:
        tar.extractall(root, filter="data")
    events = next(root.rglob("events.jsonl"))
    tokenizer = tokenizers.Tokenizer.from_file(str(FIXTURES / "tokenizer" / "tokenizer.json"))
    kept: list[SampleSeries] = []
    recompute_point(events, tokenizer=tokenizer, findings=Findings(), display="c2", on_samples=kept.append)
    return kept[0]


@pytest.fixture(scope="module")
def measured() -> SampleSeries:
    kind = GuideLLMKind()
    findings = Findings()
    run = kind.read([REMEASURED], findings=findings, limits=Limits())
    assert run is not None and run.points, findings
    requests = list(kind.requests([REMEASURED], findings=findings, limits=Limits()))
    return request_series(requests, run.points[0].duration_s)


def test_each_figure_gets_an_interval_around_its_shortfall_and_a_verdict(published, measured):
    judged = {j.figure: j for j in judge_with_intervals(published, measured, resamples=400)}
    assert set(judged) == {"system_tps", "tps_per_user", "ttft_p90_ms"}
    for j in judged.values():
        assert j.low <= j.shortfall <= j.high  # the interval holds the observed shortfall
        assert j.verdict in (WITHIN, OUTSIDE, INCONCLUSIVE)
        if j.verdict == INCONCLUSIVE:
            assert j.low <= MARGIN_ANOTHER_PARTY < j.high and j.run_longer_s > measured.duration_ns / 1e9
        else:
            assert j.run_longer_s is None
    # Judged twice, the same answer (a fixed seed).
    again = {j.figure: j for j in judge_with_intervals(published, measured, resamples=400)}
    assert {f: (j.low, j.high) for f, j in again.items()} == {f: (j.low, j.high) for f, j in judged.items()}


def test_the_published_point_against_itself_is_within_and_a_third_slower_is_outside(published):
    # Itself: no shortfall and never outside; 24 requests decide interactivity within 10 %, while the
    # throughput and TTFT P90 intervals are too wide at this length: run longer, for a stated time.
    same = {j.figure: j for j in judge_with_intervals(published, published, resamples=300)}
    assert all(j.shortfall == 0 and j.verdict != OUTSIDE for j in same.values())
    assert same["tps_per_user"].verdict == WITHIN
    assert same["ttft_p90_ms"].verdict == INCONCLUSIVE and same["ttft_p90_ms"].run_longer_s > 17
    assert overall(list(same.values())) == INCONCLUSIVE
    slower = SampleSeries(
        ttft_ns=(published.ttft_ns * 4 // 3),
        tpot_ns=published.tpot_ns * 4 / 3,
        output_tokens=published.output_tokens,
        ok=published.ok,
        duration_ns=published.duration_ns * 4 // 3,
    )
    judged = {j.figure: j for j in judge_with_intervals(published, slower, resamples=300)}
    assert overall(list(judged.values())) == OUTSIDE
    assert judged["ttft_p90_ms"].verdict == OUTSIDE and judged["ttft_p90_ms"].low > 0.10


def test_the_demo_re_measurement_falls_short_beyond_mlperf_margins(published, measured):
    """The issue's case: a 28 % throughput and a 24 % interactivity shortfall read "within tolerance" with the fixed
    35 % / 45 %; against a 10 % margin their whole intervals lie above it."""
    judged = {j.figure: j for j in judge_with_intervals(published, measured, resamples=400)}
    assert judged["system_tps"].shortfall == pytest.approx(0.278, abs=0.005)
    assert judged["system_tps"].verdict == OUTSIDE and judged["tps_per_user"].verdict == OUTSIDE
