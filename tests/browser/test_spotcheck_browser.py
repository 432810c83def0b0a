"""In Chromium, against the live server, a REAL `celery worker` on the spot-check queue and `guidellm mock-server`
on loopback: an auditor starts a spot-check of a published result's point from its audit page, watches it measure
(the panel polls, no reload) and reads claim beside re-measurement per figure; anyone then reads the dated
re-measurement on the public result page. Screenshots: docs/screenshots/spotcheck-audit.png, spotcheck-public.png."""

from __future__ import annotations

from pathlib import Path

import pytest

from spotchecks.models import SpotCheck
from tests.browser.signin import pass_second_factor
from tests.factories import BenchmarkFactory
from tests.spotchecks.support import (
    CONCURRENCY,
    DURATION_S,
    NORMAL,
    OUTPUT_TOKENS,
    PROMPT_TOKENS,
    MockEndpoint,
    claimed_curve,
    free_port,
    guidellm_or_skip,
    publish_measured,
)

pytestmark = pytest.mark.django_db(transaction=True)
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


@pytest.fixture
def mock_endpoint(tmp_path):
    guidellm_or_skip()
    mock = MockEndpoint(free_port(), tmp_path / "mock.log")
    mock.start(**NORMAL)
    yield mock
    mock.stop()


def _login(page, live_server, username):
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.get(username=username)
    user.set_password("pw-12345-x")
    user.save()
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", "pw-12345-x")
    page.click("main button[type=submit]")
    pass_second_factor(page, username)


def test_an_auditor_spot_checks_a_point_and_reads_claim_beside_re_measurement(
    chromium, live_server, live_pipeline, plain_http, role_users, mock_endpoint, settings
):
    settings.PORTAL_SPOTCHECK_DURATION_S = DURATION_S
    benchmark = BenchmarkFactory()
    curve = claimed_curve(
        mock_endpoint.url, system="Acme AX-8000 (mock endpoint)", model_id=benchmark.model_id
    )
    publication = publish_measured(
        curve,
        organisation=role_users["organisations"]["acme"],
        benchmark=benchmark,
        endpoint_url=mock_endpoint.url,
    )
    worker = live_pipeline(
        kinds=("spotcheck",),
        PORTAL_EGRESS_ALLOW_LOOPBACK=1,
        PORTAL_SPOTCHECK_PROMPT_TOKENS=PROMPT_TOKENS,
        PORTAL_SPOTCHECK_OUTPUT_TOKENS=OUTPUT_TOKENS,
    )
    SHOTS.mkdir(parents=True, exist_ok=True)
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(60_000)
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    _login(page, live_server, "auditor")
    page.goto(f"{live_server.url}/review/audit/{publication.submission_id}/")
    panel = page.locator("#spotcheck-panel")
    assert "the published curve" in panel.inner_text()
    assert "sk-test-never-shown" not in page.content()  # the credential is never shown, only "set"
    page.select_option("#spotcheck-concurrency", str(CONCURRENCY))
    page.click("[data-form=spotcheck] button[type=submit]")
    page.wait_for_selector("#spotcheck-panel [data-spotcheck]")
    card = page.locator("#spotcheck-panel [data-spotcheck]").first
    assert card.get_attribute("data-status") in ("queued", "running", "within", "inconclusive")
    page.evaluate("window.__sameDocument = 'yes'")
    page.wait_for_selector(
        "#spotcheck-panel [data-spotcheck][data-status=within], #spotcheck-panel [data-spotcheck][data-status=inconclusive]",
        timeout=400_000,
    )
    assert page.evaluate("window.__sameDocument") == "yes", "the panel updated without a reload"
    spot_check = SpotCheck.objects.get()
    # The same mock is never outside; an 8 s run may be too short to vouch for throughput within 10 %.
    assert spot_check.status in ("within", "inconclusive"), (spot_check.detail, worker.tail())
    rows = page.locator("#spotcheck-panel [data-figure]")
    assert rows.count() == 3  # the judged figures (goodput is shown nowhere as a verdict)
    system_tps = page.locator("#spotcheck-panel [data-figure=system_tps] td").all_inner_texts()
    claimed, measured = (float(text.replace(",", "")) for text in system_tps[4:6])
    assert claimed == pytest.approx(spot_check.claimed["system_tps"], abs=0.01)
    assert measured == pytest.approx(spot_check.measured["system_tps"], abs=0.01)
    # td cells: verdict, shortfall, 95 % interval, margin, claimed, re-measured
    assert system_tps[0].startswith(("within", "inconclusive: run at least")) and system_tps[3] == "10 %"
    assert " … " in system_tps[2]  # the 95 % interval
    assert page.locator("#spotcheck-panel a[download]", has_text="benchmarks.json").count() == 1
    page.locator("#spotcheck-heading").scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "spotcheck-audit.png"), full_page=True)

    anonymous = chromium.new_context(viewport={"width": 1280, "height": 900}).new_page()
    anonymous.goto(f"{live_server.url}/results/{publication.public_id}/")
    section = anonymous.locator("section.remeasurements")
    text = section.inner_text()
    assert "Re-measured by the portal" in text and spot_check.finished_at.strftime("%Y-%m-%d") in text
    assert section.locator("[data-figure]").count() == 3
    assert spot_check.get_status_display() in text  # "Within MLPerf's margin" or "Inconclusive: run longer"
    assert mock_endpoint.url in text  # the endpoint is public: its URL is shown, never the credential
    assert "sk-test-never-shown" not in anonymous.content()
    evidence = section.locator("a[download]", has_text="benchmarks.json")
    with anonymous.expect_download() as download:
        evidence.click()
    assert download.value.suggested_filename == f"spotcheck-{spot_check.pk}-benchmarks.json"
    section.scroll_into_view_if_needed()
    anonymous.screenshot(path=str(SHOTS / "spotcheck-public.png"), full_page=True)
    assert not errors, errors
