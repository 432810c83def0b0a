"""Issue 34's remaining views in Chromium at 1440 px and on a 390 px phone: an evaluator saves the scoring page's
tender, lands on its stable address (totals equal to the score-sheet API's), shares it and reads it signed out;
the board's fronts one chart per accelerator count, per accelerator; the result page's cost cells with a price per
million input tokens; a re-measurement's pass/fail at 90 %. Nothing is wider than the screen.
Screenshots: docs/screenshots/tender-saved*.png, board-by-accelerators*.png, result-input-price*.png,
remeasurement-acceptance*.png."""

from __future__ import annotations

import json
import math
from pathlib import Path
from urllib.parse import urlencode
from urllib.request import urlopen

import pytest

from leaderboard.board.cache import public_cache_bump
from tests.browser.signin import pass_second_factor

pytestmark = pytest.mark.django_db(transaction=True)
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
TENDER = {
    "model_1": "llama3_1-8b",
    "ttft_p90_ms_max_1": "200",
    "interactivity_min_1": "90",
    "delivery_system_tps_min_1": "1000",
    "expansion_system_tps_min_1": "3000",
    "price_per_accelerator_hour": "2.5",
    "price_per_kwh": "0.2",
    "criterion_1": "system_tps",
    "weight_1": "60",
    "criterion_2": "cost_per_million_tokens",
    "weight_2": "30",
    "criterion_3": "joules_per_token",
    "weight_3": "10",
}


def _login(page, live_server, username: str) -> None:
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.get(username=username)
    user.set_password("pw-12345-x")
    user.save()
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", "pw-12345-x")
    page.click("main button[type=submit]")
    pass_second_factor(page, username)


def _phone(chromium, url: str, wait: str, shot: str, cookies=None) -> None:
    phone = chromium.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    if cookies:
        phone.add_cookies(cookies)
    mobile = phone.new_page()
    mobile.goto(url)
    mobile.wait_for_selector(wait)
    assert mobile.evaluate("document.documentElement.scrollWidth") <= 390, shot
    mobile.screenshot(path=str(SHOTS / shot), full_page=True)
    phone.close()


def test_an_evaluator_saves_shares_and_prints_a_tender_in_chromium(
    chromium, live_server, plain_http, published
):
    SHOTS.mkdir(parents=True, exist_ok=True)
    context = chromium.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    _login(page, live_server, "submitter")
    page.goto(f"{live_server.url}/leaderboard/tender/?{urlencode(TENDER)}")
    page.locator('form[aria-label="Save this tender"] input[name="name"]').fill("AIGF-2026 lot 1")
    page.locator('form[aria-label="Save this tender"] button[type="submit"]').click()
    page.wait_for_selector("[data-tender-status]")
    address = page.url
    assert "/leaderboard/tender/" in address and page.locator("h1").inner_text() == "AIGF-2026 lot 1"
    assert page.locator("[data-tender-status]").get_attribute("data-tender-status") == "private"
    answer = json.load(urlopen(f"{live_server.url}/api/v1/public/tender-score/?{urlencode(TENDER)}"))
    for sheet in answer["sheets"]:
        for entry in sheet["systems"]:
            row = page.locator(f'[data-sheet="{sheet["phase"]}"] tr[data-public-id="{entry["public_id"]}"]')
            assert math.isclose(float(row.locator("[data-total]").inner_text()), entry["total"], abs_tol=5e-4)
    page.locator("button", has_text="Share (make public)").click()
    page.wait_for_selector('[data-tender-status="shared"]')
    assert page.evaluate("document.documentElement.scrollWidth") <= 1440
    page.screenshot(path=str(SHOTS / "tender-saved.png"), full_page=True)
    cookies = context.cookies()

    # signed out, the shared tender reads the same; its printable page has no form
    anonymous = chromium.new_context(viewport={"width": 1440, "height": 900})
    reader = anonymous.new_page()
    reader.goto(address)
    assert reader.locator("[data-total]").count() == page.locator("[data-total]").count()
    assert reader.locator(".tender-actions").count() == 0
    reader.goto(address + "print/")
    reader.emulate_media(media="print")
    assert reader.locator("form").count() <= 1  # the header's sign-in link only, no tender form
    reader.screenshot(path=str(SHOTS / "tender-saved-print.png"), full_page=True)
    anonymous.close()
    _phone(chromium, address, "[data-total]", "tender-saved-390.png", cookies)
    context.close()
    assert not errors, errors


def test_the_board_draws_one_front_per_accelerator_count_in_chromium(
    chromium, live_server, plain_http, published
):
    SHOTS.mkdir(parents=True, exist_ok=True)
    context = chromium.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{live_server.url}/leaderboard/llama3_1-8b/")
    page.locator('select[name="group"]').select_option("accelerators")
    page.locator('select[name="per"]').select_option("accelerator")
    page.locator("[data-board-view] button").click()
    page.wait_for_selector("#chart-board-a2 svg")
    page.locator("#chart-board-a8").scroll_into_view_if_needed()
    page.wait_for_selector("#chart-board-a8 svg")
    assert "group=accelerators" in page.url and "per=accelerator" in page.url
    assert page.locator("[data-board-groups] figure.chart").count() == 2
    assert "2 accelerators" in page.locator("#chart-board-a2 figcaption").inner_text()
    assert page.evaluate("document.documentElement.scrollWidth") <= 1440
    page.screenshot(path=str(SHOTS / "board-by-accelerators.png"), full_page=True)
    _phone(chromium, page.url, "#chart-board-a2 svg", "board-by-accelerators-390.png")
    context.close()
    assert not errors, errors


def test_cost_cells_with_an_input_token_price_and_the_90_percent_verdict_in_chromium(
    chromium, live_server, plain_http, published
):
    from django.utils import timezone

    from spotchecks.models import SpotCheck
    from tests.factories import SpotCheckFactory

    SHOTS.mkdir(parents=True, exist_ok=True)
    ax, _ = published
    r32 = next(p for p in ax.curve["points"] if p["concurrency"] == 32)
    for share, status in ((0.93, SpotCheck.Status.WITHIN), (0.85, SpotCheck.Status.OUTSIDE)):
        SpotCheckFactory(
            publication=ax,
            concurrency=32,
            point=r32["point"],
            status=status,
            finished_at=timezone.now(),
            measured={"system_tps": r32["system_tps"] * share},
        )
    public_cache_bump()
    context = chromium.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{live_server.url}/results/{ax.public_id}/")
    form = page.locator('form[aria-label="Your price and targets"]')
    form.locator('input[name="price_per_accelerator_hour"]').fill("2.5")
    form.locator('input[name="price_per_million_input_tokens"]').fill("0.4")
    form.locator('button[type="submit"]').click()
    page.wait_for_selector('[data-metric="input_tokens_per_output_token"]')
    assert "price_per_million_input_tokens=0.4" in page.url
    cell = page.locator('tr[data-normalised="32"] [data-metric="cost_per_million_tokens"]').inner_text()
    assert "of input" in cell
    assert page.evaluate("document.documentElement.scrollWidth") <= 1440
    page.locator("#buyer-heading").scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "result-input-price.png"), full_page=True)
    _phone(chromium, page.url, '[data-metric="input_tokens_per_output_token"]', "result-input-price-390.png")

    verdicts = page.locator("[data-acceptance-90]").evaluate_all(
        "els => els.map(e => e.getAttribute('data-acceptance-90'))"
    )
    assert sorted(verdicts) == ["fail", "pass"]
    page.locator("#remeasurement-heading").scroll_into_view_if_needed()
    page.locator(".remeasurements").screenshot(path=str(SHOTS / "remeasurement-acceptance.png"))
    phone = chromium.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    mobile = phone.new_page()
    mobile.goto(f"{live_server.url}/results/{ax.public_id}/")
    mobile.wait_for_selector("[data-acceptance-90]")
    assert mobile.evaluate("document.documentElement.scrollWidth") <= 390
    mobile.locator(".remeasurements").screenshot(path=str(SHOTS / "remeasurement-acceptance-390.png"))
    phone.close()
    context.close()
    assert not errors, errors
