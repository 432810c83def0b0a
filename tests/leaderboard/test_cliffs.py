"""Performance cliffs on the real sample curves: NB-2 falls off after concurrency 16 (interactivity /1.9, TTFT
P90 x4.3 at r32), AX-8000 stays stable; the result page marks the points past a cliff and the SLO finder says
which side of the cliff its answer is on."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from leaderboard.board.cache import public_cache_bump
from leaderboard.board.cliffs import cliff_side, curve_cliffs
from tests.factories import BenchmarkFactory
from tests.leaderboard.goodput_support import checked, publish_sample_run

pytestmark = pytest.mark.django_db


def test_the_real_curves_cliffs():
    nb2, _ = checked("Nimbus_NB-2")
    cliffs = curve_cliffs(nb2["points"])
    assert [(c["before_concurrency"], c["after_concurrency"]) for c in cliffs] == [(16, 32), (32, 64)]
    first = cliffs[0]
    assert first["interactivity_kept"] < 0.7 and first["ttft_factor"] > 4
    assert cliff_side(nb2["points"], 16)["side"] == "before"
    assert cliff_side(nb2["points"], 64)["side"] == "past"
    ax, _ = checked("Acme_AX-8000")
    assert curve_cliffs(ax["points"]) == [] and cliff_side(ax["points"], 64) is None


def test_pages_mark_the_cliff_and_the_finder_says_its_side(storage_dir):
    public_cache_bump()
    benchmark = BenchmarkFactory(model_id="cliff-8b")
    nb2 = publish_sample_run(benchmark=benchmark, system_name="Nimbus_NB-2", accelerators=2)
    ax = publish_sample_run(benchmark=benchmark, system_name="Acme_AX-8000", accelerators=8)
    public_cache_bump()
    html = Client().get(f"/results/{nb2.public_id}/").content.decode()
    marked = re.findall(
        r'<tr id="point-r\d+" class="past-cliff" data-cliff="after">'
        r'\s*<td class="num"><span[^>]*>cliff ▼</span> (\d+)',
        html,
    )
    assert marked == ["32", "64"]
    # the charts mark the same points as the table, and their tooltips say what fell
    for chart in ("chart-front", "chart-concurrency", "chart-ttft"):
        spec = json.loads(
            re.search(rf'<script id="{chart}-data" type="application/json">(.*?)</script>', html).group(1)
        )
        past = {p["concurrency"]: p["cliff_text"] for p in spec["series"][0]["points"] if p["past_cliff"]}
        assert sorted(past) == [32, 64], chart
        assert past[32].startswith("past a performance cliff: r16 -> r32 keeps ")
        assert "TTFT P90 x4." in past[32]
    ax_html = Client().get(f"/results/{ax.public_id}/").content.decode()
    assert '"past_cliff": true' not in ax_html and '"past_cliff": false' in ax_html
    rows = (
        Client()
        .get(
            "/api/v1/public/slo/",
            {"benchmark": "cliff-8b", "ttft_ms": 2000, "tpot_ms": 100, "attainment": 90},
        )
        .json()["results"]
    )
    by_id = {row["result"]: row for row in rows}
    assert by_id[nb2.public_id]["cliff"]["side"] == "before"
    assert by_id[nb2.public_id]["cliff"]["cliff"]["after_concurrency"] == 32
    assert by_id[ax.public_id]["cliff"] is None
    page = (
        Client()
        .get(
            "/leaderboard/slo/", {"benchmark": "cliff-8b", "ttft_ms": 2000, "tpot_ms": 100, "attainment": 90}
        )
        .content.decode()
    )
    assert "before the cliff at r32" in page
