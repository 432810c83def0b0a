"""The board's Pareto fronts grouped by accelerator count (issue 34, "Board views"): ?group=accelerators draws one
chart per accelerator count, so a system of 2 accelerators is never read off the same front as one of 8;
?per=accelerator divides each system's throughput by its own accelerator count. The charts' numbers are the public
points API's, divided in the test; the default board is unchanged."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from leaderboard.board.cache import public_cache_bump
from tests.factories import BenchmarkFactory
from tests.leaderboard.goodput_support import publish_sample_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(storage_dir):
    public_cache_bump()
    benchmark = BenchmarkFactory(model_id="board-model")
    ax = publish_sample_run(benchmark=benchmark, system_name="Acme_AX-8000", accelerators=8)
    nb = publish_sample_run(benchmark=benchmark, system_name="Nimbus_NB-2", accelerators=2)
    public_cache_bump()
    return {"ax": ax, "nb": nb}


def _specs(html: str) -> dict[str, dict]:
    return {
        m.group(1): json.loads(m.group(2))
        for m in re.finditer(
            r'<script id="(chart-[\w-]+)-data" type="application/json">(.*?)</script>', html, re.S
        )
    }


def _points(public_id: str) -> dict[str, float]:
    rows = (
        Client().get("/api/v1/public/points/", {"benchmark": "board-model", "limit": 1000}).json()["results"]
    )
    return {f"r{int(p['concurrency'])}": p["system_tps"] for p in rows if p["public_id"] == public_id}


@pytest.mark.parametrize("per", ["", "accelerator"])
def test_the_board_draws_one_front_per_accelerator_count(world, per):
    html = Client().get("/leaderboard/board-model/", {"group": "accelerators", "per": per}).content.decode()
    specs = _specs(html)
    assert set(specs) == {"chart-board-a2", "chart-board-a8"}  # fewest accelerators first, no mixed chart
    assert html.index("chart-board-a2") < html.index("chart-board-a8")
    for key, count in (("nb", 2), ("ax", 8)):
        spec = specs[f"chart-board-a{count}"]
        assert spec["title"].startswith(f"{count} accelerators: system throughput")
        (series,) = spec["series"]
        assert series["id"] == world[key].public_id
        published = _points(world[key].public_id)
        divisor = count if per else 1
        assert spec["y"]["key"] == ("system_tps_per_accelerator" if per else "system_tps")
        drawn = {p["key"].rsplit("/", 1)[-1]: p["y"] for p in series["points"]}
        assert drawn == {k: pytest.approx(v / divisor, rel=1e-12) for k, v in published.items() if k in drawn}
        assert len(drawn) == len(published)
        # the step function's vertices are measured points' values, divided alike
        assert {round(v[1], 6) for v in series["steps"]} <= {
            round(v / divisor, 6) for v in published.values()
        }
    assert 'name="group"' in html and "All on one chart" in html
    assert "data-picker=" not in html  # each group's chart has its own legend, no board picker


def test_the_default_board_keeps_one_chart_and_its_picker(world):
    html = Client().get("/leaderboard/board-model/").content.decode()
    assert set(_specs(html)) == {"chart-board"} and 'data-picker="system-picker"' in html
    # the view's choice survives the filters and the pages (and a bad value is the default)
    assert set(_specs(Client().get("/leaderboard/board-model/", {"group": "sideways"}).content.decode())) == {
        "chart-board"
    }
