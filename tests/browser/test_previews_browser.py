"""A preview in Chromium: acme's submitter uploads the real vLLM bench sweep through the web form, the check runs,
and the preview's step curve is drawn beside acme's published AX-8000 curve (the real sample runs), with the
%-differences against it; every page says "Not an MLPerf result". Screenshots (1280 px and 390 px):
docs/screenshots/preview-*.png."""

from __future__ import annotations

from pathlib import Path

import pytest

from previews.models import Preview
from tests.browser.signin import pass_second_factor
from tests.factories import PASSWORD, BenchmarkFactory
from tests.leaderboard.goodput_support import publish_sample_run
from tests.previews.support import VLLM

pytestmark = pytest.mark.django_db(transaction=True)
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


def test_a_preview_is_drawn_beside_the_published_curve(
    chromium, live_server, plain_http, role_users, storage_dir
):
    SHOTS.mkdir(parents=True, exist_ok=True)
    benchmark = BenchmarkFactory(sample=True)
    acme, nimbus = role_users["organisations"]["acme"], role_users["organisations"]["nimbus"]
    own = publish_sample_run(
        benchmark=benchmark, system_name="Acme_AX-8000", accelerators=8, organisation=acme
    )
    publish_sample_run(benchmark=benchmark, system_name="Nimbus_NB-2", accelerators=4, organisation=nimbus)
    system = own.submission.system

    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "submitter")
    page.fill("input[name=password]", PASSWORD)
    page.click("main button[type=submit]")
    pass_second_factor(page, "submitter")
    page.goto(f"{live_server.url}/previews/")
    assert "Not an MLPerf result" in page.locator("[data-not-mlperf]").inner_text()
    page.fill("input[name=name]", "vLLM bench sweep c1-c8")
    page.select_option("select[name=system]", str(system.pk))
    page.select_option("select[name=benchmark]", str(benchmark.pk))
    page.set_input_files("input[name=files]", [str(p) for p in VLLM])
    page.screenshot(path=str(SHOTS / "preview-upload.png"), full_page=True)
    page.click("#upload button[type=submit]")
    page.wait_for_url("**/previews/*/")
    preview = Preview.objects.get()
    page.goto(f"{live_server.url}/previews/{preview.pk}/")  # after the check (eager): the charts
    page.wait_for_selector("#chart-concurrency svg")
    assert "Not an MLPerf result" in page.locator("[data-not-mlperf]").inner_text()
    assert page.locator("[data-preview-status]").inner_text() == "Checked"
    # two step lines on the throughput chart: the preview's and the published AX-8000's
    lines = page.locator("#chart-concurrency path.step-line")
    assert lines.count() == 2
    legend = page.locator("#chart-concurrency .legend").inner_text()
    assert "(preview, not an MLPerf result)" in legend and own.public_id in legend
    # %-differences against the published result at the concurrencies both measured
    table = page.locator("[data-diff-table]")
    assert table.locator("tbody tr").count() >= 1
    assert "%" in table.locator('[data-pct="system_tps"]').first.inner_text()
    assert not errors, errors
    page.screenshot(path=str(SHOTS / "preview-beside-published.png"), full_page=True)
    page.goto(f"{live_server.url}/previews/")
    page.screenshot(path=str(SHOTS / "preview-list.png"), full_page=True)

    phone = chromium.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    mobile = phone.new_page()
    mobile.context.add_cookies(context.cookies())
    mobile.goto(f"{live_server.url}/previews/{preview.pk}/")
    mobile.wait_for_selector("#chart-concurrency svg")
    assert mobile.evaluate("document.documentElement.scrollWidth") <= 390
    mobile.screenshot(path=str(SHOTS / "preview-beside-published-phone.png"), full_page=True)
    phone.close()
    context.close()
