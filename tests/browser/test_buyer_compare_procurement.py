"""Compare with the buyer's prices and the procurement report's phases in Chromium, at 1280 px and on a 390 px
phone: the figures shown equal a computation written here from the published sample results (AX-8000, NB-2) and
their raw events; the tables fit 1280 px; on the phone the answer's figures are on screen without sideways
scrolling. Screenshots: docs/screenshots/buyer-compare-priced.png, buyer-compare-390.png,
buyer-procurement-phases.png."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser.conftest import PUBLISHED_PAIR
from tests.checker.test_goodput import reference_slo

pytestmark = pytest.mark.django_db(transaction=True)
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


@pytest.fixture
def published(published, sample_events):
    """The pair (tests/browser/conftest.py) as (publication, system name, accelerators), and the raw events."""
    return [
        (publication, name, count)
        for publication, (name, count, _) in zip(published, PUBLISHED_PAIR, strict=True)
    ], sample_events


def _number(text: str) -> float:
    return float(text.replace(",", "").replace("%", "").strip())


def test_compare_priced_and_the_procurement_phases_in_chromium(chromium, live_server, plain_http, published):
    SHOTS.mkdir(parents=True, exist_ok=True)
    results, events = published
    ids = ",".join(p.public_id for p, _, _ in results)
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))

    # a buyer opens compare, types a price and per-request targets into the form and submits it
    page.goto(f"{live_server.url}/leaderboard/llama3_1-8b/compare/?ids={ids}")
    form = page.locator("form.price-form")
    form.locator('input[name="price_per_accelerator_hour"]').fill("2.5")
    form.locator('input[name="energy_price_per_kwh"]').fill("0.2")
    form.locator('input[name="ttft_ms"]').fill("300")
    form.locator('input[name="tpot_ms"]').fill("50")
    form.locator('button[type="submit"]').click()
    page.wait_for_selector('[data-metric="cost_per_million_good_tokens"]')
    # the inputs are in the address: it can be shared
    for part in ("price_per_accelerator_hour=2.5", "energy_price_per_kwh=0.2", "ttft_ms=300", "tpot_ms=50"):
        assert part in page.url
    for publication, system, accelerators in results:
        block = page.locator(f'[data-compare-result="{publication.public_id}"]')
        assert f"{accelerators} × AX GPU" in block.locator("h3").inner_text()
        for point in publication.curve["points"]:
            row = block.locator(f'tr[data-normalised="{point["concurrency"]}"]')
            tps = point["system_tps"]
            want = reference_slo(events[(system, point["concurrency"])], ttft_ms=300.0, tpot_ms=50.0)
            hourly = 2.5 * accelerators + tps / point["system_tps_per_kw"] * 0.2

            def cell(metric, row=row):
                return row.locator(f'[data-metric="{metric}"]').inner_text()

            assert _number(cell("per_accelerator")) == pytest.approx(tps / accelerators, abs=0.05)
            assert _number(cell("goodput_tps")) == pytest.approx(want["tps"]["good"], abs=0.05)
            assert _number(cell("cost_per_million_tokens")) == pytest.approx(
                hourly / (tps * 3600) * 1e6, rel=1e-3
            )
            if want["tps"]["good"]:
                assert _number(cell("cost_per_million_good_tokens")) == pytest.approx(
                    hourly / (want["tps"]["good"] * 3600) * 1e6, rel=1e-3
                )
    # every table fits 1280 px: nothing cut off, nothing to scroll sideways
    for selector in (".results-table", ".normalised-table"):
        overflow = page.evaluate(
            f"""[...document.querySelectorAll('{selector}')].map(t => {{
                 const box = t.closest('.table-scroll') || t.parentElement;
                 return [box.scrollWidth, box.clientWidth, t.getBoundingClientRect().right]; }})"""
        )
        for scroll, client, right in overflow:
            assert scroll <= client and right <= 1280, (selector, overflow)
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    page.locator("#buyer-heading").scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "buyer-compare-priced.png"), full_page=True)
    priced_url = page.url

    # a bad price is named by its label
    page.goto(f"{live_server.url}/leaderboard/llama3_1-8b/compare/?ids={ids}&price_per_node_hour=-1")
    assert "Price per node-hour: enter a number" in page.locator(".errors").inner_text()

    # the procurement report: a delivery phase and a tighter, larger expansion phase
    page.goto(f"{live_server.url}/leaderboard/procurement/")
    page.locator('select[name="model_1"]').select_option("llama3_1-8b")
    for name, value in (
        ("ttft_p90_ms_max_1", "200"),
        ("tpot_ms_max_1", "12"),
        ("delivery_system_tps_min_1", "1000"),
        ("expansion_ttft_p90_ms_max_1", "140"),
        ("expansion_system_tps_min_1", "3000"),
    ):
        page.locator(f'input[name="{name}"]').fill(value)
    page.locator('form[aria-label="Requirements per model and phase"] button[type="submit"]').click()
    page.wait_for_selector(".evidence-table")
    assert "expansion_system_tps_min_1=3000" in page.url

    def best(publication, ttft_max, tpot_max):
        meeting = [
            p
            for p in publication.curve["points"]
            if p["ttft_p90_ms"] <= ttft_max and 1000.0 / p["tps_per_user"] <= tpot_max
        ]
        return max(meeting, key=lambda p: p["system_tps"]) if meeting else None

    for publication, _, _ in results:
        row = page.locator(f'.evidence-table tr[data-public-id="{publication.public_id}"]')
        delivery, expansion = best(publication, 200, 12), best(publication, 140, 12)
        cell = row.locator('[data-phase="delivery"]')
        assert cell.get_attribute("data-meets") == "yes"
        assert _number(cell.locator('[data-metric="system_tps"]').inner_text()) == pytest.approx(
            delivery["system_tps"], abs=0.05
        )
        assert f"r{delivery['concurrency']}" in cell.locator("[data-point-link]").inner_text()
        verdict = "yes" if expansion["system_tps"] >= 3000 else "no"
        assert row.locator('[data-phase="expansion"]').get_attribute("data-meets") == verdict
    scroll = page.evaluate(
        "(() => { const s = document.querySelector('.evidence-table').closest('.table-scroll');"
        " return [s.scrollWidth, s.clientWidth]; })()"
    )
    assert scroll[0] <= scroll[1], scroll
    # a point link lands on the result page's point row
    first = page.locator(".evidence-table [data-point-link]").first
    target = first.get_attribute("href").split("#")[1]
    first.click()
    page.wait_for_selector(f"#{target}")
    page.go_back()
    page.wait_for_selector(".evidence-table")
    page.screenshot(path=str(SHOTS / "buyer-procurement-phases.png"), full_page=True)
    procurement_url = page.url

    # on a 390 px phone the answers' figures are on screen without scrolling sideways
    phone = chromium.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    mobile = phone.new_page()
    mobile.goto(priced_url)
    mobile.wait_for_selector('[data-metric="cost_per_million_good_tokens"]')
    assert mobile.evaluate("document.documentElement.scrollWidth") <= 390
    first_result = results[0][0].public_id
    for metric in (
        "per_accelerator",
        "goodput_tps",
        "cost_per_million_tokens",
        "cost_per_million_good_tokens",
    ):
        box = mobile.locator(
            f'[data-compare-result="{first_result}"] [data-metric="{metric}"]'
        ).first.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, (metric, box)
    # and nothing is clipped inside a table's own box: every table fits its box, every card its table
    clipped = mobile.evaluate(
        """[...document.querySelectorAll('.table-scroll:has(.stack-table)')].filter(s => s.scrollWidth > s.clientWidth).length"""
    )
    assert clipped == 0
    mobile.locator("#buyer-heading").scroll_into_view_if_needed()
    mobile.screenshot(path=str(SHOTS / "buyer-compare-390.png"), full_page=True)
    mobile.goto(procurement_url)
    mobile.wait_for_selector(".evidence-table")
    assert mobile.evaluate("document.documentElement.scrollWidth") <= 390
    box = mobile.locator(
        '.evidence-table [data-phase="expansion"] [data-metric="system_tps"]'
    ).first.bounding_box()
    assert box is not None and box["x"] + box["width"] <= 390
    assert (
        mobile.evaluate(
            "[...document.querySelectorAll('.table-scroll:has(.stack-table)')].filter(s => s.scrollWidth > s.clientWidth).length"
        )
        == 0
    )
    mobile.screenshot(path=str(SHOTS / "buyer-procurement-phases-390.png"), full_page=True)
    phone.close()
    context.close()
    assert not errors
