"""Acceptance at 90 % (docs/tender-desk.md): a re-measurement passes when its system_tps at the published point's
concurrency is >= 0.9 x the published system_tps and it meets the plan's SLO; the public acceptance page of a
published result judges its re-measurements with the arithmetic; a result not yet published has no plan (404)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils import timezone
from django.utils.html import escape

from spotchecks.acceptance import AcceptancePlan, acceptance_verdict
from spotchecks.models import SpotCheck
from tests.factories import PublicationFactory, SpotCheckFactory
from tests.leaderboard.support import publish

PLAN = AcceptancePlan(
    point="r64", concurrency=64, published_system_tps=5824.8, ttft_p90_ms_max=200.0, interactivity_min=90.0
)


@pytest.mark.parametrize(
    "concurrency, measured, passes, failing",
    [
        (64, {"system_tps": 5242.33, "ttft_p90_ms": 150.0, "tps_per_user": 92.0}, True, []),  # just over 90 %
        (64, {"system_tps": 5242.31, "ttft_p90_ms": 150.0, "tps_per_user": 92.0}, False, ["throughput"]),
        (64, {"system_tps": 6000.0, "ttft_p90_ms": 201.0, "tps_per_user": 92.0}, False, ["ttft_p90_ms"]),
        (64, {"system_tps": 6000.0, "ttft_p90_ms": 150.0, "tps_per_user": 89.9}, False, ["interactivity"]),
        (32, {"system_tps": 6000.0, "ttft_p90_ms": 150.0, "tps_per_user": 95.0}, False, ["concurrency"]),
        (64, {"ttft_p90_ms": 150.0, "tps_per_user": 95.0}, False, ["throughput"]),
    ],
)
def test_the_verdict_is_90_percent_of_the_published_throughput_and_the_same_slo(
    concurrency, measured, passes, failing
):
    verdict = acceptance_verdict(PLAN, concurrency=concurrency, measured=measured)
    assert verdict["passes"] is passes
    assert [t["test"] for t in verdict["tests"] if not t["passes"]] == failing
    assert PLAN.required_system_tps == pytest.approx(0.9 * 5824.8)
    throughput = next(t for t in verdict["tests"] if t["test"] == "throughput")
    if "system_tps" in measured:
        assert "0.9 × 5824.8 = 5242.3" in throughput["arithmetic"]


@pytest.mark.django_db
def test_the_acceptance_page_judges_the_published_remeasurements(storage_dir):
    publication = publish()
    point = max(publication.curve["points"], key=lambda p: p["system_tps"])
    required = 0.9 * point["system_tps"]
    done = {"status": SpotCheck.Status.WITHIN, "finished_at": timezone.now()}
    good = SpotCheckFactory(
        publication=publication,
        concurrency=point["concurrency"],
        measured={"system_tps": required * 1.01, "ttft_p90_ms": 1.0, "tps_per_user": 1e6},
        **done,
    )
    short = SpotCheckFactory(
        publication=publication,
        concurrency=point["concurrency"],
        measured={"system_tps": required * 0.99, "ttft_p90_ms": 1.0, "tps_per_user": 1e6},
        **{**done, "status": SpotCheck.Status.OUTSIDE},
    )
    url = f"/results/{publication.public_id}/acceptance/"
    response = Client().get(url, {"point": f"r{point['concurrency']}", "ttft_p90_ms_max": "100000"})
    assert response.status_code == 200
    html = response.content.decode()
    assert f'data-acceptance="{good.pk}" data-passes="yes"' in html
    assert f'data-acceptance="{short.pk}" data-passes="no"' in html
    assert f"{required:.1f}" in html  # the arithmetic of the plan
    bad = Client().get(url, {"point": "r99999"})
    assert bad.status_code == 400 and "no published point" in bad.content.decode()
    embargoed = PublicationFactory(scheduled=True)
    assert Client().get(f"/results/{embargoed.public_id}/acceptance/").status_code == 404


@pytest.mark.django_db
def test_a_remeasurement_of_a_published_point_says_pass_or_fail_at_90_percent_on_the_result_page(storage_dir):
    publication = publish()
    points = sorted(publication.curve["points"], key=lambda p: p["concurrency"])
    point = points[-1]
    done = {"status": SpotCheck.Status.WITHIN, "finished_at": timezone.now()}
    passing = SpotCheckFactory(
        publication=publication,
        concurrency=point["concurrency"],
        measured={"system_tps": point["system_tps"] * 0.9},  # exactly 90 %: passes
        **done,
    )
    failing = SpotCheckFactory(
        publication=publication,
        concurrency=point["concurrency"],
        measured={"system_tps": point["system_tps"] * 0.85},
        **{**done, "status": SpotCheck.Status.OUTSIDE},
    )
    html = Client().get(f"/results/{publication.public_id}/").content.decode()
    published, required = point["system_tps"], 0.9 * point["system_tps"]
    for spot_check, verdict, sign, share in ((passing, "pass", "≥", 90.0), (failing, "fail", "<", 85.0)):
        card = html.split(f'data-remeasurement="{spot_check.pk}"', 1)[1].split('class="card spotcheck"', 1)[0]
        assert f'data-acceptance-90="{verdict}"' in card
        measured = spot_check.measured["system_tps"]
        arithmetic = f"{measured:.1f} {sign} 0.9 × {published:.1f} = {required:.1f} tokens/s ({share:.1f} % of the published)"
        assert escape(arithmetic) in card
        assert f"/results/{publication.public_id}/acceptance/?point=r{point['concurrency']}" in card
