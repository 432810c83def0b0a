"""A buyer on a phone and on a desktop (Chromium at 390 and 1440 px), on the published sample results (AX-8000 and
NB-2, real curves with their cliffs): the board's peak tokens/s and the SLO answer's system tokens/s and cost are on
screen without scrolling sideways; a chart's details never hide the chart (beside the point on a wide chart, never
over it; beneath the plot on a narrow one), cliff points included. Screenshots under docs/screenshots/."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.django_db(transaction=True)
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
PERCENTILE_PRICED = (
    "/leaderboard/slo/?benchmark=llama3_1-8b&ttft_p90_ms_max=100000&interactivity_min=0"
    "&price_per_accelerator_hour=2.5"
)
PER_REQUEST_PRICED = "/leaderboard/slo/?benchmark=llama3_1-8b&ttft_ms=2000&tpot_ms=100&attainment=90&price_per_accelerator_hour=2.5"


def _right_edge(page, selector: str) -> float:
    box = page.locator(selector).first.bounding_box()
    assert box is not None, selector
    return box["x"] + box["width"]


def test_on_a_phone_the_key_figures_come_first_and_the_page_never_scrolls_sideways(
    chromium, live_server, plain_http, published
):
    context = chromium.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    SHOTS.mkdir(parents=True, exist_ok=True)

    page.goto(f"{live_server.url}/leaderboard/llama3_1-8b/")
    page.locator(".results-table").scroll_into_view_if_needed()
    headers = page.locator(".results-table thead th").all_inner_texts()
    assert headers.index("Peak tokens/s") == 3  # right after the system's name
    assert _right_edge(page, '.results-table [data-metric="peak_tps"]') <= 390
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 390
    page.screenshot(path=str(SHOTS / "phone-board-key-figure.png"), full_page=False)

    page.goto(f"{live_server.url}{PERCENTILE_PRICED}")
    page.wait_for_selector("#slo-table")
    headers = page.locator("#slo-table thead th").all_inner_texts()
    assert headers[2:4] == ["System tokens/s", "Cost / M tokens"]
    page.locator("#slo-table").scroll_into_view_if_needed()
    assert _right_edge(page, '#slo-table [data-metric="system_tps"]') <= 390
    assert _right_edge(page, '#slo-table [data-metric="cost_per_million_tokens"]') <= 390
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 390
    page.screenshot(path=str(SHOTS / "phone-slo-percentile-priced.png"), full_page=False)

    page.goto(f"{live_server.url}{PER_REQUEST_PRICED}")
    page.wait_for_selector('#slo-table [data-metric="cost_per_million_good_tokens"]')
    page.locator("#slo-table").scroll_into_view_if_needed()
    assert _right_edge(page, '#slo-table [data-metric="goodput_tps"]') <= 390
    assert _right_edge(page, '#slo-table [data-metric="cost_per_million_good_tokens"]') <= 390
    page.screenshot(path=str(SHOTS / "phone-slo-per-request-priced.png"), full_page=False)
    context.close()
    assert not errors, errors


def _hover_cliff_point(page, chart: str) -> dict:
    """Hover the first point past a cliff on `chart`: the tip's box, the point's and the plot's."""
    page.wait_for_load_state("networkidle")  # the chart redraws once its fonts and size settle
    cliff = page.locator(f"{chart} .cliff-line").first.get_attribute("data-cliff")
    marker = page.locator(f'{chart} .marker[data-point="{cliff}"]').first
    marker.scroll_into_view_if_needed()
    marker.hover()
    tip = page.locator(f"{chart} .chart-tip")
    tip.wait_for(state="visible")
    assert "cliff" in tip.inner_text()
    return {
        "tip": tip.bounding_box(),
        "point": marker.bounding_box(),
        "plot": page.locator(f"{chart} svg.step-chart").bounding_box(),
        "docked": "docked" in (tip.get_attribute("class") or ""),
    }


def _overlap(a: dict, b: dict) -> float:
    width = max(0.0, min(a["x"] + a["width"], b["x"] + b["width"]) - max(a["x"], b["x"]))
    height = max(0.0, min(a["y"] + a["height"], b["y"] + b["height"]) - max(a["y"], b["y"]))
    return width * height


@pytest.mark.parametrize("width", [1440, 390])
def test_a_charts_details_never_hide_the_chart_cliff_points_included(
    chromium, live_server, plain_http, published, width
):
    context = chromium.new_context(viewport={"width": width, "height": 900}, is_mobile=width < 500)
    page = context.new_page()
    checked = 0
    for publication, chart in [(p, c) for p in published for c in ("#chart-front", "#chart-concurrency")]:
        page.goto(f"{live_server.url}/results/{publication.public_id}/")
        page.wait_for_selector(f"{chart} svg.step-chart")
        if page.locator(f"{chart} .cliff-line").count() == 0:
            continue
        checked += 1
        boxes = _hover_cliff_point(page, chart)
        tip, point, plot = boxes["tip"], boxes["point"], boxes["plot"]
        plot_width = plot["width"]
        if plot_width < 640:  # a narrow chart: the details sit beneath the plot, covering none of it
            assert boxes["docked"] and tip["y"] >= plot["y"] + plot["height"] - 1, (chart, tip, plot)
        else:  # a wide one: beside the point, never over it, a small part of the plot
            assert not boxes["docked"]
            assert _overlap(tip, point) == 0, (chart, tip, point)
            assert _overlap(tip, plot) <= 0.2 * plot["width"] * plot["height"], (chart, tip, plot)
        page.locator(chart).screenshot(
            path=str(SHOTS / f"chart-cliff-tip-{width}{chart.replace('#chart', '')}.png")
        )
    assert checked, "a sample curve has a cliff on its charts"
    # The board's chart is wide at 1440 px: its details float beside the point (a cliff point's too).
    page.goto(f"{live_server.url}/leaderboard/llama3_1-8b/")
    page.wait_for_selector("#chart-board svg.step-chart")
    if page.locator("#chart-board svg.step-chart").bounding_box()["width"] >= 640:
        boxes = _hover_cliff_point(page, "#chart-board")
        assert not boxes["docked"] and _overlap(boxes["tip"], boxes["point"]) == 0
        assert _overlap(boxes["tip"], boxes["plot"]) <= 0.2 * boxes["plot"]["width"] * boxes["plot"]["height"]
        page.locator("#chart-board").screenshot(path=str(SHOTS / f"chart-cliff-tip-{width}-board.png"))
    else:
        assert width < 640
    context.close()
