"""The public leaderboard in Chromium: a step curve per published result, hovering shows a point with its
concurrency and metrics, series toggles and log axes; screenshots of every public page (desktop and phone)
under docs/screenshots/public-*.png; nothing unpublished (Unreleased-Z9) on any of them."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.utils import timezone

from leaderboard.models import Annotation
from submissions.models import CheckRun
from tests.factories import (
    AttestationFactory,
    BenchmarkFactory,
    OrganisationFactory,
    PointMetricFactory,
    PublicationFactory,
    ReviewFactory,
    SystemFactory,
    WaiverFactory,
)
from tests.leaderboard.support import publish, refreeze

pytestmark = pytest.mark.django_db(transaction=True)
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
HIDDEN = "Unreleased-Z9"


def _system(organisation, name: str, accelerator: str, count: int, nodes: int = 1):
    return SystemFactory(
        organisation=organisation,
        name=name,
        description={
            "system_name": name,
            "serving_framework": "vLLM 0.9.2",
            "node_types": [
                {
                    "number_of_nodes": nodes,
                    "host_processor_model_name": "AMD EPYC 9654",
                    "host_processors_per_node": 2,
                    "host_memory_capacity": "1.5 TB",
                    "operating_system": "Ubuntu 22.04",
                    "accelerator_info": [
                        {
                            "accelerator_model_name": accelerator,
                            "accelerators_per_node": count,
                            "accelerator_memory_capacity": "141 GB",
                            "accelerator_memory_type": "HBM3e",
                        }
                    ],
                }
            ],
        },
    )


@pytest.fixture
def scene(role_users):
    acme = role_users["organisations"]["acme"]
    nimbus = role_users["organisations"]["nimbus"]
    zephyr = OrganisationFactory(name="Zephyr Silicon", slug="zephyr")
    benchmark = BenchmarkFactory(sample=True)
    ax4000 = _system(acme, "Acme AX-4000", "AX-4 GPU", 4)
    ax8000 = _system(acme, "Acme AX-8000", "AX-8 GPU", 8)
    nc = _system(nimbus, "Nimbus NC-8x", "H200-SXM", 8)
    zs = _system(zephyr, "Zephyr ZS-2", "ZS-2 NPU", 16, nodes=2)
    old = publish(benchmark=benchmark, system=ax8000, scale=1.6, days_ago=60)
    results = {
        "ax4000": publish(benchmark=benchmark, system=ax4000, scale=0.8, days_ago=20),
        "ax8000_old": old,
        "ax8000": publish(benchmark=benchmark, system=ax8000, scale=2.1, days_ago=2),
        "nc": publish(benchmark=benchmark, system=nc, scale=1.8, days_ago=5, availability="preview"),
        "zs": publish(benchmark=benchmark, system=zs, scale=1.2, days_ago=9, division="open"),
    }
    # Published from a bundle without raw logs (raw-log-missing waived): claimed, unranked by default.
    zs1 = _system(zephyr, "Zephyr ZS-1", "ZS-1 NPU", 8)
    claimed = publish(benchmark=benchmark, system=zs1, scale=2.6, days_ago=12, claimed=True)
    retracted = publish(benchmark=benchmark, system=nc, scale=3.0, days_ago=30, retracted=True)
    main = results["ax8000"]
    CheckRun.objects.filter(pk=main.check_run_id).update(checker_version="portal-checker 0.9.3")
    main.check_run.point_metrics.all().delete()
    for concurrency, watts in ((1, 5200.0), (16, 7900.0), (128, 10300.0)):
        point = next(p for p in main.curve["points"] if p["concurrency"] == concurrency)
        PointMetricFactory(
            check_run=main.check_run,
            concurrency=concurrency,
            extra={
                "power": {
                    "measured": {
                        "avg_power_w": watts,
                        "measured_tps_per_kw": point["system_tps"] / (watts / 1000),
                        "joules_per_output_token": watts / point["system_tps"],
                        "coverage": 0.998,
                        "meter": "Yokogawa WT333E",
                    }
                }
            },
        )
    for reviewer_organisation in (nimbus, zephyr):
        ReviewFactory(
            assignment__submission=main.submission,
            assignment__organisation=reviewer_organisation,
            version=main.version,
        )
    AttestationFactory(submission=main.submission, version=main.version, auditor=role_users["auditor"])
    WaiverFactory(
        version=main.version,
        status="granted",
        rule="accuracy-sample-count",
        decision_reason="Accuracy run on the full dataset was submitted separately.",
    )
    Annotation.objects.create(
        publication=main,
        text="The c128 point ran with the prefix cache warmed, as disclosed in the README.",
        created_by=role_users["chair"],
    )
    refreeze(main)  # the waiver as granted before publication: the record shows it
    hidden_system = _system(zephyr, HIDDEN, "Z9 NPU", 8)
    PublicationFactory(scheduled=True, submission__system=hidden_system, submission__benchmark=benchmark)
    return {
        "benchmark": benchmark,
        "retracted": retracted,
        "claimed": claimed,
        "timestamp": timezone.now(),
        **results,
    }


def _no_hidden(page):
    assert HIDDEN not in page.content()


def test_public_pages_in_chromium(chromium, live_server, plain_http, scene):
    SHOTS.mkdir(parents=True, exist_ok=True)
    model = scene["benchmark"].model_id
    context = chromium.new_context(viewport={"width": 1360, "height": 900})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))

    page.goto(f"{live_server.url}/")
    _no_hidden(page)
    page.screenshot(path=str(SHOTS / "public-home.png"), full_page=True)
    page.goto(f"{live_server.url}/leaderboard/")
    _no_hidden(page)
    page.screenshot(path=str(SHOTS / "public-leaderboard-index.png"), full_page=True)

    page.goto(f"{live_server.url}/leaderboard/{model}/")
    _no_hidden(page)
    lines = page.locator("#chart-board path.step-line")
    # one step curve per system (its newest result: the older AX-8000 result is in its history); the retracted
    # one is out
    assert lines.count() == 4
    for d in lines.evaluate_all("els => els.map(e => e.getAttribute('d'))"):
        coords = [tuple(map(float, c[1:].split(","))) for c in d.split()]
        # a step function: every segment is horizontal or vertical, never a slanted (interpolated) line
        assert all(a[0] == b[0] or a[1] == b[1] for a, b in zip(coords, coords[1:], strict=False)), d
    marker = page.locator(f'#chart-board .marker[data-series="{scene["ax8000"].public_id}"]').nth(3)
    marker.hover()
    tip = page.locator("#chart-board .chart-tip")
    tip.wait_for(state="visible")
    text = tip.inner_text()
    assert "Acme AX-8000" in text and "Concurrency" in text and "8" in text and "TTFT P90" in text
    assert "recomputed from its raw log" in text
    # The claimed result is left out of the ranking, said so, one click away.
    assert "Zephyr ZS-1" not in page.locator(".results-table").inner_text()
    assert "1 partly recomputed or claimed result left out" in page.locator(".lead").inner_text()
    page.screenshot(path=str(SHOTS / "public-leaderboard.png"), full_page=True)
    page.goto(f"{live_server.url}/leaderboard/{model}/?level=all")
    row = page.locator(".results-table tr", has_text="Zephyr ZS-1")
    assert "unranked" in row.inner_text() and "claimed" in row.inner_text()
    page.locator(f'#chart-board .marker[data-series="{scene["claimed"].public_id}"]').nth(2).hover()
    page.locator("#chart-board .chart-tip").wait_for(state="visible")
    assert (
        "claimed: no raw log (waived), not recomputed" in page.locator("#chart-board .chart-tip").inner_text()
    )
    page.screenshot(path=str(SHOTS / "public-leaderboard-levels.png"), full_page=True)
    page.goto(f"{live_server.url}/leaderboard/{model}/")
    page.locator(f'[data-series-toggle="{scene["nc"].public_id}"]').uncheck()
    assert lines.count() == 3
    page.locator('#chart-board [data-log="x"]').check()
    assert lines.count() == 3 and "log" in page.locator("#chart-board svg").text_content()
    page.goto(f"{live_server.url}/leaderboard/{model}/?organisation=acmecompute")
    assert page.locator("#chart-board path.step-line").count() == 2
    page.screenshot(path=str(SHOTS / "public-leaderboard-filtered.png"), full_page=True)

    page.goto(f"{live_server.url}/results/{scene['ax8000'].public_id}/")
    _no_hidden(page)
    assert page.locator("svg.step-chart").count() == 3
    assert "Reviewed by 2 organisations, audited on" in page.locator("[data-review-trail]").inner_text()
    assert "passed with" not in page.content() or 'href="#waivers"' in page.content()
    assert "accuracy-sample-count" in page.locator("#waivers + dd").inner_text()
    page.screenshot(path=str(SHOTS / "public-result.png"), full_page=True)
    page.goto(f"{live_server.url}/results/{scene['claimed'].public_id}/")
    assert page.locator("[data-verification]").inner_text() == "claimed"
    page.screenshot(path=str(SHOTS / "public-result-claimed.png"), full_page=True)
    page.goto(f"{live_server.url}/results/{scene['retracted'].public_id}/")
    assert "Retracted on" in page.content()
    page.screenshot(path=str(SHOTS / "public-result-retracted.png"), full_page=True)

    ids = f"{scene['ax8000'].public_id},{scene['nc'].public_id},{scene['zs'].public_id}"
    page.goto(f"{live_server.url}/leaderboard/{model}/compare/?ids={ids}")
    _no_hidden(page)
    assert page.locator("#chart-compare path.step-line").count() == 3
    page.screenshot(path=str(SHOTS / "public-compare.png"), full_page=True)
    page.goto(f"{live_server.url}/systems/{scene['ax8000'].submission.system_id}/history/")
    _no_hidden(page)
    assert page.locator("svg.step-chart path.step-line").count() == 2
    page.screenshot(path=str(SHOTS / "public-system-history.png"), full_page=True)
    context.close()

    phone = chromium.new_context(
        viewport={"width": 390, "height": 844}, device_scale_factor=2, has_touch=True
    )
    page = phone.new_page()
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{live_server.url}/leaderboard/{model}/")
    box = page.locator("#chart-board svg").bounding_box()
    assert box["width"] <= 390
    page.screenshot(path=str(SHOTS / "public-leaderboard-phone.png"), full_page=True)
    page.goto(f"{live_server.url}/results/{scene['ax8000'].public_id}/")
    page.locator("#chart-front .marker").nth(2).tap()
    page.locator("#chart-front .chart-tip").wait_for(state="visible")
    page.screenshot(path=str(SHOTS / "public-result-phone.png"), full_page=True)
    phone.close()
    assert not errors, errors


def test_the_board_loads_more_curves_from_the_public_api(
    chromium, live_server, plain_http, scene, monkeypatch
):
    """With fewer curves drawn than ranked, the page carries only the drawn ones; ticking another system in the
    picker fetches its curve from the public API and draws it as a step function with hoverable points."""
    from leaderboard.views import public as views

    monkeypatch.setattr(views, "BOARD_DRAWN", 2)
    model = scene["benchmark"].model_id
    context = chromium.new_context(viewport={"width": 1360, "height": 900})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{live_server.url}/leaderboard/{model}/")
    lines = page.locator("#chart-board path.step-line")
    assert lines.count() == 2
    assert "The chart draws the top 2 curves" in page.locator("[data-board-shown]").inner_text()
    extra = page.locator("#system-picker [data-series-src]").first
    sid = extra.get_attribute("data-series-toggle")
    with page.expect_response(f"**/api/v1/public/results/{sid}/") as answer:
        extra.check()
    assert answer.value.ok
    page.wait_for_function("document.querySelectorAll('#chart-board path.step-line').length === 3")
    assert page.locator("[data-plotting]").inner_text() == "3"
    d = page.locator(f'#chart-board path.step-line[data-series="{sid}"]').get_attribute("d")
    coords = [tuple(map(float, c[1:].split(","))) for c in d.split()]
    assert all(a[0] == b[0] or a[1] == b[1] for a, b in zip(coords, coords[1:], strict=False)), d
    page.locator(f'#chart-board .marker[data-series="{sid}"]').nth(1).hover()
    tip = page.locator("#chart-board .chart-tip")
    tip.wait_for(state="visible")
    assert "Concurrency" in tip.inner_text() and "TTFT P90" in tip.inner_text()
    extra.uncheck()
    assert lines.count() == 2
    extra.check()  # already loaded: drawn again without another request
    assert lines.count() == 3
    context.close()
    assert not errors, errors
