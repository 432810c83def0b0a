"""The tender desk (docs/tender-desk.md): the sizing API equals a computation written here from the public points and
results APIs and DESIGN.md's definitions ("Tender desk"), for the published sample results (the demo's AX-8000 and
NB-2 runs, checked by the real pipeline), in both SLO modes and both phases, every figure of every system; a system
no measured point lets meet the SLO comes back `meets: false` with no sizing; only published, fully recomputed
results, newest per system, are sized; bad input is a 400 naming the parameter; the page shows the same answer."""

from __future__ import annotations

import math

import pytest
from django.test import Client

from leaderboard.board.cache import public_cache_bump
from submissions.models import PointMetric
from tests.checker.test_goodput import reference_slo
from tests.factories import BenchmarkFactory
from tests.leaderboard.goodput_support import publish_sample_run
from tests.leaderboard.support import publish

pytestmark = pytest.mark.django_db

TRACE_W = (
    9000.0  # a power trace on AX-8000's r64 (W): that point's power is measured, every other provisioned
)


@pytest.fixture(autouse=True)
def _fresh_public_cache(storage_dir):
    public_cache_bump()


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
    got = {(row["phase"], row["result"]): row for row in answer["results"]}
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
    ax_row = next(r for r in answer["results"] if r["result"] == world["ax"].public_id)
    assert (
        ax_row.get("point_concurrency")
        == {(200, 90): 64, (135, 95): 8, (200, 101): None}[(ttft_max, interactivity_min)]
    )


def test_sizing_per_request_equals_the_definitions_from_the_raw_events(world, sample_events):
    answer = _public("/api/v1/public/sizing/", **_query(ttft_ms=300, tpot_ms=50, attainment=90))
    assert answer["mode"] == "per_request"
    evidence = _evidence_from_public_api(world)

    def meets(system, point):
        counted = reference_slo(
            sample_events[(system, int(point["concurrency"]))], ttft_ms=300.0, tpot_ms=50.0
        )
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
    assert {row["phase"] for row in answer["results"]} == {"delivery"}
    ax_row = next(r for r in answer["results"] if r["result"] == world["ax"].public_id)
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


# --- The claims check ------------------------------------------------------------------------------------------


@pytest.fixture
def claims_world():
    """AX-8000 and NB-2 as comparable systems (both 8 × AX GPU), a power trace on AX-8000's r64, an unrelated
    2-accelerator system that is never comparable, and a claimed result that is never evidence."""
    benchmark = BenchmarkFactory(model_id="claims-model")
    ax = publish_sample_run(benchmark=benchmark, system_name="Acme_AX-8000", accelerators=8)
    nb = publish_sample_run(benchmark=benchmark, system_name="Nimbus_NB-2", accelerators=8)
    claimed = publish(benchmark=benchmark, claimed=True, scale=10.0)
    metric = PointMetric.objects.get(check_run=ax.check_run, concurrency=64)
    metric.extra = {**(metric.extra or {}), "power": {"measured": {"avg_power_w": TRACE_W}}}
    metric.save(update_fields=["extra"])
    public_cache_bump()
    return {"ax": ax, "nb": nb, "claimed": claimed}


FIGURES = {
    "system_tps": True,
    "interactivity": True,
    "ttft_p90_ms": False,
    "tpot_p90_ms": False,
    "power_kw": False,
}


def _reference_claims(world, query: dict) -> dict[str, tuple[str, str | None, float | None]]:
    """DESIGN.md's claims check written out from the public APIs: figure -> (verdict, evidence result, value)."""
    points = _public("/api/v1/public/points/", benchmark="claims-model", limit=1000)["results"]
    systems = {}
    for key in ("ax", "nb"):
        detail = _public(f"/api/v1/public/results/{world[key].public_id}/")
        node = detail["system_description"]["node_types"][0]["accelerator_info"][0]
        systems[detail["system"]] = {
            "public_id": detail["public_id"],
            "kind": (node["accelerator_model_name"], detail["accelerators"]),
            "points": [
                p for p in points if p["public_id"] == detail["public_id"] and p["basis"] == "recomputed"
            ],
        }

    def evidence(system):
        candidates = systems[system]["points"]
        if "concurrency" in query:
            return next((p for p in candidates if p["concurrency"] == query["concurrency"]), None)
        below = [p for p in candidates if p["tps_per_user"] <= query["at_interactivity"]]
        return max(below, key=lambda p: p["tps_per_user"]) if below else None

    def value(point, figure):
        return {
            "system_tps": point["system_tps"],
            "interactivity": point["tps_per_user"],
            "ttft_p90_ms": point["ttft_p90_ms"],
            "tpot_p90_ms": 1000 / point["tps_per_user"],
            "power_kw": point["system_power_kw"],
        }[figure]

    def ok(claimed, e, higher, tolerance):
        return claimed <= e * (1 + tolerance) if higher else claimed >= e * (1 - tolerance)

    own = query["system"]
    others = [
        s for s in systems if s != own and own in systems and systems[s]["kind"] == systems[own]["kind"]
    ]
    out = {}
    for figure, higher in FIGURES.items():
        if figure not in query:
            continue
        claimed = query[figure]
        point = evidence(own) if own in systems else None
        if point is not None and ok(claimed, value(point, figure), higher, 0.05):
            out[figure] = ("supported", systems[own]["public_id"], value(point, figure))
            continue
        verdict = ("not supported", systems[own]["public_id"], value(point, figure)) if point else None
        for other in others:
            other_point = evidence(other)
            if other_point is None:
                continue
            if ok(claimed, value(other_point, figure), higher, 0.10):
                verdict = (
                    "supported by a comparable system",
                    systems[other]["public_id"],
                    value(other_point, figure),
                )
                break
            verdict = verdict or ("not supported", None, None)
        out[figure] = verdict or ("no evidence", None, None)
    return out


CLAIMS = [
    # AX-8000 at r16 as measured (1510.3 tokens/s, TTFT P90 136.2 ms): supported
    {
        "system": "Acme_AX-8000",
        "concurrency": 16,
        "system_tps": 1500,
        "ttft_p90_ms": 136,
        "interactivity": 99,
    },
    # at r8 AX-8000 measured 737.6 tokens/s, NB-2 772.7: 800 is beyond 5 % of its own, within 10 % of NB-2's
    {"system": "Acme_AX-8000", "concurrency": 8, "system_tps": 800, "ttft_p90_ms": 125, "tpot_p90_ms": 9.9},
    # r64's measured power is 9 kW: claiming 8 kW is not supported; r64 of NB-2 has no trace
    {"system": "Acme_AX-8000", "concurrency": 64, "power_kw": 8.0, "system_tps": 7000},
    # no r48 anywhere: no evidence
    {"system": "Acme_AX-8000", "concurrency": 48, "system_tps": 1000},
    # at an interactivity level instead of a concurrency
    {"system": "Nimbus_NB-2", "at_interactivity": 100, "system_tps": 1400, "ttft_p90_ms": 160},
    # a system with no published fully recomputed result
    {"system": "Unknown-Z", "concurrency": 8, "system_tps": 10},
]


@pytest.mark.parametrize("claim", CLAIMS)
def test_claims_are_judged_as_the_definitions_say_from_the_public_points(claims_world, claim):
    answer = _public("/api/v1/public/claims/", benchmark="claims-model", **claim)
    expected = _reference_claims(claims_world, claim)
    got = {row["figure"]: row for row in answer["figures"]}
    assert set(got) == set(expected)
    for figure, (verdict, result, value) in expected.items():
        row = got[figure]
        assert row["verdict"] == verdict, (figure, row)
        if result is None:
            assert row["evidence"] is None or verdict == "not supported"
        else:
            assert row["evidence"]["result"] == result and row["evidence"]["value"] == pytest.approx(value)
            assert row["evidence"]["point_url"].startswith(f"/results/{result}/#point-r")
            assert row["arithmetic"]
    assert claims_world["claimed"].public_id not in str(answer)


def test_the_claims_cases_cover_every_verdict(claims_world):
    seen = set()
    for claim in CLAIMS:
        answer = _public("/api/v1/public/claims/", benchmark="claims-model", **claim)
        seen.update(row["verdict"] for row in answer["figures"])
    assert seen == {"supported", "supported by a comparable system", "not supported", "no evidence"}


def test_the_claims_page_shows_each_verdict_with_its_arithmetic_and_evidence(claims_world):
    response = Client().get("/leaderboard/claims/", {"benchmark": "claims-model", **CLAIMS[1]})
    assert response.status_code == 200
    html = response.content.decode()
    assert 'data-verdict="supported by a comparable system"' in html
    assert f'href="/results/{claims_world["nb"].public_id}/#point-r8"' in html
    assert "800 ≤ " in html  # the arithmetic
    bad = Client().get("/leaderboard/claims/", {"benchmark": "claims-model", "system": "Acme_AX-8000"})
    assert bad.status_code == 400 and "At concurrency" in bad.content.decode()
    api = Client().get(
        "/api/v1/public/claims/", {"benchmark": "claims-model", "system": "x", "concurrency": "lots"}
    )
    assert api.status_code == 400 and "concurrency" in api.content.decode()


# --- Cost and energy in the SLO finder's percentile mode and the procurement report ---------------------------


def test_the_slo_finder_percentile_mode_prices_its_rows_and_gives_energy_per_token(world):
    answer = _public(
        "/api/v1/public/slo/",
        benchmark="tender-model",
        ttft_p90_ms_max=200,
        interactivity_min=90,
        price_per_accelerator_hour=2.5,
        energy_price_per_kwh=0.2,
    )
    evidence = _evidence_from_public_api(world)
    rows = {row["public_id"]: row for row in answer["results"]}
    assert set(evidence) <= set(rows)  # the claimed result follows unranked, as the finder lists it
    for public_id, result in evidence.items():
        row = rows[public_id]
        point = next(p for p in result["points"] if p["concurrency"] == row["concurrency"])
        provisioned = point["system_tps"] / point["system_tps_per_kw"]
        # priced as the per-request mode prices (energy at the provisioned power), no longer ignored
        hourly = 2.5 * result["accelerators"] + provisioned * 0.2
        assert row["cost_per_million_tokens"] == pytest.approx(hourly / (point["system_tps"] * 3600) * 1e6)
        measured = result["system"] == "Acme_AX-8000" and point["concurrency"] == 64
        power = TRACE_W / 1000 if measured else provisioned
        assert row["power_source"] == ("measured" if measured else "provisioned")
        assert row["joules_per_token"] == pytest.approx(power * 1000 / point["system_tps"])
    page = Client().get(
        "/leaderboard/slo/",
        {
            "benchmark": "tender-model",
            "ttft_p90_ms_max": 200,
            "interactivity_min": 90,
            "price_per_accelerator_hour": 2.5,
        },
    )
    assert page.status_code == 200
    html = page.content.decode()
    assert "Cost per million output tokens" in html and 'data-metric="joules_per_token"' in html


def test_the_procurement_report_gives_energy_and_cost_of_each_phase_evidence(world):
    query = {
        "model_1": "tender-model",
        "ttft_p90_ms_max_1": 200,
        "interactivity_min_1": 90,
        "price_per_accelerator_hour": 2.5,
        "price_per_kwh": 0.2,
        "pue": 1.25,
    }
    report = _public("/api/v1/public/procurement/", **query)["models"][0]
    evidence = _evidence_from_public_api(world)
    assert {row["public_id"] for row in report["systems"]} == set(evidence)
    for row in report["systems"]:
        result = evidence[row["public_id"]]
        point = next(p for p in result["points"] if p["concurrency"] == row["delivery"]["concurrency"])
        tps = point["system_tps"]
        measured = result["system"] == "Acme_AX-8000" and point["concurrency"] == 64
        power = TRACE_W / 1000 if measured else tps / point["system_tps_per_kw"]
        got = row["delivery"]
        assert got["power_source"] == ("measured" if measured else "provisioned")
        assert got["joules_per_token"] == pytest.approx(power * 1000 / tps)
        assert got["cost_per_million_tokens"] == pytest.approx(
            result["accelerators"] * 2.5 / (tps * 3600) * 1e6 + power * 1.25 * 0.2 / (tps * 3600) * 1e6
        )
    page = Client().get("/leaderboard/procurement/", query)
    assert page.status_code == 200 and 'data-metric="cost_per_million_tokens"' in page.content.decode()
    bad = Client().get("/leaderboard/procurement/", {**query, "pue": "0.5"})
    assert bad.status_code == 400 and "PUE: enter a number from 1 to 5" in bad.content.decode()
    assert Client().get("/api/v1/public/procurement/", {**query, "pue": "x"}).status_code == 400


# --- Tender scoring --------------------------------------------------------------------------------------------

TENDER = {
    "model_1": "tender-model",
    "ttft_p90_ms_max_1": 200,
    "interactivity_min_1": 90,
    "delivery_system_tps_min_1": 1000,
    "expansion_system_tps_min_1": 3000,
    "price_per_accelerator_hour": 2.5,
    "price_per_kwh": 0.2,
    "criterion_1": "system_tps",
    "weight_1": 40,
    "criterion_2": "cost_per_million_tokens",
    "weight_2": 40,
    "criterion_3": "joules_per_token",
    "weight_3": 15,
    "criterion_4": "system_tps_per_accelerator",
    "weight_4": 5,
    "direction_4": "higher",
}


def test_the_score_sheet_equals_the_formula_from_the_public_points(world):
    answer = _public("/api/v1/public/tender-score/", **TENDER)
    evidence = _evidence_from_public_api(world)
    minimum = {"delivery": 1000, "expansion": 3000}
    for sheet in answer["sheets"]:
        phase = sheet["phase"]
        values = {}
        for public_id, result in evidence.items():
            meeting = [p for p in result["points"] if p["ttft_p90_ms"] <= 200 and p["tps_per_user"] >= 90]
            point = max(meeting, key=lambda p: p["system_tps"])
            if point["system_tps"] < minimum[phase]:
                continue  # not eligible: the phase's throughput is not met by its evidence
            tps, power = point["system_tps"], point["system_power_kw"]
            values[public_id] = {
                "system_tps": tps,
                "cost_per_million_tokens": result["accelerators"] * 2.5 / (tps * 3600) * 1e6
                + power * 1.3 * 0.2 / (tps * 3600) * 1e6,
                "joules_per_token": power * 1000 / tps,
                "system_tps_per_accelerator": tps / result["accelerators"],
                "concurrency": point["concurrency"],
            }
        weights = {
            "system_tps": 40,
            "cost_per_million_tokens": 40,
            "joules_per_token": 15,
            "system_tps_per_accelerator": 5,
        }
        lower = {"cost_per_million_tokens", "joules_per_token"}
        best = {name: (min if name in lower else max)(v[name] for v in values.values()) for name in weights}
        totals = {}
        for public_id, v in values.items():
            totals[public_id] = sum(
                weights[n] * (best[n] / v[n] if n in lower else v[n] / best[n]) for n in weights
            )
        got = {entry["public_id"]: entry for entry in sheet["systems"]}
        assert set(got) == set(values), phase
        for public_id, total in totals.items():
            entry = got[public_id]
            assert entry["total"] == pytest.approx(total, rel=1e-12)
            assert entry["concurrency"] == values[public_id]["concurrency"]
            assert entry["evidence_pack_url"] == f"/results/{public_id}/revisions/1/evidence-pack/"
            for score in entry["scores"]:
                assert score["value"] == pytest.approx(values[public_id][score["criterion"]], rel=1e-12)
                assert score["best"] == pytest.approx(best[score["criterion"]], rel=1e-12)
                assert score["arithmetic"].startswith(f"{weights[score['criterion']]:g} × ")
        assert [e["public_id"] for e in sheet["systems"]] == sorted(totals, key=lambda k: -totals[k])
    assert [s["phase"] for s in answer["sheets"]] == ["delivery", "expansion"]
    assert len(answer["sheets"][1]["systems"]) == 1  # only AX-8000's evidence reaches 3,000 tokens/s
    csv_text = Client().get("/api/v1/public/tender-score/", {**TENDER, "format": "csv"}).content.decode()
    assert csv_text.splitlines()[0].startswith("phase,rank,system") and "evidence-pack" in csv_text
    page = Client().get("/leaderboard/tender/", TENDER)
    assert page.status_code == 200 and "data-evidence-pack" in page.content.decode()


@pytest.mark.parametrize(
    "change, parameter",
    [
        ({"criterion_2": "beauty"}, "criterion_2"),
        ({"weight_1": "-3"}, "weight_1"),
        ({"direction_4": "sideways"}, "direction_4"),
        ({"pue": "9"}, "pue"),
    ],
)
def test_a_bad_tender_is_a_400_naming_the_field(world, change, parameter):
    response = Client().get("/api/v1/public/tender-score/", {**TENDER, **change})
    assert response.status_code == 400 and parameter in response.content.decode()
    assert Client().get("/leaderboard/tender/", {**TENDER, **change}).status_code == 400


# --- Throughput at fixed interactivity levels ------------------------------------------------------------------


def _steps_at(points, level):
    reaching = [p["system_tps"] for p in points if p["tps_per_user"] >= level]
    return max(reaching) if reaching else None


@pytest.mark.parametrize("per", ["system", "accelerator"])
def test_throughput_at_levels_reads_the_step_function_from_the_public_points(world, per):
    levels = [20.0, 95.0, 100.5, 120.0]
    answer = _public(
        "/api/v1/public/levels/",
        benchmark="tender-model",
        levels="100.5, 20,95,120",
        baseline=world["nb"].public_id,
        per=per,
    )
    assert answer["levels"] == levels
    evidence = _evidence_from_public_api(world)
    # grouped by accelerator count: NB-2 (2) before AX-8000 (8), never one table
    assert [g["accelerators"] for g in answer["groups"]] == [2, 8]
    rows = {row["result"]: row for group in answer["groups"] for row in group["rows"]}
    assert set(rows) == set(evidence)
    expected = {}
    for public_id, result in evidence.items():
        divisor = result["accelerators"] if per == "accelerator" else 1
        points = result["points"]
        at = [_steps_at(points, level) for level in levels]
        xs = sorted({p["tps_per_user"] for p in points})
        area = sum((x - (xs[i - 1] if i else 0.0)) * _steps_at(points, x) for i, x in enumerate(xs))
        expected[public_id] = ([None if v is None else v / divisor for v in at], area / divisor)
    base_at, base_area = expected[world["nb"].public_id]
    for public_id, (at, area) in expected.items():
        row = rows[public_id]
        assert row["at_levels"] == pytest.approx(at)
        assert row["area"] == pytest.approx(area, rel=1e-12)
        for got, value, base in zip(row["vs_baseline_pct"], at, base_at, strict=True):
            if value is None or base is None:
                assert got is None
            else:
                assert got == pytest.approx(100 * (value - base) / base)
        assert row["area_vs_baseline_pct"] == pytest.approx(100 * (area - base_area) / base_area)
    # 120 tokens/s/user is past both curves: not reached, never extrapolated
    assert all(row["at_levels"][-1] is None for row in rows.values())
    page = Client().get("/leaderboard/levels/", {"benchmark": "tender-model", "levels": "20,95", "per": per})
    assert page.status_code == 200 and "not reached" not in page.content.decode()
    bad = Client().get("/api/v1/public/levels/", {"benchmark": "tender-model", "levels": "fast"})
    assert bad.status_code == 400 and "levels" in bad.content.decode()


def test_the_sizing_pages_walk_every_row_in_the_order_the_csv_gives(world):
    """The API answers a page of rows (10,000 systems x 2 phases at the board's size); walking the pages gives every
    row of the CSV, in its order, and says how many meet the SLO."""
    query = _query(ttft_p90_ms_max=200, interactivity_min=90)
    csv_rows = (
        Client().get("/api/v1/public/sizing/", {**query, "format": "csv"}).content.decode().splitlines()
    )
    walked, url, params = [], "/api/v1/public/sizing/", {**query, "limit": 1}
    while url:
        answer = _public(url, **params)
        walked.extend(answer["results"])
        assert answer["count"] == len(csv_rows) - 1 == 4  # two systems, two phases
        url, params = answer["next"], {}
    assert [(row["phase"], row["result"]) for row in walked] == [
        tuple(line.split(",")[i] for i in (0, 4)) for line in csv_rows[1:]
    ]
    assert answer["meeting"] == {"delivery": 2, "expansion": 2}


def _sized_eagerly(results, ask, meets, measured):
    """The sizing as it was defined before its rows were built when read: every row built, then sorted."""
    from leaderboard.board.tender import size_system, sizing_point

    chosen = {r["public_id"]: sizing_point(r["points"], lambda p, r=r: meets(r, p)) for r in results}
    rows = []
    for phase, users in ask.phases():
        sized = [
            size_system(
                r,
                chosen[r["public_id"]],
                phase=phase,
                users=users,
                ask=ask,
                measured=(measured.get(r["public_id"]) or {}).get(
                    (chosen[r["public_id"]] or {}).get("concurrency")
                ),
            )
            for r in results
        ]
        sized.sort(
            key=lambda row: (
                not row["meets"],
                row.get("accelerators") if row.get("accelerators") is not None else math.inf,
                row.get("system") or "",
                row["result"],
            )
        )
        rows.extend(sized)
    return rows


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_rows_built_when_read_are_the_rows_built_eagerly(seed):
    """SizedSite orders 300 generated systems (ties in accelerators and names, no accelerator count, no point
    meeting) as building every row and sorting them does, and any slice of it holds the same rows."""
    import random

    from leaderboard.board.slo import SloTargets
    from leaderboard.board.tender import SiteAsk, SizedSite, TenderPrices, percentile_meets

    rng = random.Random(seed)
    results = []
    for index in range(300):
        points = []
        for step in range(rng.randint(0, 6)):
            concurrency = 2**step
            points.append(
                {
                    "point": f"S{index}/m/r{concurrency}",
                    "concurrency": concurrency,
                    "system_tps": round(rng.uniform(10, 5000), 1),
                    "tps_per_user": round(rng.uniform(5, 150), 1),
                    "ttft_p90_ms": round(rng.uniform(20, 600), 1),
                    "system_tps_per_kw": round(rng.uniform(50, 900), 1),
                }
            )
        results.append(
            {
                "public_id": f"EP-{rng.randint(0, 10**6):07d}-{index}",
                "system": f"System {rng.randint(0, 40)}",
                "organisation": "Org",
                "accelerators": rng.choice([None, 1, 4, 8, 8, 16]),
                "nodes": rng.choice([None, 1, 2]),
                "points": points,
            }
        )
    ask = SiteAsk(
        users=rng.randint(1, 20000),
        users_expansion=rng.choice([None, 50000]),
        headroom=0.1,
        prices=TenderPrices(per_accelerator_hour=2.0, per_kwh=0.15),
    )
    meets = percentile_meets(SloTargets(ttft_p90_ms_max=300, interactivity_min=40))
    lazy = SizedSite(results, ask, meets=meets, measured={})
    eager = _sized_eagerly(results, ask, meets, {})
    assert len(lazy) == len(eager) and list(lazy) == eager
    assert lazy[17:42] == eager[17:42] and lazy[-1] == eager[-1]
    start, count = lazy.phase("delivery")
    assert (start, count) == (0, 300) and all(row["phase"] == "delivery" for row in lazy[:count])


@pytest.mark.parametrize("seed", [4, 5, 6, 7])
def test_the_sizing_index_chooses_what_sizing_point_chooses(seed):
    """SizingIndex.chosen against sizing_point(points, percentile_meets(targets)) on 400 generated results whose
    points have missing, zero, non-finite, boolean and text figures and ties in concurrency and throughput."""
    import random

    from leaderboard.board.slo import SloTargets
    from leaderboard.board.tender import SiteAsk, SizedSite, SizingIndex, percentile_meets, sizing_point

    rng = random.Random(seed)
    odd = [None, 0, 0.0, float("nan"), float("inf"), True, "12", -1]

    def figure(low, high):
        return rng.choice(odd) if rng.random() < 0.08 else round(rng.uniform(low, high), rng.choice([0, 1]))

    results = []
    for index in range(400):
        points = [
            {
                "point": f"S{index}/m/r{step}",
                "concurrency": rng.choice([1, 2, 4, 8, 8, 16]) if rng.random() > 0.08 else rng.choice(odd),
                "system_tps": figure(10, 60),
                "tps_per_user": figure(5, 150),
                "e2e_interactivity": figure(1, 50),
                "ttft_p90_ms": figure(20, 600),
            }
            for step in range(rng.randint(0, 8))
        ]
        if rng.random() < 0.1:
            points = [*points, *points[:2]]  # the very same point listed twice: the first one is chosen
        results.append(
            {
                "public_id": f"EP-{index}",
                "system": f"System {rng.randint(0, 30)}",
                "accelerators": rng.choice([None, 0, 8, 8, 16]),
                "points": points,
            }
        )
    index = SizingIndex(results)
    seen = set()
    for _ in range(25):
        targets = SloTargets(
            ttft_p90_ms_max=rng.choice([100, 300, 599.5]),
            interactivity_min=rng.choice([5, 40, 80.5]),
            interactivity_metric=rng.choice(["tps_per_user", "e2e_interactivity"]),
        )
        meets = percentile_meets(targets)
        want = [sizing_point(r["points"], lambda p, r=r, meets=meets: meets(r, p)) for r in results]
        got = index.chosen(targets)
        assert [id(p) if p is not None else None for p in got] == [
            id(p) if p is not None else None for p in want
        ]
        seen.update("chosen" if p is not None else "none" for p in got)
        # and the site sized from the index's choice (its concurrencies, its name order) is the eager one
        chosen, concurrency = index.choose(targets)
        ask = SiteAsk(
            users=rng.choice([64, 5000, 12345]), users_expansion=50000, headroom=rng.choice([0, 0.1])
        )
        lazy = SizedSite(results, ask, chosen=chosen, concurrency=concurrency, index=index, measured={})
        assert list(lazy) == _sized_eagerly(results, ask, meets, {})
    assert seen == {"chosen", "none"}
