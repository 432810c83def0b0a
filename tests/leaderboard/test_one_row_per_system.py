"""One row per system: the board, the SLO finder and the procurement report rank the newest published result per
(organisation, system, benchmark, division); the older ones are one click away in the system's history."""

from __future__ import annotations

import pytest
from django.test import Client

from leaderboard.board.cache import public_cache_bump
from tests.factories import BenchmarkFactory
from tests.leaderboard.support import publish

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(role_users, storage_dir):
    public_cache_bump()
    benchmark = BenchmarkFactory(model_id="rows-8b", display_name="Rows 8B")
    acme = role_users["organisations"]["acme"]
    first = publish(benchmark=benchmark, organisation=acme, scale=2.0, days_ago=30)
    system = first.submission.system
    sibling = publish(benchmark=benchmark, system=system, scale=2.0, days_ago=10)
    newest = publish(benchmark=benchmark, system=system, scale=2.05, days_ago=1)
    open_division = publish(benchmark=benchmark, system=system, scale=2.5, days_ago=2, division="open")
    other = publish(benchmark=benchmark, organisation=role_users["organisations"]["nimbus"], scale=1.0)
    return {
        "benchmark": benchmark,
        "older": [first, sibling],
        "newest": newest,
        "open": open_division,
        "other": other,
        "system": system,
    }


def test_the_board_ranks_the_newest_result_per_system_and_links_its_history(world):
    response = Client().get("/leaderboard/rows-8b/")
    html = response.content.decode()
    ranked = [row["publication"].public_id for row in response.context["rows"]]
    assert sorted(ranked) == sorted(
        [world["newest"].public_id, world["open"].public_id, world["other"].public_id]
    )
    for older in world["older"]:
        assert older.public_id not in ranked
    assert "(+2 older)" in html  # the closed-division system's two older results
    history = Client().get(f"/systems/{world['system'].pk}/history/").content.decode()
    for publication in [*world["older"], world["newest"]]:
        assert publication.public_id in history


def test_the_slo_finder_and_the_procurement_report_count_systems_the_same_way(world):
    rows = (
        Client()
        .get(
            "/api/v1/public/slo/", {"benchmark": "rows-8b", "ttft_p90_ms_max": 10_000, "interactivity_min": 0}
        )
        .json()["results"]
    )
    assert sorted(row["public_id"] for row in rows) == sorted(
        [world["newest"].public_id, world["open"].public_id, world["other"].public_id]
    )
    page = (
        Client()
        .get("/leaderboard/slo/", {"benchmark": "rows-8b", "ttft_p90_ms_max": 10_000, "interactivity_min": 0})
        .content.decode()
    )
    assert "3 systems meet the targets" in page
    report = (
        Client()
        .get(
            "/api/v1/public/procurement/",
            {"model_1": "rows-8b", "ttft_p90_ms_max_1": 10_000, "interactivity_min_1": 0},
        )
        .json()
    )
    ids = {system["public_id"] for section in report["models"] for system in section["systems"]}
    assert world["newest"].public_id in ids and not ids & {p.public_id for p in world["older"]}
