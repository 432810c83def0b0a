"""Charts and the buyer's query forms by keyboard alone, in Chromium (issue 39).

A chart is one tab stop: the arrow keys walk its points, each point's details show beside it and are announced
(the tooltip is a polite live region, the point is named by every metric), Escape closes them; series differ by
marker shape and dash as well as colour; the collapsed table under the chart lists every plotted point. After an SLO
or procurement search the focus lands on the answer, or on the first field in error, marked aria-invalid and
described by the error summary. Screenshots with the focus shown: docs/screenshots/chart-keyboard-*.png."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.factories import BenchmarkFactory
from tests.leaderboard.support import publish

pytestmark = pytest.mark.django_db(transaction=True)
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
FOCUSED = "() => document.activeElement.getAttribute('data-point')"


@pytest.fixture
def board(plain_http):
    benchmark = BenchmarkFactory(sample=True)
    results = [
        publish(benchmark=benchmark, scale=scale, days_ago=days)
        for scale, days in ((2.0, 1), (1.4, 2), (0.9, 3))
    ]
    return benchmark, results


def _tab_to_chart(page, max_tabs: int = 80) -> None:
    for _ in range(max_tabs):
        page.keyboard.press("Tab")
        if page.evaluate("() => document.activeElement.classList.contains('marker')"):
            return
    raise AssertionError("no chart point is reachable with Tab")


def test_the_board_chart_by_keyboard(chromium, live_server, board):
    benchmark, results = board
    page = chromium.new_context(viewport={"width": 1280, "height": 900}).new_page()
    page.goto(f"{live_server.url}/leaderboard/{benchmark.model_id}/")
    chart = page.locator("[data-chart]").first
    markers = chart.locator(".marker")
    points = markers.count()
    assert points == sum(len(r.curve["points"]) for r in results)
    # one tab stop for the whole chart; every point focusable from it
    assert chart.locator(".marker[tabindex='0']").count() == 1
    assert chart.locator(".marker[tabindex='-1']").count() == points - 1

    _tab_to_chart(page)
    first = page.evaluate(FOCUSED)
    tip = chart.locator(".chart-tip")
    assert tip.is_visible() and tip.get_attribute("data-point") == first
    assert tip.get_attribute("aria-live") == "polite"
    name = page.evaluate("() => document.activeElement.getAttribute('aria-label')")
    assert "Concurrency" in name and "System throughput" in name and "TTFT P90" in name

    page.keyboard.press("ArrowRight")
    second = page.evaluate(FOCUSED)
    assert second != first and tip.get_attribute("data-point") == second
    page.keyboard.press("ArrowDown")  # the next series
    other_series = page.evaluate("() => document.activeElement.getAttribute('data-series')")
    assert other_series != markers.first.get_attribute("data-series")
    page.keyboard.press("End")
    page.keyboard.press("ArrowLeft")
    page.wait_for_timeout(100)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "chart-keyboard-board.png"))
    page.keyboard.press("Escape")
    assert not tip.is_visible()
    assert page.evaluate("() => document.activeElement.classList.contains('marker')")  # the focus stays

    # Series differ by more than colour: each its own marker shape, the second a dashed line.
    shapes = page.evaluate(
        """() => [...document.querySelectorAll('[data-chart] .marker')].reduce((by, m) => {
             (by[m.dataset.series] = by[m.dataset.series] || new Set()).add(m.getAttribute('d').replace(/[-\\d.]+/g, 'n'));
             return by; }, {})"""
    )
    assert len(shapes) == 3
    dashes = [line.get_attribute("stroke-dasharray") for line in chart.locator(".step-line").all()]
    assert len(set(dashes)) == len(dashes) == 3, dashes

    # The table under the chart: collapsed, one row per plotted point.
    table = chart.locator("details.chart-table")
    assert table.get_attribute("open") is None
    assert table.locator("tbody tr").count() == points


def test_a_result_chart_on_a_phone_by_keyboard(chromium, live_server, board):
    _benchmark, results = board
    page = chromium.new_context(viewport={"width": 390, "height": 844}).new_page()
    page.goto(f"{live_server.url}/results/{results[0].public_id}/")
    _tab_to_chart(page, max_tabs=120)
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    focused = page.evaluate(FOCUSED)
    tip = page.locator(".chart-tip:visible")
    assert tip.count() == 1 and tip.get_attribute("data-point") == focused
    page.evaluate("() => document.activeElement.closest('figure').scrollIntoView()")
    page.screenshot(path=str(SHOTS / "chart-keyboard-result-phone.png"))
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 390


def _active(page) -> dict:
    return page.evaluate(
        """() => { const a = document.activeElement; return {tag: a.tagName, name: a.name || a.id,
                   invalid: a.getAttribute('aria-invalid'), describedby: a.getAttribute('aria-describedby')}; }"""
    )


def test_after_a_search_the_focus_is_on_the_answer_or_the_first_error(chromium, live_server, board):
    benchmark, _results = board
    page = chromium.new_context(viewport={"width": 1280, "height": 900}).new_page()
    base = live_server.url
    # (the browser's own check stops a negative number in the form: the server's answer to the address itself)
    page.goto(f"{base}/leaderboard/slo/?benchmark={benchmark.model_id}&ttft_p90_ms_max=-3")
    active = _active(page)
    assert active == {
        "tag": "INPUT",
        "name": "ttft_p90_ms_max",
        "invalid": "true",
        "describedby": "slo-errors",
    }
    assert "TTFT" in page.inner_text("#slo-errors")

    page.fill("input[name=ttft_p90_ms_max]", "100000")
    page.fill("input[name=interactivity_min]", "0")
    page.locator("input[name=interactivity_min]").press("Enter")
    page.wait_for_load_state()
    assert _active(page)["name"] == "slo-answer"
    assert page.locator("input[aria-invalid]").count() == 0

    page.goto(f"{base}/leaderboard/procurement/?model_1={benchmark.model_id}&ttft_p90_ms_max_1=-5")
    active = _active(page)
    assert active["name"] == "ttft_p90_ms_max_1" and active["invalid"] == "true"
    assert active["describedby"] == "procurement-errors"
    page.goto(f"{base}/leaderboard/procurement/?model_1={benchmark.model_id}&ttft_p90_ms_max_1=100000")
    assert _active(page)["name"] == "model-1"
