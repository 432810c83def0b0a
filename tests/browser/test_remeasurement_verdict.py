"""The re-measurement's statistics verdict as the public reads it, in Chromium at 1440 and 390 px: the demo's real
GuideLLM run of NB-2's c2 point against NB-2's claim (outside MLPerf's margin, a challenge for the chair) and against
a claim it cannot decide (inconclusive, with the run length that would). Screenshots
docs/screenshots/remeasurement-{outside,inconclusive}-{1440,390}.png."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from checker.recompute.curve import curve_of
from leaderboard.board.cache import public_cache_bump
from leaderboard.publishing.services import headline_of
from spotchecks import services
from tests.factories import EndpointFactory, PublicationFactory, SubmissionFactory, SystemFactory

pytestmark = pytest.mark.django_db(transaction=True)
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "spotcheck" / "nb2-c2"
CLAIMS = {
    "outside": {"system_tps": 206.01, "tps_per_user": 106.06, "ttft_p90_ms": 116.74},  # NB-2's published c2
    "inconclusive": {"system_tps": 150.0, "tps_per_user": 81.0, "ttft_p90_ms": 134.0},
}


def _recorded(role_users, figures: dict):
    system = SystemFactory(organisation=role_users["organisations"]["nimbus"], name="Nimbus_NB-2")
    submission = SubmissionFactory(status="published", system=system)
    curve = curve_of(
        system=system.name,
        model=submission.benchmark.model_id,
        points=[{"point": "c2", "concurrency": 2, **figures}],
        ruleset=None,
    )
    publication = PublicationFactory(submission=submission, curve=curve, headline=headline_of(curve))
    EndpointFactory(submission=submission, public=True, stays_up=True, url="http://127.0.0.1:18110")
    services.spotcheck_record_measured(
        submission=submission,
        actor=role_users["auditor"],
        concurrency=2,
        benchmarks=(FIXTURE / "benchmarks.json").read_bytes(),
        egress=json.loads((FIXTURE / "egress.json").read_text()),
        log=(FIXTURE / "guidellm.log").read_bytes(),
    )
    public_cache_bump()
    return publication


@pytest.mark.parametrize("width", [1440, 390])
@pytest.mark.parametrize("verdict", ["outside", "inconclusive"])
def test_the_public_reads_the_interval_the_margin_and_what_to_do(
    chromium, live_server, plain_http, role_users, storage_dir, verdict, width
):
    publication = _recorded(role_users, CLAIMS[verdict])
    context = chromium.new_context(viewport={"width": width, "height": 900}, is_mobile=width < 500)
    page = context.new_page()
    page.goto(f"{live_server.url}/results/{publication.public_id}/")
    section = page.locator("section.remeasurements")
    text = section.inner_text()
    rows = {
        row.get_attribute("data-figure"): row.get_attribute("data-verdict")
        for row in section.locator("[data-figure]").all()
    }
    assert "Shortfall" in text and "95 % interval" in text and "10 %" in text
    if verdict == "outside":
        assert "Outside MLPerf's margin" in text
        assert rows == {"system_tps": "outside", "tps_per_user": "outside", "ttft_p90_ms": "inconclusive"}
        assert "challenge" in page.locator("#challenge-heading").inner_text().lower()
    else:
        assert "Inconclusive: run longer" in text and "Run longer to decide: run at least" in text
        assert rows == {"system_tps": "within", "tps_per_user": "within", "ttft_p90_ms": "inconclusive"}
    assert page.evaluate("document.scrollingElement.scrollWidth") <= width
    section.scroll_into_view_if_needed()
    SHOTS.mkdir(parents=True, exist_ok=True)
    section.screenshot(path=str(SHOTS / f"remeasurement-{verdict}-{width}.png"))
    context.close()
