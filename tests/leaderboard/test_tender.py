"""The tender desk (docs/tender-desk.md): the sizing API equals a computation written here from the public points and
results APIs and DESIGN.md's definitions ("Tender desk"), for the published sample results (the demo's AX-8000 and
NB-2 runs, checked by the real pipeline), in both SLO modes and both phases, every figure of every system; a system
no measured point lets meet the SLO comes back `meets: false` with no sizing; only published, fully recomputed
results, newest per system, are sized; bad input is a 400 naming the parameter; the page shows the same answer."""

from __future__ import annotations

import math
import tarfile

import pytest
from django.test import Client

from leaderboard.cache import public_cache_bump
from submissions.models import PointMetric
from tests.checker.test_goodput import reference_slo
from tests.factories import BenchmarkFactory
from tests.leaderboard.goodput_support import RUNS, publish_sample_run
from tests.leaderboard.support import publish

pytestmark = pytest.mark.django_db

TRACE_W = (
    9000.0  # a power trace on AX-8000's r64 (W): that point's power is measured, every other provisioned
)


@pytest.fixture(autouse=True)
def _fresh_public_cache(storage_dir):
    public_cache_bump()


@pytest.fixture(scope="module")
def raw_events(tmp_path_factory) -> dict[tuple[str, int], object]:
    root = tmp_path_factory.mktemp("raw")
    out = {}
    for system, archives in RUNS.items():
        for archive in archives:
            concurrency = int(archive.name.split("_c")[1].split(".")[0])
            with tarfile.open(archive) as tar:
                tar.extractall(root / archive.name, filter="data")
            out[(system, concurrency)] = root / archive.name / f"c{concurrency}" / "events.jsonl"
    return out


@pytest.fixture
def world():
    benchmark = BenchmarkFactory(model_id="tender-model")
    ax = publish_sample_run(benchmark=benchmark, system_name="Acme_AX-8000", accelerators=8)
    nb = publish_sample_run(benchmark=benchmark, system_name="Nimbus_NB-2", accelerators=2)
    older = publish(
        benchmark=benchmark, system=ax.submission.system, organisation=ax.submission.organisation, days_ago=30
    )
    claimed = publish(benchmark=benchmark, claimed=True)
    r64 = next(p for p in ax.curve["points"] if p["concurrency"] == 64)
    metric = PointMetric.objects.get(check_run=ax.check_run, concurrency=64)
    metric.extra = {
        **(metric.extra or {}),
        "power": {"measured": {"avg_power_w": TRACE_W, "measured_tps_per_kw": r64["system_tps"] / 9.0}},
    }
    metric.save(update_fields=["extra"])
    public_cache_bump()
    return {"ax": ax, "nb": nb, "older": older, "claimed": claimed}


def _public(path: str, **query) -> dict:
    response = Client().get(path, query)
    assert response.status_code == 200, response.content
    return response.json()


def _evidence_from_public_api(world) -> dict[str, dict]:
    """Per sized result (the newest fully recomputed per system), what the public API says: its points (with their
    power and its source), its accelerator and node counts."""
    points = _public("/api/v1/public/points/", benchmark="tender-model", limit=1000)["results"]
    out = {}
    for key in ("ax", "nb"):
        public_id = world[key].public_id
        detail = _public(f"/api/v1/public/results/{public_id}/")
        assert detail["verification"] == "fully recomputed"
        nodes = sum(node["number_of_nodes"] for node in detail["system_description"]["node_types"])
        out[public_id] = {
            "system": detail["system"],
            "accelerators": detail["accelerators"],
            "nodes": nodes,
            "points": [p for p in points if p["public_id"] == public_id],
        }
    return out


def _expected(evidence, *, users, headroom, pue, price_h, price_kwh, meets) -> dict[tuple[str, str], dict]:
    """DESIGN.md's definitions, written out: (phase, result) -> the row's figures."""
    rows = {}
    for phase, phase_users in users.items():
        for public_id, result in evidence.items():
            meeting = [p for p in result["points"] if meets(result["system"], p)]
            if not meeting:
                rows[(phase, public_id)] = {"meets": False}
                continue
            point = max(meeting, key=lambda p: (p["concurrency"], p["system_tps"]))
            c, tps = point["concurrency"], point["system_tps"]
            measured = result["system"] == "Acme_AX-8000" and c == 64
            power = TRACE_W / 1000 if measured else tps / point["system_tps_per_kw"]
            # the points API says the same power and where it comes from
            assert point["power_source"] == ("measured" if measured else "provisioned")
            assert point["system_power_kw"] == pytest.approx(power, rel=1e-12)
            replicas = math.ceil(round(phase_users * (1 + headroom) / c, 9))
            accelerators = replicas * result["accelerators"]
            facility = replicas * power * pue
            energy = facility * 8760 / 1000
            rows[(phase, public_id)] = {
                "meets": True,
                "point_concurrency": c,
                "system_tps": tps,
                "replicas": replicas,
                "accelerators": accelerators,
                "nodes": replicas * result["nodes"],
                "power_source": "measured" if measured else "provisioned",
                "system_power_kw": power,
                "it_power_kw": replicas * power,
                "facility_power_kw": facility,
                "facility_power_mw": facility / 1000,
                "energy_mwh_per_year": energy,
                "cost_per_year": accelerators * price_h * 8760 + energy * 1000 * price_kwh,
                "cost_per_million_tokens": result["accelerators"] * price_h / (tps * 3600) * 1e6
                + power * pue * price_kwh / (tps * 3600) * 1e6,
                "joules_per_token": power * 1000 / tps,
                "point_url": f"/results/{public_id}/#point-r{int(c)}",
            }
    return rows


def _check(answer: dict, expected: dict) -> None:
    got = {(row["phase"], row["result"]): row for row in answer["rows"]}
    assert set(got) == set(expected)  # every system of each phase, nothing else (no older, no claimed result)
    for key, want in expected.items():
        row = got[key]
        assert row["meets"] is want["meets"], key
        if not want["meets"]:
            assert "replicas" not in row and "point_concurrency" not in row  # never extrapolated
            continue
        for name, value in want.items():
            if isinstance(value, float):
                assert row[name] == pytest.approx(value, rel=1e-9), (key, name)
            else:
                assert row[name] == value, (key, name)


PRICES = {"pue": 1.25, "headroom": 0.1, "price_h": 2.5, "price_kwh": 0.2}


def _query(**slo) -> dict:
    return {
        "benchmark": "tender-model",
        "users": 5000,
        "users_expansion": 12000,
        "pue": 1.25,
        "headroom": 0.1,
        "price_per_accelerator_hour": 2.5,
        "price_per_kwh": 0.2,
        **slo,
    }


@pytest.mark.parametrize("ttft_max, interactivity_min", [(200, 90), (135, 95), (200, 101)])
def test_sizing_in_percentile_mode_equals_the_definitions_from_the_public_points(
    world, ttft_max, interactivity_min
):
    answer = _public(
        "/api/v1/public/sizing/", **_query(ttft_p90_ms_max=ttft_max, interactivity_min=interactivity_min)
    )
    assert answer["mode"] == "percentile"
    evidence = _evidence_from_public_api(world)

    def meets(system, point):
        return point["ttft_p90_ms"] <= ttft_max and point["tps_per_user"] >= interactivity_min

    expected = _expected(evidence, users={"delivery": 5000, "expansion": 12000}, meets=meets, **PRICES)
    _check(answer, expected)
    # the cases the targets were chosen for: AX-8000 sized at r64 (measured power), r8, and not at all
    ax_row = next(r for r in answer["rows"] if r["result"] == world["ax"].public_id)
    assert (
        ax_row.get("point_concurrency")
        == {(200, 90): 64, (135, 95): 8, (200, 101): None}[(ttft_max, interactivity_min)]
    )


def test_sizing_per_request_equals_the_definitions_from_the_raw_events(world, raw_events):
    answer = _public("/api/v1/public/sizing/", **_query(ttft_ms=300, tpot_ms=50, attainment=90))
    assert answer["mode"] == "per_request"
    evidence = _evidence_from_public_api(world)

    def meets(system, point):
        counted = reference_slo(raw_events[(system, int(point["concurrency"]))], ttft_ms=300.0, tpot_ms=50.0)
        return counted["counts"]["good"] / counted["tracked"] >= 0.9

    expected = _expected(evidence, users={"delivery": 5000, "expansion": 12000}, meets=meets, **PRICES)
    _check(answer, expected)
    assert any(want["meets"] for want in expected.values())


def test_sizing_without_prices_or_expansion_leaves_cost_out_and_sizes_one_phase(world):
    answer = _public(
        "/api/v1/public/sizing/",
        benchmark="tender-model",
        users=64,
        ttft_p90_ms_max=200,
        interactivity_min=90,
    )
    assert {row["phase"] for row in answer["rows"]} == {"delivery"}
    ax_row = next(r for r in answer["rows"] if r["result"] == world["ax"].public_id)
    assert (
        ax_row["replicas"] == 1
        and ax_row["cost_per_year"] is None
        and ax_row["cost_per_million_tokens"] is None
    )
    assert ax_row["facility_power_kw"] == pytest.approx(9.0 * 1.3)  # the default PUE


@pytest.mark.parametrize(
    "query, parameter",
    [
        ({"users": "many"}, "users"),
        ({"users": 0}, "users"),
        ({"pue": 0.5}, "pue"),
        ({"headroom": -1}, "headroom"),
        ({"ttft_p90_ms_max": None}, "ttft_p90_ms_max"),
        ({"price_per_kwh": "nan"}, "price_per_kwh"),
    ],
)
def test_bad_sizing_input_is_a_400_naming_the_parameter(world, query, parameter):
    base = {"benchmark": "tender-model", "users": 100, "ttft_p90_ms_max": 200, "interactivity_min": 90}
    params = {k: v for k, v in {**base, **query}.items() if v is not None}
    response = Client().get("/api/v1/public/sizing/", params)
    assert response.status_code == 400
    assert parameter in response.content.decode()
    page = Client().get("/leaderboard/sizing/", params)
    assert page.status_code == 400


def test_the_sizing_page_shows_each_figure_linked_to_its_point(world):
    query = _query(ttft_p90_ms_max=200, interactivity_min=101)
    response = Client().get("/leaderboard/sizing/", query)
    assert response.status_code == 200
    html = response.content.decode()
    nb = world["nb"].public_id
    assert f'href="/results/{nb}/#point-r4"' in html  # NB-2's sizing point, its evidence
    assert "cannot meet" in html  # AX-8000: no measured point meets the SLO
    assert world["claimed"].public_id not in html and world["older"].public_id not in html
    # the inputs stay in the URL: the JSON and CSV links carry them
    assert "users_expansion=12000" in html and "price_per_kwh=0.2" in html
