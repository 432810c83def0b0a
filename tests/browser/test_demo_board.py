"""The demo's public board in Chromium (`manage.py seed_demo`): two fully recomputed systems of different sizes,
AcmeCompute's AX-8000 and NimbusCloud's 2-accelerator NB-2, under the preview rule set, and the AX-8000 result
extended with the real acme-serve 1.1 runs. Screenshots: docs/screenshots/demo-*.png."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import call_command

from tests.factories import BenchmarkFactory

pytestmark = pytest.mark.django_db(transaction=True)
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


def test_the_demo_board_compares_two_real_systems_and_the_extended_result(chromium, live_server, plain_http):
    from leaderboard.demo import ANNOTATED_TITLE, AX8000_TITLE
    from leaderboard.models import Publication

    BenchmarkFactory(sample=True)
    call_command("seed_demo", stdout=io.StringIO())
    ax8000 = Publication.objects.get(submission__title=AX8000_TITLE)
    nb2 = Publication.objects.get(submission__title=ANNOTATED_TITLE)
    SHOTS.mkdir(parents=True, exist_ok=True)
    context = chromium.new_context(viewport={"width": 1360, "height": 900})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))

    page.goto(f"{live_server.url}/leaderboard/llama3_1-8b/")
    board = page.content()
    assert "Acme_AX-8000" in board and "Nimbus_NB-2" in board
    assert "preview rule set" in board and "endpoints-v1.0-preview" in board
    for series in (ax8000.public_id, nb2.public_id):
        assert page.locator(f'#chart-board .marker[data-series="{series}"]').count() == 7
    page.screenshot(path=str(SHOTS / "demo-board.png"), full_page=True)

    # The extended AX-8000: revision 2's real r16 and r32 (acme-serve 1.1), not a relabelled run.
    page.goto(f"{live_server.url}/results/{ax8000.public_id}/")
    text = " ".join(page.locator("main").inner_text().split())
    assert "Re-measured concurrency 16: 1,510 → 1,987 tokens/s" in text
    assert "Re-measured concurrency 32: 2,936 → 3,897 tokens/s" in text and "acme-serve 1.1" in text
    page.screenshot(path=str(SHOTS / "demo-result-extended.png"), full_page=True)

    page.goto(f"{live_server.url}/results/{nb2.public_id}/")
    text = " ".join(page.locator("main").inner_text().split())
    assert "Nimbus_NB-2 · NimbusCloud" in text and "1,392.6" in text and "Annotations" in text
    page.screenshot(path=str(SHOTS / "demo-result-nb2.png"), full_page=True)
    context.close()
    assert not errors, errors
