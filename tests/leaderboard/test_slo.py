"""The SLO finder and the procurement report: their answers equal a computation written here from the same
published data, over the plain functions and through the public API and pages."""

from __future__ import annotations

import json
import math
import re

import pytest
from django.conf import settings as django_settings
from django.test import Client
from hypothesis import given, settings
from hypothesis import strategies as st

from leaderboard.board.cache import public_cache_bump
from leaderboard.board.procurement import ModelRequirement, procurement_report, requirements_from_query
from leaderboard.board.slo import SloIndex, SloTargets, accelerator_count, slo_rank
from tests.factories import BenchmarkFactory, PublicationFactory
from tests.leaderboard.support import make_curve, publish

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_public_cache():
    public_cache_bump()  # each test's database starts empty: never read another test's cached answers


def _expected_slo(publications, *, ttft_max, interactivity_min, power_max=None, accelerators_max=None):
    """The answer written out: per ranked result, every measured point meeting all targets, the one with the
    highest system_tps; results ordered by that throughput."""
    answer = []
    for publication in publications:
        if publication.retracted_at is not None or publication.status != "published":
            continue
        description = publication.submission.system.description
        accelerators = (
            sum(
                node["number_of_nodes"] * sum(a["accelerators_per_node"] for a in node["accelerator_info"])
                for node in description.get("node_types", [])
            )
            or None
        )
        meeting = []
        for point in publication.curve["points"]:
            if point["ttft_p90_ms"] > ttft_max or point["tps_per_user"] < interactivity_min:
                continue
            if power_max is not None:
                if not point.get("system_tps_per_kw"):
                    continue
                if point["system_tps"] / point["system_tps_per_kw"] > power_max:
                    continue
            if accelerators_max is not None and (accelerators is None or accelerators > accelerators_max):
                continue
            meeting.append(point)
        if meeting:
            best = max(meeting, key=lambda p: p["system_tps"])
            answer.append((publication.public_id, best["point"], best["system_tps"]))
    return sorted(answer, key=lambda row: -row[2])


@pytest.fixture
def world():
    benchmark = BenchmarkFactory(model_id="slo-model")
    ranked = [publish(benchmark=benchmark, scale=scale) for scale in (0.5, 1.0, 1.7, 2.3, 3.1)]
    no_power = publish(benchmark=benchmark, scale=2.8)
    no_power.curve = make_curve(no_power.submission.system.name, "slo-model", scale=2.8, tps_per_kw=False)
    no_power.save(update_fields=["curve"])
    big = publish(benchmark=benchmark, scale=4.0)
    description = big.submission.system.description
    description["node_types"][0]["number_of_nodes"] = 4  # 32 accelerators
    big.submission.system.description = description
    big.submission.system.save(update_fields=["description"])
    retracted = publish(benchmark=benchmark, scale=9.0, retracted=True)
    scheduled = PublicationFactory(
        scheduled=True,
        submission__benchmark=benchmark,
        submission__system__name="Unreleased-Z9",
        curve=make_curve("Unreleased-Z9", "slo-model", scale=20.0),
    )
    other_benchmark = publish(scale=50.0)
    return {
        "benchmark": benchmark,
        "all": [*ranked, no_power, big, retracted, scheduled],
        "hidden": [retracted, scheduled, other_benchmark],
        "no_power": no_power,
        "big": big,
    }


TARGETS = [
    {"ttft_max": 200.0, "interactivity_min": 40.0},
    {"ttft_max": 120.0, "interactivity_min": 60.0},
    {"ttft_max": 1000.0, "interactivity_min": 0.0},
    {"ttft_max": 300.0, "interactivity_min": 30.0, "power_max": 0.5},
    {"ttft_max": 300.0, "interactivity_min": 30.0, "accelerators_max": 8},
    {"ttft_max": 10.0, "interactivity_min": 30.0},  # nobody
]


@pytest.mark.parametrize("targets", TARGETS)
def test_the_api_answer_equals_the_computation_written_here(world, targets):
    expected = _expected_slo(world["all"], **targets)
    query = {
        "benchmark": "slo-model",
        "ttft_p90_ms_max": targets["ttft_max"],
        "interactivity_min": targets["interactivity_min"],
    }
    if "power_max" in targets:
        query["power_kw_max"] = targets["power_max"]
    if "accelerators_max" in targets:
        query["accelerators_max"] = targets["accelerators_max"]
    body = Client().get("/api/v1/public/slo/", query).json()
    got = [(row["public_id"], row["point"], row["system_tps"]) for row in body["results"]]
    assert got == expected
    assert [row["rank"] for row in body["results"]] == list(range(1, len(expected) + 1))
    assert "interpolat" in body["note"]
    hidden = {p.public_id for p in world["hidden"]}
    assert not hidden & {row["public_id"] for row in body["results"]}
    for row in body["results"]:
        assert row["result_url"] == f"/results/{row['public_id']}/"
        assert len(row["bundle_sha256"]) == 64


def test_caps_exclude_what_a_result_cannot_show(world):
    wide = _expected_slo(world["all"], ttft_max=300.0, interactivity_min=30.0)
    assert world["no_power"].public_id in {row[0] for row in wide}
    capped = _expected_slo(world["all"], ttft_max=300.0, interactivity_min=30.0, power_max=10_000.0)
    assert world["no_power"].public_id not in {row[0] for row in capped}  # no power figure: cap not shown met
    eight = _expected_slo(world["all"], ttft_max=300.0, interactivity_min=30.0, accelerators_max=8)
    assert world["big"].public_id not in {row[0] for row in eight}
    assert accelerator_count(world["big"].submission.system.description) == 32
    assert accelerator_count({"system_name": "no node types"}) is None


def test_no_point_between_measured_points_is_assumed():
    """Two measured points straddle the target: neither meets both targets, so the result does not qualify
    although a straight line between them would cross the target region."""
    points = [
        {"point": "a", "system_tps": 100.0, "tps_per_user": 50.0, "ttft_p90_ms": 300.0},
        {"point": "b", "system_tps": 400.0, "tps_per_user": 20.0, "ttft_p90_ms": 100.0},
    ]
    targets = SloTargets(ttft_p90_ms_max=200.0, interactivity_min=30.0)
    assert slo_rank([{"public_id": "EP-1", "points": points}], targets) == []
    loose = SloTargets(ttft_p90_ms_max=300.0, interactivity_min=20.0)
    assert [r["point"] for r in slo_rank([{"public_id": "EP-1", "points": points}], loose)] == ["b"]


def test_the_page_shows_the_same_ranking_and_says_there_is_no_interpolation(world):
    query = {"benchmark": "slo-model", "ttft_p90_ms_max": 200, "interactivity_min": 40}
    response = Client().get("/leaderboard/slo/", query)
    assert response.status_code == 200
    html = response.content.decode()
    assert "No interpolation" in html
    expected = _expected_slo(world["all"], ttft_max=200.0, interactivity_min=40.0)
    positions = [html.index(f'data-public-id="{public_id}"') for public_id, _, _ in expected]
    assert positions == sorted(positions) and expected
    assert "Unreleased-Z9" not in html
    # The downloads are absolute links on the portal's address: they work pasted into a script or a spreadsheet.
    site = django_settings.PORTAL_SITE_URL.rstrip("/")
    assert response.context["csv_url"].startswith(f"{site}/api/v1/public/slo/?")
    assert f'href="{site}/api/v1/public/slo/?' in html
    bad = Client().get("/leaderboard/slo/", {"benchmark": "slo-model", "ttft_p90_ms_max": "x"})
    assert bad.status_code == 400


def test_the_page_shows_new_figures_of_a_point_once_the_public_data_changes(world):
    """A row's cells are rendered once per public generation: a corrected curve shows on the next answer, and
    rows shared by two answers show each answer's own rank."""
    query = {"benchmark": "slo-model", "ttft_p90_ms_max": 1000, "interactivity_min": 0}
    first = Client().get("/leaderboard/slo/", {**query, "n": 1}).content.decode()
    second = Client().get("/leaderboard/slo/", {**query, "interactivity_min": 40}).content.decode()
    top_first = re.search(r'data-public-id="([^"]+)">\s*<td>1</td>', first).group(1)
    assert re.search(r"<td>1</td>", second)

    publication = next(p for p in world["all"] if p.public_id == top_first)
    curve = publication.curve
    best = max(curve["points"], key=lambda p: p["system_tps"])
    best["system_tps"] = 987654.25
    publication.save(update_fields=["curve"])
    public_cache_bump()  # what the services do after a publication, annotation or retraction commits
    html = Client().get("/leaderboard/slo/", {**query, "n": 2}).content.decode()
    row = re.search(rf'<tr data-public-id="{top_first}">.*?</tr>', html, re.S).group(0)
    assert "987654.2" in row or "987654.3" in row


def test_the_api_refuses_bad_targets_with_a_stable_code(world):
    response = Client().get("/api/v1/public/slo/", {"benchmark": "slo-model", "ttft_p90_ms_max": "-1"})
    assert response.status_code == 400 and response.json()["code"] == "invalid"
    response = Client().get(
        "/api/v1/public/slo/", {"benchmark": "nope", "ttft_p90_ms_max": 10, "interactivity_min": 1}
    )
    assert response.status_code == 400 and response.json()["code"] == "unknown-benchmark"


# --- Procurement ----------------------------------------------------------------------------------------


def _expected_procurement(publications, model, *, ttft_max, tpot_max, delivery_min):
    rows = []
    for publication in publications:
        if publication.retracted_at is not None or publication.status != "published":
            continue
        if publication.submission.benchmark.model_id != model:
            continue
        meeting = [
            p
            for p in publication.curve["points"]
            if p["basis"] == "recomputed"
            and p["ttft_p90_ms"] <= ttft_max
            and 1000.0 / p["tps_per_user"] <= tpot_max
        ]
        if not meeting:
            continue
        best = max(meeting, key=lambda p: p["system_tps"])
        if best["system_tps"] >= delivery_min:
            rows.append(
                (best["system_tps"], publication.public_id, best["point"], publication.version.sha256)
            )
    return [row[1:] for row in sorted(rows, key=lambda row: -row[0])]


def test_procurement_per_model_equals_the_computation_written_here(world):
    second = BenchmarkFactory(model_id="second-model")
    second_results = [publish(benchmark=second, scale=s) for s in (1.0, 6.0)]
    query = {
        "model_1": "slo-model",
        "ttft_p90_ms_max_1": "250",
        "tpot_ms_max_1": "25",
        "delivery_system_tps_min_1": "500",
        "expansion_system_tps_min_1": "2000",
        "model_2": "second-model",
        "ttft_p90_ms_max_2": "400",
        "tpot_ms_max_2": "40",
    }
    body = Client().get("/api/v1/public/procurement/", query).json()
    assert [s["model"] for s in body["models"]] == ["slo-model", "second-model"]
    first = _expected_procurement(world["all"], "slo-model", ttft_max=250, tpot_max=25, delivery_min=500)
    got = [(r["public_id"], r["point"], r["bundle_sha256"]) for r in body["models"][0]["systems"]]
    assert got == first and first
    for row in body["models"][0]["systems"]:
        assert row["result_url"] == f"/results/{row['public_id']}/"
        assert row["meets_expansion"] == (row["system_tps"] >= 2000)
    second_expected = _expected_procurement(
        second_results, "second-model", ttft_max=400, tpot_max=40, delivery_min=0
    )
    assert [
        (r["public_id"], r["point"], r["bundle_sha256"]) for r in body["models"][1]["systems"]
    ] == second_expected

    csv_text = Client().get("/api/v1/public/procurement/", {**query, "format": "csv"}).content.decode()
    header = csv_text.splitlines()[0].split(",")
    assert "bundle_sha256" in header and "result_url" in header
    assert len(csv_text.strip().splitlines()) == 1 + len(first) + len(second_expected)
    assert "Unreleased-Z9" not in csv_text

    page = Client().get("/leaderboard/procurement/", query)
    assert page.status_code == 200
    html = page.content.decode()
    for public_id, _, sha in first:
        assert f'href="/results/{public_id}/"' in html and sha in html
    assert "Unreleased-Z9" not in html


def test_tpot_is_read_as_interactivity_and_unverified_points_do_not_count():
    points = [
        {
            "point": "claimed",
            "basis": "claimed",
            "system_tps": 900.0,
            "tps_per_user": 80.0,
            "ttft_p90_ms": 50.0,
        },
        {
            "point": "ok",
            "basis": "recomputed",
            "system_tps": 300.0,
            "tps_per_user": 40.0,
            "ttft_p90_ms": 90.0,
        },
        {
            "point": "slow",
            "basis": "recomputed",
            "system_tps": 700.0,
            "tps_per_user": 19.0,
            "ttft_p90_ms": 90.0,
        },
    ]
    results = {"m": [{"public_id": "EP-1", "bundle_sha256": "a" * 64, "points": points}]}
    requirement = ModelRequirement(model="m", ttft_p90_ms_max=100, tpot_ms_max=50)  # >= 20 tokens/s/user
    [section] = procurement_report([requirement], results, {"m": "chat"})
    assert [row["point"] for row in section["systems"]] == ["ok"]
    assert math.isclose(section["systems"][0]["tpot_p90_ms"], 25.0)
    unmet = ModelRequirement(model="m", ttft_p90_ms_max=100, tpot_ms_max=50, delivery_system_tps_min=301)
    assert procurement_report([unmet], results, {"m": "chat"})[0]["systems"] == []


def test_requirements_are_read_from_numbered_parameters():
    parsed = requirements_from_query({"model_2": "m", "ttft_p90_ms_max_2": "100", "model_1": ""})
    assert parsed == [ModelRequirement(model="m", ttft_p90_ms_max=100.0)]
    with pytest.raises(ValueError, match="tpot_ms_max_1"):
        requirements_from_query({"model_1": "m", "tpot_ms_max_1": "fast"})
    with pytest.raises(ValueError):
        requirements_from_query({})
    response = Client().get("/api/v1/public/procurement/", {"model_1": "m", "tpot_ms_max_1": "0"})
    assert response.status_code == 400 and response.json()["code"] == "invalid"


# --- the index the API and pages query: the same rows as slo_rank, the definition -------------------------

# few distinct values, so that ties between points and between results are common
_figure = st.one_of(
    st.sampled_from([None, 0, 0.0, 1, 50.0, 100.0, 100, 2_000.0, float("nan"), float("inf"), True, "12"]),
    st.floats(min_value=0.0, max_value=5_000.0, allow_nan=False).map(lambda f: round(f, -2)),
)
_point = st.fixed_dictionaries(
    {
        "point": st.sampled_from(["r1", "r2", "r4", "r8", "r16", "r32"]),
        "concurrency": st.one_of(st.none(), st.sampled_from([1, 2, 4, 8, 16, 32])),
        "system_tps": _figure,
        "ttft_p90_ms": _figure,
        "tps_per_user": _figure,
        "e2e_interactivity": _figure,
        "system_tps_per_kw": _figure,
    }
)
_result = st.fixed_dictionaries(
    {
        "system": st.sampled_from(["A", "B"]),
        "accelerators": st.one_of(st.none(), st.sampled_from([1, 8, 32])),
        "retracted": st.booleans(),
        "points": st.lists(_point, max_size=8),
    }
)
_targets = st.builds(
    SloTargets,
    ttft_p90_ms_max=st.sampled_from([0.001, 50.0, 100.0, 1_000.0, 5_000.0]),
    interactivity_min=st.sampled_from([0.0, 1.0, 50.0, 100.0]),
    power_kw_max=st.one_of(st.none(), st.sampled_from([0.001, 1.0, 100.0])),
    accelerators_max=st.one_of(st.none(), st.sampled_from([1, 8, 32])),
    interactivity_metric=st.sampled_from(["tps_per_user", "e2e_interactivity"]),
)


@settings(max_examples=300, deadline=None)
@given(results=st.lists(_result, max_size=12), queries=st.lists(_targets, min_size=1, max_size=4))
def test_the_index_answers_what_slo_rank_answers(results, queries):
    """Ties (equal throughput, TTFT, concurrency), missing and non-numeric figures, NaN, infinities, caps a
    result cannot show it meets, retracted results: every query over the index equals slo_rank's rows."""
    for index, result in enumerate(results):
        result["public_id"] = f"EP-{index % 5}"  # repeated ids: the final sort must break ties the same way
    index = SloIndex(results)
    for targets in queries:
        assert _same(index.rank(targets), slo_rank(results, targets))


def _same(left: list[dict], right: list[dict]) -> bool:
    """Equal rows, NaN equal to NaN (a NaN figure is copied through as is)."""
    return json.dumps(left, sort_keys=True, default=str) == json.dumps(right, sort_keys=True, default=str)
