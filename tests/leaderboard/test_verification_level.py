"""One verification level everywhere (DESIGN.md, "Physical consistency"): checker.judge.verification decides it, the
snapshot freezes it, and every public surface shows the same one. On the demo, EP-000004 (the AX-4000 published
from the sample bundle: no raw logs, `raw-log-missing` waived) is "claimed" on every surface and does not rank by
default; the AX-8000 (seven real run archives, every point recomputed) is "fully recomputed" and ranks. A
published result's check reads "passed with N waived", never "failed".

Transactional: the demo runs in autocommit, where the checks finish in-process before the next step needs them."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from django.core.management import call_command
from django.test import Client

from checker.judge.verification import (
    CLAIMED,
    FULLY_RECOMPUTED,
    PARTLY_RECOMPUTED,
    curve_verification,
    point_verification,
)
from leaderboard.board.cache import public_cache_bump
from leaderboard.demo import AX4000_TITLE, AX8000_TITLE
from leaderboard.models import Publication
from tests.factories import BenchmarkFactory

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_level_of_a_result_is_fully_partly_or_claimed_from_its_points():
    recomputed, claimed = {"basis": "recomputed", "concurrency": 1}, {"basis": "claimed", "concurrency": 8}
    assert point_verification(recomputed) == "recomputed" and point_verification(claimed) == "claimed"
    assert point_verification({"concurrency": 2}) == "claimed"  # no basis: nothing was recomputed
    assert curve_verification([recomputed, recomputed]).level == FULLY_RECOMPUTED
    partly = curve_verification([recomputed, claimed])
    assert partly.level == PARTLY_RECOMPUTED and partly.claimed_concurrencies == (8,)
    assert curve_verification([claimed]).level == CLAIMED
    assert curve_verification([]).level == CLAIMED  # no points verifies nothing


def _get(url: str) -> str:
    response = Client().get(url)
    assert response.status_code == 200, (url, response.status_code)
    return response.content.decode()


def _row_of(page: str, public_id: str) -> str:
    """The board table row of a result (from its compare checkbox to the end of the row)."""
    match = re.search(rf'value="{public_id}".*?</tr>', page, re.S)
    return match.group(0) if match else ""


def test_the_demo_shows_one_level_per_result_on_every_surface():
    BenchmarkFactory(sample=True)
    call_command("seed_demo", stdout=io.StringIO())
    public_cache_bump()
    published = Publication.objects.filter(status=Publication.Status.PUBLISHED)
    claimed = published.get(submission__title=AX4000_TITLE)
    full = published.get(submission__title=AX8000_TITLE)
    assert claimed.public_id.startswith("EP-")  # its number follows the database's sequence (EP-000004 alone)
    model = claimed.submission.benchmark.model_id
    levels = {claimed.public_id: CLAIMED, full.public_id: FULLY_RECOMPUTED}

    # The snapshot: the level decided once, from the points, frozen.
    assert claimed.record.level == CLAIMED and claimed.record.verification.recomputed_points == 0
    assert {p["verification"] for p in claimed.curve["points"]} == {"claimed"}
    assert full.record.level == FULLY_RECOMPUTED
    assert {p["verification"] for p in full.curve["points"]} == {"recomputed"}

    # The board: by default only fully recomputed results rank; the filter shows the others, marked.
    board = _get(f"/leaderboard/{model}/")
    assert not _row_of(board, claimed.public_id) and _row_of(board, full.public_id)
    assert "data-show-unranked" in board
    every = _get(f"/leaderboard/{model}/?level=all")
    claimed_row, full_row = _row_of(every, claimed.public_id), _row_of(every, full.public_id)
    assert 'data-level="claimed"' in claimed_row and "unranked" in every
    assert 'data-level="fully recomputed"' in full_row
    only_claimed = _get(f"/leaderboard/{model}/?level=claimed")
    assert _row_of(only_claimed, claimed.public_id) and not _row_of(only_claimed, full.public_id)

    for public_id, level in levels.items():
        # The result page: badge, trail, per-point column, the check's verdict with its waivers.
        page = _get(f"/results/{public_id}/")
        assert f'data-level="{level}"' in page and f"<strong data-verification>{level}</strong>" in page
        point_cells = re.findall(r"data-point-verification=\"\d+\">(\w+)<", page)
        assert len(point_cells) == 7
        assert set(point_cells) == ({"claimed"} if level == CLAIMED else {"recomputed"})
        assert re.search(r"check <a href=\"#waivers\" data-check-verdict>passed with \d+ waived</a>", page)
        assert 'id="waivers"' in page and "data-waiver" in page
        assert "check: failed" not in page and ">failed<" not in page.split("Official cross-check")[0]
        # The chart's tooltip data and legend.
        specs = [
            json.loads(s)
            for s in re.findall(r'<script id="chart-[^"]+" type="application/json">(.*?)</script>', page)
        ]
        assert specs and all(
            p["verification"] == ("claimed" if level == CLAIMED else "recomputed")
            for spec in specs
            for series in spec["series"]
            for p in series["points"]
        )
        assert all(series["level"] == level for spec in specs for series in spec["series"])
        assert f"data-series-level>({level})" in page
        # Points as JSON and CSV.
        points = json.loads(_get(f"/results/{public_id}/points.json"))
        assert points["verification"]["level"] == level and points["check"]["status"] == "passed_with_waivers"
        rows = list(csv.DictReader(io.StringIO(_get(f"/results/{public_id}/points.csv"))))
        assert {r["verification"] for r in rows} == ({"claimed"} if level == CLAIMED else {"recomputed"})
        # The public API (JSON and CSV) and its filter.
        detail = json.loads(_get(f"/api/v1/public/results/{public_id}/"))
        assert detail["verification"] == level and detail["check"].startswith("passed with ")
        assert detail["ranked_by_default"] is (level == FULLY_RECOMPUTED)
        assert {p["verification"] for p in detail["points"]} == {
            "claimed" if level == CLAIMED else "recomputed"
        }
        listed = json.loads(_get(f"/api/v1/public/results/?verification={level}"))["results"]
        assert public_id in {r["public_id"] for r in listed}

    table = list(csv.DictReader(io.StringIO(_get(f"/api/v1/public/results/?benchmark={model}&format=csv"))))
    assert {r["public_id"]: r["verification"] for r in table if r["public_id"] in levels} == levels
    point_table = _get(f"/api/v1/public/points/?benchmark={model}&format=csv&limit=1000")
    assert {
        r["verification"]
        for r in csv.DictReader(io.StringIO(point_table))
        if r["public_id"] == claimed.public_id
    } == {"claimed"}

    # Compare and history carry the badge.
    compare = _get(f"/leaderboard/{model}/compare/?ids={claimed.public_id},{full.public_id}")
    assert 'data-level="claimed"' in compare and 'data-level="fully recomputed"' in compare
    history = _get(f"/systems/{claimed.record.system_id}/history/")
    assert 'data-level="claimed"' in history

    # The SLO finder lists the claimed result after the ranked ones, unranked, with its level.
    slo = json.loads(
        _get(f"/api/v1/public/slo/?benchmark={model}&ttft_p90_ms_max=100000&interactivity_min=1")
    )
    rows = slo["results"]
    by_id = {r["public_id"]: r for r in rows}
    assert by_id[claimed.public_id]["verification"] == CLAIMED and by_id[claimed.public_id]["rank"] is None
    assert by_id[full.public_id]["rank"] is not None
    assert [r["rank"] for r in rows if r["rank"] is not None] == list(
        range(1, 1 + sum(r["ranked"] for r in rows))
    )

    # The procurement report judges recomputed points only and names what it left out.
    report = json.loads(
        _get(
            f"/api/v1/public/procurement/?model_1={model}&ttft_p90_ms_max_1=100000&delivery_system_tps_min_1=1"
        )
    )
    (section,) = report["models"]
    assert claimed.public_id in {r["public_id"] for r in section["not_fully_recomputed"]}
    assert all(r["verification"] == FULLY_RECOMPUTED for r in section["systems"])

    # The home page no longer claims every metric is recomputed; its latest list carries the badges.
    home = _get("/")
    assert "recomputes every metric" not in home and "every metric from the raw logs" not in home
    assert 'data-level="claimed"' in home

    # The anonymous submissions API: a published result's check is never "failed".
    answer = json.loads(_get("/api/v1/submissions/?limit=100"))
    checks = [
        s["latest_version"]["latest_check_run"]
        for s in answer["results"]
        if s["status"] == "published" and s.get("latest_version")
    ]
    assert checks and all(c["status"] in ("passed", "passed_with_waivers") for c in checks)
    assert any(c["verdict"].startswith("passed with ") for c in checks)
