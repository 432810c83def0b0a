"""The buyer's compare page and procurement phases (docs/buyers.md): compare's per-point normalised, priced and
goodput figures equal a computation written here from the published sample results (AX-8000, NB-2) and their raw
events; the inputs round-trip through the URL; bad inputs get labelled errors (400, never a 500); only published
results appear; the procurement report's evidence per phase equals the computation written here; the board and the
SLO finder give the accelerator count beside the type and the normalised views."""

from __future__ import annotations

import csv
import io
import re
from html import unescape
from urllib.parse import urlencode

import pytest
from django.test import Client
from django.utils import timezone

from leaderboard.board.cache import public_cache_bump
from leaderboard.board.slo import node_count
from submissions.models import PointMetric
from tests.checker.test_goodput import reference_slo
from tests.factories import BenchmarkFactory, PublicationFactory
from tests.leaderboard.goodput_support import publish_sample_run
from tests.leaderboard.support import make_curve, publish

pytestmark = pytest.mark.django_db

TRACE_W = 9000.0  # the power trace added to AX-8000's r64 (W)


@pytest.fixture(autouse=True)
def _fresh_public_cache(storage_dir):
    public_cache_bump()


@pytest.fixture
def world():
    benchmark = BenchmarkFactory(model_id="buyer-model")
    ax = publish_sample_run(benchmark=benchmark, system_name="Acme_AX-8000", accelerators=8)
    nb = publish_sample_run(benchmark=benchmark, system_name="Nimbus_NB-2", accelerators=2)
    # an earlier AX-8000 result (the same system): one row per system in the procurement report
    older = publish(
        benchmark=benchmark,
        system=ax.submission.system,
        organisation=ax.submission.organisation,
        scale=10.0,
        days_ago=30,
    )
    # a power trace on AX-8000's r64: per measured kW, and energy charged at the measured power
    r64 = next(p for p in ax.curve["points"] if p["concurrency"] == 64)
    metric = PointMetric.objects.get(check_run=ax.check_run, concurrency=64)
    metric.extra = {
        **(metric.extra or {}),
        "power": {"measured": {"avg_power_w": TRACE_W, "measured_tps_per_kw": r64["system_tps"] / 9.0}},
    }
    metric.save(update_fields=["extra"])
    scheduled = PublicationFactory(
        scheduled=True,
        submission__benchmark=benchmark,
        submission__system__name="Unreleased-Z9",
        curve=make_curve("Unreleased-Z9", "buyer-model", scale=20.0),
    )
    public_cache_bump()
    return {
        "benchmark": benchmark,
        "results": [(ax, "Acme_AX-8000", 8), (nb, "Nimbus_NB-2", 2)],
        "older": older,
        "scheduled": scheduled,
    }


def _number(text: str) -> float:
    return float(text.replace(",", "").replace("%", "").strip())


def _cells(html: str, public_id: str) -> dict[int, dict[str, str]]:
    """Compare's normalised table of one result: per concurrency, data-metric -> the cell's text."""
    block = re.search(rf'data-compare-result="{public_id}">(.*?)</table>', html, re.S).group(1)
    rows = {}
    for concurrency, row in re.findall(r'<tr data-normalised="(\d+)">(.*?)</tr>', block, re.S):
        rows[int(concurrency)] = dict(re.findall(r'data-metric="(\w+)">([^<]*)<', row))
    return rows


PRICED = {
    "price_per_accelerator_hour": "2.5",
    "energy_price_per_kwh": "0.2",
    "ttft_ms": "300",
    "tpot_ms": "50",
}


def test_compare_normalises_prices_and_counts_goodput_at_every_point(world, sample_events):
    (ax, _, _), (nb, _, _) = world["results"]
    url = "/leaderboard/buyer-model/compare/"
    ids = {"ids": f"{ax.public_id},{nb.public_id}"}
    plain = Client().get(url, ids)
    assert plain.status_code == 200
    html = plain.content.decode()
    assert "8 × AX GPU" in html and "2 × AX GPU" in html  # the count beside the type
    assert "Cost per million output tokens" not in html  # nothing is priced by the portal
    assert "Goodput tokens/s" not in html  # no target, no goodput

    response = Client().get(url, {**ids, **PRICED})
    assert response.status_code == 200
    html = response.content.decode()
    for publication, system, accelerators in world["results"]:
        nodes = node_count(publication.record.description)
        cells = _cells(html, publication.public_id)
        assert sorted(cells) == sorted(p["concurrency"] for p in publication.curve["points"])
        for point in publication.curve["points"]:
            got = cells[point["concurrency"]]
            tps = point["system_tps"]
            assert _number(got["per_accelerator"]) == pytest.approx(tps / accelerators, abs=0.05)
            assert _number(got["per_node"]) == pytest.approx(tps / nodes, abs=0.05)
            assert _number(got["per_kw_provisioned"]) == pytest.approx(point["system_tps_per_kw"], abs=0.05)
            traced = system == "Acme_AX-8000" and point["concurrency"] == 64
            if traced:
                assert _number(got["per_kw_measured"]) == pytest.approx(tps / 9.0, abs=0.05)
            else:
                assert got["per_kw_measured"] == "—"
            # energy at the measured power where a trace exists, else at the provisioned power
            power_kw = TRACE_W / 1000 if traced else tps / point["system_tps_per_kw"]
            hourly = 2.5 * accelerators + power_kw * 0.2
            assert _number(got["cost_per_hour"]) == pytest.approx(hourly, abs=0.005)
            assert _number(got["cost_per_million_tokens"]) == pytest.approx(
                hourly / (tps * 3600) * 1e6, rel=1e-3
            )
            # goodput per request from the raw events, priced per million good tokens
            want = reference_slo(sample_events[(system, point["concurrency"])], ttft_ms=300.0, tpot_ms=50.0)
            good_tps = want["tps"]["good"]
            assert _number(got["goodput_tps"]) == pytest.approx(good_tps, abs=0.05)
            assert _number(got["attainment"]) == pytest.approx(
                100 * want["counts"]["good"] / want["tracked"], abs=0.05
            )
            if good_tps:
                assert _number(got["cost_per_million_good_tokens"]) == pytest.approx(
                    hourly / (good_tps * 3600) * 1e6, rel=1e-3
                )
            else:
                assert got["cost_per_million_good_tokens"] == "—"


def test_the_inputs_stay_in_the_url_and_the_shared_link_gives_the_same_answer(world):
    (ax, _, _), (nb, _, _) = world["results"]
    url = f"/leaderboard/buyer-model/compare/?ids={ax.public_id}&ids={nb.public_id}&" + urlencode(PRICED)
    html = Client().get(url).content.decode()
    for name, value in PRICED.items():
        assert f'name="{name}" value="{value}"' in html  # the form shows what was asked
    assert f'name="ids" value="{ax.public_id},{nb.public_id}"' in html  # the form keeps the results
    share = unescape(re.search(r'<a href="([^"]+)" data-share-link>', html).group(1))
    assert share.startswith("?")
    shared = Client().get(f"/leaderboard/buyer-model/compare/{share.split('#')[0]}")
    assert shared.status_code == 200
    again = shared.content.decode()
    for publication, _, _ in world["results"]:
        assert _cells(again, publication.public_id) == _cells(html, publication.public_id)


@pytest.mark.parametrize(
    ("query", "label"),
    [
        ({"price_per_node_hour": "-3"}, "Price per node-hour: enter a number"),
        ({"price_per_accelerator_hour": "abc"}, "Price per accelerator-hour: enter a number"),
        ({"energy_price_per_kwh": "nan"}, "Energy price per kWh: enter a number"),
        ({"price_per_system_hour": "inf"}, "Price per system-hour: enter a number"),
        (
            {"price_per_accelerator_hour": "2", "price_per_node_hour": "9"},
            "Price per node-hour: give one hourly",
        ),
        ({"ttft_ms": "0"}, "TTFT per request ≤ (ms): enter a number of milliseconds above 0"),
        ({"tpot_ms": "-1"}, "TPOT per request ≤ (ms): enter a number"),
        ({"ttft_ms": "1" * 400}, "TTFT per request ≤ (ms): enter a number"),
    ],
)
def test_bad_prices_and_targets_are_named_by_their_labels(world, query, label):
    (ax, _, _), (nb, _, _) = world["results"]
    for url, extra in (
        ("/leaderboard/buyer-model/compare/", {"ids": f"{ax.public_id},{nb.public_id}"}),
        (f"/results/{ax.public_id}/", {}),
    ):
        response = Client().get(url, {**extra, **query})
        assert response.status_code == 400, url
        html = unescape(response.content.decode())
        assert label in html
        for name in query:
            assert f"{name}:" not in html  # the parameter is not what a buyer reads


def test_compare_shows_published_results_only(world):
    (ax, _, _), (nb, _, _) = world["results"]
    scheduled = world["scheduled"]
    response = Client().get(
        "/leaderboard/buyer-model/compare/", {"ids": f"{ax.public_id},{scheduled.public_id}", **PRICED}
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "No published result of this benchmark" in html and "Unreleased-Z9" not in html
    assert Client().get(f"/leaderboard/buyer-model/compare/?ids={ax.public_id}").status_code == 400
    retracted = world["older"]
    type(retracted).objects.filter(pk=retracted.pk).update(retracted_at=timezone.now(), retraction_reason="x")
    public_cache_bump()
    # a retracted result stays comparable, marked (its page stays for the record)
    page = Client().get(f"/leaderboard/buyer-model/compare/?ids={ax.public_id},{retracted.public_id}").content
    assert b"Retracted" in page


def test_the_board_and_the_slo_finder_give_the_count_beside_the_type_and_the_normalised_views(world):
    (ax, _, _), _ = world["results"]
    board = Client().get("/leaderboard/buyer-model/").content.decode()
    assert "8 × AX GPU" in board and "2 × AX GPU" in board
    peak = ax.headline["max_system_tps"]
    per_node = re.search(r'data-metric="peak_per_node">([^<]*) / node', board).group(1)
    assert _number(per_node) == pytest.approx(peak / node_count(ax.record.description), abs=0.5)
    measured = re.search(r'data-metric="best_measured_per_kw">([^<]*) / measured kW', board).group(1)
    assert _number(measured) == pytest.approx(peak / 9.0, abs=0.05)

    per_request = Client().get(
        "/leaderboard/slo/", {"benchmark": "buyer-model", "ttft_ms": 300, "tpot_ms": 50, "attainment": 50}
    )
    html = per_request.content.decode()
    assert per_request.status_code == 200 and "8 × AX GPU" in html and "2 × AX GPU" in html
    assert 'data-metric="goodput_tps_per_node"' in html
    rows = (
        Client()
        .get(
            "/api/v1/public/slo/",
            {"benchmark": "buyer-model", "ttft_ms": 300, "tpot_ms": 50, "attainment": 50},
        )
        .json()["results"]
    )
    assert {row["accelerator_label"] for row in rows} == {"8 × AX GPU", "2 × AX GPU"}
    percentile = (
        Client()
        .get(
            "/leaderboard/slo/",
            {"benchmark": "buyer-model", "ttft_p90_ms_max": 100000, "interactivity_min": 0},
        )
        .content.decode()
    )
    ax_row = re.search(rf'<tr data-public-id="{ax.public_id}">(.*?)</tr>', percentile, re.S).group(1)
    assert "8 × AX GPU" in ax_row
    per_accelerator = re.search(r'data-metric="system_tps_per_accelerator">([^<]*) / accel', ax_row).group(1)
    assert _number(per_accelerator) == pytest.approx(peak / 8, abs=0.05)  # its best point is the peak
    assert _number(re.search(r'data-metric="measured_tps_per_kw">([^<]*) measured', ax_row).group(1)) == (
        pytest.approx(peak / 9.0, abs=0.05)
    )


# --- Procurement phases ------------------------------------------------------------------------------------


def _evidence(publication, *, ttft_max, tpot_max, tps_min):
    """The verified point with the highest system_tps meeting the latency, and whether it reaches the volume."""
    meeting = [
        p
        for p in publication.curve["points"]
        if p["basis"] == "recomputed"
        and p["ttft_p90_ms"] <= ttft_max
        and 1000.0 / p["tps_per_user"] <= tpot_max
    ]
    if not meeting:
        return None
    best = max(meeting, key=lambda p: p["system_tps"])
    return best, best["system_tps"] >= tps_min


PHASES = {
    "model_1": "buyer-model",
    "ttft_p90_ms_max_1": "200",
    "tpot_ms_max_1": "12",
    "delivery_system_tps_min_1": "1000",
    "expansion_ttft_p90_ms_max_1": "140",  # tighter latency later
    "expansion_system_tps_min_1": "3000",  # and a larger volume
}


def test_procurement_gives_each_systems_evidence_per_phase(world):
    body = Client().get("/api/v1/public/procurement/", PHASES).json()
    [section] = body["models"]
    assert section["phases"]["delivery"] == {
        "ttft_p90_ms_max": 200.0,
        "tpot_ms_max": 12.0,
        "interactivity_min": None,
        "system_tps_min": 1000.0,
    }
    # the expansion's parts left out are the delivery's
    assert section["phases"]["expansion"]["tpot_ms_max"] == 12.0
    assert section["phases"]["expansion"]["ttft_p90_ms_max"] == 140.0
    want = []
    for publication, _, _ in world["results"]:  # the newest result per system: the older AX-8000 is not a row
        delivery = _evidence(publication, ttft_max=200, tpot_max=12, tps_min=1000)
        if delivery is None or not delivery[1]:
            continue
        expansion = _evidence(publication, ttft_max=140, tpot_max=12, tps_min=3000)
        want.append((publication, delivery[0], expansion))
    want.sort(key=lambda row: (not (row[2] and row[2][1]), -row[1]["system_tps"]))
    assert [row["public_id"] for row in section["systems"]] == [p.public_id for p, _, _ in want]
    assert len(want) == 2 and section["systems_judged"] == 2 and section["systems_meeting_delivery"] == 2
    assert section["systems_meeting_both"] == sum(1 for _, _, e in want if e and e[1]) == 1
    for row, (publication, delivery, expansion) in zip(section["systems"], want, strict=True):
        url = f"/results/{publication.public_id}/"
        assert row["delivery"]["point"] == delivery["point"] and row["delivery"]["meets"] is True
        assert row["delivery"]["system_tps"] == delivery["system_tps"]
        assert row["delivery"]["ttft_p90_ms"] == delivery["ttft_p90_ms"]
        assert row["delivery"]["point_url"] == f"{url}#point-r{delivery['concurrency']}"
        assert row["point"] == delivery["point"] and row["meets_delivery"] is True  # as before the phases
        if expansion is None:
            assert row["expansion"] is None and row["meets_expansion"] is False
        else:
            assert row["expansion"]["point"] == expansion[0]["point"]
            assert row["expansion"]["system_tps"] == expansion[0]["system_tps"]
            assert row["expansion"]["meets"] is expansion[1] and row["meets_expansion"] is expansion[1]
        assert row["accelerator_label"] == f"{publication.record.accelerator_count} × AX GPU"

    page = Client().get("/leaderboard/procurement/", PHASES)
    assert page.status_code == 200
    html = page.content.decode()
    assert "Unreleased-Z9" not in html
    assert "2 of 2 systems</strong> meet the delivery phase, 1 of them the expansion too" in html
    for publication, delivery, expansion in want:
        row = re.search(rf'<tr data-public-id="{publication.public_id}">(.*?)</tr>', html, re.S).group(1)
        assert f'href="/results/{publication.public_id}/#point-r{delivery["concurrency"]}"' in row
        cells = dict(re.findall(r'data-phase="(\w+)" data-meets="(\w+)"', row))
        assert cells["delivery"] == "yes"
        assert cells["expansion"] == ("none" if expansion is None else "yes" if expansion[1] else "no")
        assert f"{delivery['system_tps']:,.1f}".replace(",", "") in row.replace(",", "")

    # the point links land on the result page's point row
    result = Client().get(f"/results/{want[0][0].public_id}/").content.decode()
    assert f'id="point-r{want[0][1]["concurrency"]}"' in result

    table = list(csv.DictReader(io.StringIO(Client().get("/api/v1/public/procurement/", {**PHASES, "format": "csv"}).content.decode())))  # fmt: skip
    assert [r["public_id"] for r in table] == [p.public_id for p, _, _ in want]
    assert table[0]["required_expansion_ttft_p90_ms_max"] == "140.0"
    assert table[0]["delivery_point"] == want[0][1]["point"] and "expansion_meets" in table[0]


def test_procurement_inputs_round_trip_and_bad_ones_are_named_by_their_labels(world):
    html = Client().get("/leaderboard/procurement/", PHASES).content.decode()
    for name, value in PHASES.items():
        if name != "model_1":
            assert f'name="{name}" value="{value}"' in html
    assert '<option value="buyer-model" selected>' in html
    bad = {**PHASES, "expansion_system_tps_min_1": "lots", "tpot_ms_max_1": "0", "model_2": "buyer-model",
           "ttft_p90_ms_max_2": "-1"}  # fmt: skip
    response = Client().get("/leaderboard/procurement/", bad)
    assert response.status_code == 400
    text = unescape(response.content.decode())
    assert "Model 1 · Expansion · Throughput ≥ (tokens/s): enter a number above 0, not 'lots'." in text
    assert "Model 1 · Delivery · TPOT P90 ≤ (ms): enter a number above 0" in text
    assert "Model 2 · Delivery · TTFT P90 ≤ (ms)" in text
    assert "expansion_system_tps_min_1:" not in text and "tpot_ms_max_1:" not in text
    api = Client().get("/api/v1/public/procurement/", bad)
    assert api.status_code == 400 and api.json()["code"] == "invalid"
    assert "expansion_system_tps_min_1" in api.json()["detail"]  # the API names its parameters
    huge = Client().get("/leaderboard/procurement/", {"model_1": "x" * 5000, "ttft_p90_ms_max_1": "1e400"})
    assert huge.status_code == 400
