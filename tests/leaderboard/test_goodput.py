"""The SLO finder per request (leaderboard.board.goodput): its answer over published sample results equals a computation
written here from their raw events; the index's pruning never changes an answer; the arrays are kept by the check
task and backfilled by a command."""

from __future__ import annotations

import io

import numpy as np
import pytest
from django.core.files.storage import default_storage
from django.core.management import call_command
from django.test import Client, override_settings

from checker.recompute.goodput import SampleSeries, SloTarget, evaluate
from leaderboard.board.cache import public_cache_bump
from leaderboard.board.goodput.index import GoodputIndex, write_table
from leaderboard.board.goodput.targets import GoodputTargets
from submissions.models import CheckRun, PointMetric
from tests.checker.test_goodput import reference_slo
from tests.factories import BenchmarkFactory
from tests.leaderboard.goodput_support import RUNS, publish_sample_run
from tests.leaderboard.support import publish

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_public_cache(storage_dir):
    public_cache_bump()


@pytest.fixture
def world():
    benchmark = BenchmarkFactory(model_id="goodput-model")
    ax = publish_sample_run(benchmark=benchmark, system_name="Acme_AX-8000", accelerators=8)
    nb = publish_sample_run(benchmark=benchmark, system_name="Nimbus_NB-2", accelerators=2)
    retracted = publish_sample_run(benchmark=benchmark, system_name="Acme_AX-8000", accelerators=8)
    from django.utils import timezone

    type(retracted).objects.filter(pk=retracted.pk).update(retracted_at=timezone.now(), retraction_reason="x")
    public_cache_bump()
    return {"benchmark": benchmark, "ranked": [(ax, "Acme_AX-8000", 8), (nb, "Nimbus_NB-2", 2)]}


def expected_answer(world, sample_events, *, ttft_ms, tpot_ms, goal, accelerators_max=None):
    """Per ranked result, every point's attainment and goodput from its raw events; the point meeting the goal
    with the highest token goodput; results by that goodput."""
    rows = []
    for publication, system, accelerators in world["ranked"]:
        if accelerators_max is not None and accelerators > accelerators_max:
            continue
        best = None
        for point in publication.curve["points"]:
            want = reference_slo(
                sample_events[(system, point["concurrency"])], ttft_ms=ttft_ms, tpot_ms=tpot_ms
            )
            if want["counts"]["good"] / want["tracked"] < goal:
                continue
            if best is None or want["tps"]["good"] > best[1]["tps"]["good"]:
                best = (point, want)
        if best is not None:
            rows.append((publication.public_id, best[0], best[1]))
    return sorted(rows, key=lambda row: -row[2]["tps"]["good"])


TARGETS = [
    {"ttft_ms": 110.0, "tpot_ms": 12.5, "goal": 0.5},
    {"ttft_ms": 300.0, "tpot_ms": 50.0, "goal": 0.95},
    {"ttft_ms": 130.0, "tpot_ms": 1000.0 / 70, "goal": 0.9},
    {"ttft_ms": 125.0, "tpot_ms": 14.0, "goal": 0.8, "accelerators_max": 4},
    {"ttft_ms": 5.0, "tpot_ms": 5.0, "goal": 0.95},  # nobody
]


@pytest.mark.parametrize("targets", TARGETS)
def test_the_api_answer_equals_the_computation_from_the_raw_events(world, sample_events, targets):
    params = {
        "benchmark": "goodput-model",
        "ttft_ms": targets["ttft_ms"],
        "tpot_ms": targets["tpot_ms"],
        "attainment": targets["goal"] * 100,
    }
    if "accelerators_max" in targets:
        params["accelerators_max"] = targets["accelerators_max"]
    response = Client().get("/api/v1/public/slo/", params)
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["mode"] == "per_request" and "count as violations" in body["conventions"]
    want = expected_answer(world, sample_events, ttft_ms=targets["ttft_ms"], tpot_ms=targets["tpot_ms"],
                           goal=targets["goal"], accelerators_max=targets.get("accelerators_max"))  # fmt: skip
    got = body["results"]
    assert [(row["result"], row["point"]) for row in got] == [
        (public_id, f"r{point['concurrency']}") for public_id, point, _ in want
    ]
    for row, (_, point, reference) in zip(got, want, strict=True):
        assert row["concurrency"] == point["concurrency"]
        assert row["tracked_requests"] == reference["tracked"]
        for prefix, key in (("", "good"), ("ttft_", "ttft"), ("tpot_", "tpot")):
            assert row[f"{prefix}good_requests"] == reference["counts"][key]
            assert row[f"{prefix}attainment"] == pytest.approx(
                reference["counts"][key] / reference["tracked"]
            )
            assert row[f"{prefix}goodput_rps"] == pytest.approx(reference["rps"][key], rel=1e-12)
            assert row[f"{prefix}goodput_tps"] == pytest.approx(reference["tps"][key], rel=1e-12)
        # the MLPerf percentile view of the same point sits beside it
        assert row["ttft_p90_ms"] == point["ttft_p90_ms"] and row["tps_per_user"] == point["tps_per_user"]
    if targets["goal"] == 0.5:
        assert len(got) == 2  # the test distinguishes the systems' points, not only "everyone" or "nobody"


def test_interactivity_is_tpot_at_most_1000_over_it(world):
    by_interactivity = (
        Client()
        .get(
            "/api/v1/public/slo/",
            {"benchmark": "goodput-model", "ttft_ms": 130, "interactivity": 70, "attainment": 50},
        )
        .json()["results"]
    )
    by_tpot = (
        Client()
        .get(
            "/api/v1/public/slo/",
            {"benchmark": "goodput-model", "ttft_ms": 130, "tpot_ms": 1000 / 70, "attainment": 50},
        )
        .json()["results"]
    )
    assert by_interactivity and by_interactivity == by_tpot


def test_bad_per_request_targets_get_a_stable_code(world):
    response = Client().get(
        "/api/v1/public/slo/", {"benchmark": "goodput-model", "tpot_ms": 10, "interactivity": 20}
    )
    assert response.status_code == 400 and response.json()["code"] == "invalid"
    response = Client().get(
        "/api/v1/public/slo/", {"benchmark": "goodput-model", "ttft_ms": 100, "attainment": 150}
    )
    assert response.status_code == 400 and response.json()["code"] == "invalid"


def _random_series(rng, n: int) -> SampleSeries:
    ok = rng.random(n) > 0.05
    ttft = rng.gamma(4.0, 30e6, n).astype(np.int64)
    ttft[rng.random(n) < 0.02] = -1
    tpot = rng.gamma(6.0, 2e6, n)
    tpot[rng.random(n) < 0.05] = np.nan
    return SampleSeries(
        ttft_ns=ttft,
        tpot_ns=tpot,
        output_tokens=rng.integers(0, 300, n),
        ok=ok,
        duration_ns=int(rng.uniform(5e9, 50e9)),
    )


def test_the_table_written_point_by_point_is_the_table_built_in_memory(tmp_path):
    """The publish worker writes a snapshot's table one point at a time (at 10,000 results the table is ~12 GB and
    building it in memory ran out of 24 GB): the files are those `save` writes from the arrays built in memory,
    value for value and type for type, with retracted results, points without arrays and empty points among them;
    and the table reads back and answers the same."""
    rng = np.random.default_rng(11)
    results, samples, by_key = [], {}, {}
    for r in range(30):
        points = []
        retracted = r % 7 == 3
        for p in range(int(rng.integers(0, 6))):
            key = f"S{r}/m/r{2**p}"
            points.append({"point": key, "concurrency": 2**p, "system_tps": 1.0})
            if rng.random() < 0.15:
                continue  # no arrays stored for this point
            series = _random_series(rng, int(rng.integers(0, 300)))
            by_key[(f"EP-{r:03d}", key)] = series
            if not retracted:
                samples[(len([x for x in results if not x.get("retracted")]), p)] = series
        results.append(
            {"public_id": f"EP-{r:03d}", "points": points, "retracted": retracted, "accelerators": 1}
        )
    GoodputIndex(results, samples).save(tmp_path / "memory")
    write_table(
        tmp_path / "streamed",
        results,
        lambda result, point: by_key.get((result["public_id"], point["point"])),
    )
    names = sorted(path.name for path in (tmp_path / "memory").iterdir())
    assert names == sorted(path.name for path in (tmp_path / "streamed").iterdir()) and "complete" in names
    for name in names:
        if name.endswith(".npy"):
            want, got = np.load(tmp_path / "memory" / name), np.load(tmp_path / "streamed" / name)
            assert got.dtype == want.dtype and got.shape == want.shape, name
            assert np.array_equal(got, want, equal_nan=True), name
    assert GoodputIndex.load(tmp_path / "memory", results).samples > 0
    targets = GoodputTargets(ttft_ms=150.0, tpot_ms=12.0, attainment=0.8)
    assert GoodputIndex.load(tmp_path / "streamed", results).rank(targets) == GoodputIndex.load(
        tmp_path / "memory", results
    ).rank(targets)


def test_the_index_answers_what_evaluating_every_point_answers(tmp_path):
    """Pruning by exact bounds, counting on the shorter side and stopping early never change the answer
    (generated results)."""
    rng = np.random.default_rng(7)
    results, samples = [], {}
    for r in range(40):
        points = []
        for p in range(int(rng.integers(1, 9))):
            points.append({"point": f"S{r}/m/r{2**p}", "concurrency": 2**p, "system_tps": 1.0})
            samples[(r, p)] = _random_series(rng, int(rng.integers(1, 400)))
        results.append(
            {"public_id": f"EP-{r:03d}", "points": points, "accelerators": int(rng.integers(1, 16))}
        )
    index = GoodputIndex(results, samples)
    index.save(tmp_path / "table")
    mapped = GoodputIndex.load(tmp_path / "table", results)
    assert mapped is not None
    # targets at a point's largest TTFT or TPOT exactly: the edge where a point's values all count without a search
    largest_ttft = [float(s.ttft_ns[s.ok].max()) / 1e6 for s in samples.values() if s.ok.any()]
    largest_tpot = [
        float(np.nanmax(s.tpot_ns)) / 1e6 for s in samples.values() if not np.isnan(s.tpot_ns).all()
    ]
    for _ in range(120):
        ttft_ms = float(rng.uniform(50, 250)) if rng.random() > 0.2 else float(rng.choice(largest_ttft))
        tpot_ms = float(rng.uniform(5, 20)) if rng.random() > 0.2 else float(rng.choice(largest_tpot))
        targets = GoodputTargets(
            ttft_ms=ttft_ms if rng.random() > 0.1 else None,
            tpot_ms=tpot_ms if rng.random() > 0.1 else None,
            # more goals than an index keeps (GOALS_KEPT): the k-th values are read again after being dropped
            attainment=float(
                rng.choice([0.5, 0.8, 0.9, 0.95, 0.99, 0.333, 0.7, 0.75, 0.85, 0.97, 0.999, 1.0])
            ),
            accelerators_max=8 if rng.random() < 0.2 else None,
        )
        want = []
        for r, result in enumerate(results):
            if targets.accelerators_max is not None and result["accelerators"] > targets.accelerators_max:
                continue
            scored = []
            for p in range(len(result["points"])):
                got = evaluate(samples[(r, p)], SloTarget(ttft_ms=targets.ttft_ms, tpot_ms=targets.tpot_ms))
                if got["attainment"] >= targets.attainment:
                    scored.append((got["goodput_tps"], got["goodput_rps"], p, got))
            if scored:
                best = max(scored, key=lambda s: (s[0], s[1]))
                want.append((result["public_id"], best[3]))
        want.sort(key=lambda row: (-row[1]["goodput_tps"], -row[1]["goodput_rps"], row[0]))
        got = index.rank(targets)
        assert [row["public_id"] for row in got] == [public_id for public_id, _ in want]
        for row, (_, expected) in zip(got, want, strict=True):
            assert row["good_requests"] == expected["good_requests"]
            assert row["ttft_good_requests"] == expected["ttft_good_requests"]
            assert row["tpot_good_requests"] == expected["tpot_good_requests"]
            assert row["goodput_tps"] == pytest.approx(expected["goodput_tps"], rel=1e-12)
        # the table written to a file and memory-mapped back gives the very same rows
        assert mapped.rank(targets) == got


@pytest.fixture
def table_dir(tmp_path, settings):
    settings.PORTAL_GOODPUT_TABLE_DIR = tmp_path / "goodput-tables"
    return settings.PORTAL_GOODPUT_TABLE_DIR


def test_the_publish_worker_writes_the_table_the_web_processes_map(world, sample_events, table_dir):
    """goodput_table_build_task writes the snapshot's table; a web process then maps it (no arrays read from
    storage) and answers what the raw events say; a new publication names a new table."""
    from leaderboard.board.goodput import tables
    from leaderboard.tasks import goodput_table_build_task

    built = goodput_table_build_task()
    assert len(built) == 1 and (table_dir / built[0] / "complete").exists()
    tables._indexes.clear()
    reads = []
    original = tables.load_samples
    tables.load_samples = lambda *a: reads.append(a) or original(*a)
    try:
        response = Client().get(
            "/api/v1/public/slo/",
            {"benchmark": "goodput-model", "ttft_ms": 300, "tpot_ms": 50, "attainment": 95},
        )
    finally:
        tables.load_samples = original
    assert response.status_code == 200 and reads == []
    index = tables._indexes["goodput-model"][1]
    assert isinstance(index.arrays["ttft_t"], np.memmap)
    want = expected_answer(world, sample_events, ttft_ms=300.0, tpot_ms=50.0, goal=0.95)
    got = response.json()["results"]
    assert [(row["result"], row["good_requests"]) for row in got] == [
        (public_id, reference["counts"]["good"]) for public_id, _, reference in want
    ]
    assert goodput_table_build_task() == []  # already there
    publish_sample_run(
        benchmark=world["benchmark"], system_name="Nimbus_NB-2", accelerators=2
    )  # its newer result
    public_cache_bump()
    assert len(goodput_table_build_task()) == 1
    assert len([p for p in table_dir.iterdir() if p.is_dir()]) == 2  # the newest two are kept


def test_an_answer_is_cached_across_urls_and_a_publication_invalidates_it(world, sample_events, monkeypatch):
    """The same targets asked in other words (300 or 300.0, the page, another page of the API) are one cached
    answer; once a new result is published (a new public generation), the next question is answered afresh and
    the new result is in it."""
    from leaderboard.board.goodput import tables
    from tests.factories import OrganisationFactory

    ranked = []
    original = GoodputIndex.ranking
    monkeypatch.setattr(
        GoodputIndex, "ranking", lambda self, targets: ranked.append(targets) or original(self, targets)
    )
    tables._rankings.clear()
    query = {"benchmark": "goodput-model", "ttft_ms": 110, "tpot_ms": 12.5, "attainment": 50}
    first = Client().get("/api/v1/public/slo/", query).json()["results"]
    again = Client().get(
        "/api/v1/public/slo/", {**query, "ttft_ms": "110.0", "attainment": "50.000", "limit": 5}
    )
    page = Client().get("/leaderboard/slo/", query)
    tables._rankings.clear()  # another web process: the answer comes from the shared cache
    other = Client().get("/api/v1/public/slo/", {**query, "tpot_ms": "12.50"}).json()["results"]
    assert len(ranked) == 1 and again.json()["results"] == first == other and page.status_code == 200
    assert len(first) == 2

    newer = publish_sample_run(
        benchmark=world["benchmark"],
        system_name="Nimbus_NB-2",
        accelerators=2,
        organisation=OrganisationFactory(),
    )
    public_cache_bump()  # what the publication service does once its transaction commits
    after = Client().get("/api/v1/public/slo/", {**query, "ttft_ms": "110.0"}).json()["results"]
    assert len(ranked) == 2
    assert newer.public_id in [row["result"] for row in after] and len(after) == 3
    html = Client().get("/leaderboard/slo/", query).content.decode()
    assert f'data-public-id="{newer.public_id}"' in html


@pytest.mark.django_db(transaction=True)
def test_the_check_task_keeps_the_arrays_and_the_command_backfills_them(role_users, sample_events):
    from leaderboard.models import Publication
    from submissions.services import submission_create
    from tests.submissions.support import api_client, api_upload_run_archives, make_catalog

    acme = role_users["organisations"]["acme"]
    user = role_users["submitter"]
    benchmark, system = make_catalog(acme)
    submission = submission_create(actor=user, system=system, benchmark=benchmark)
    archives = RUNS["Acme_AX-8000"][:3]
    with override_settings(PORTAL_UPLOAD_PART_BYTES=256 * 1024):
        body = api_upload_run_archives(api_client(user), submission_id=submission.pk, paths=archives)
    run = CheckRun.objects.get(version_id=body["version"]["id"])
    metrics = list(run.point_metrics.order_by("concurrency"))
    assert len(metrics) == 3 and all(m.samples_key and m.samples_sha256 for m in metrics)
    kept = {}
    for metric in metrics:
        with default_storage.open(metric.samples_key, "rb") as stream:
            series = SampleSeries.from_npz(stream.read())
        reference = reference_slo(
            sample_events[("Acme_AX-8000", metric.concurrency)], ttft_ms=110, tpot_ms=12.5
        )
        assert (
            evaluate(series, SloTarget(ttft_ms=110, tpot_ms=12.5))["good_requests"]
            == reference["counts"]["good"]
        )
        kept[metric.pk] = metric.samples_sha256
    # a published result checked before the arrays were kept: the command replays its raw logs
    publish(benchmark=benchmark, system=system)
    Publication.objects.filter(submission__system=system).update(check_run=run)
    PointMetric.objects.filter(check_run=run).update(samples_key="", samples_sha256="")
    out = io.StringIO()
    call_command("backfill_point_samples", stdout=out)
    assert "3 point(s) got per-sample arrays" in out.getvalue()
    assert {m.pk: m.samples_sha256 for m in PointMetric.objects.filter(check_run=run)} == kept
    out = io.StringIO()
    call_command("backfill_point_samples", stdout=out)
    assert "0 point(s) got per-sample arrays" in out.getvalue()


def test_the_page_shows_the_per_request_answer_and_its_conventions(world, sample_events):
    query = {"benchmark": "goodput-model", "ttft_ms": 110, "tpot_ms": 12.5, "attainment": 50}
    response = Client().get("/leaderboard/slo/", query)
    assert response.status_code == 200
    html = response.content.decode()
    assert "failed and unfinished requests count as violations" in html and "No interpolation" in html
    want = expected_answer(world, sample_events, ttft_ms=110.0, tpot_ms=12.5, goal=0.5)
    positions = [
        html.index(f'data-public-id="{public_id}" data-point="r{p["concurrency"]}"')
        for public_id, p, _ in want
    ]
    assert positions == sorted(positions) and len(want) == 2
    for _, _, reference in want:
        assert f"{reference['counts']['good']} / {reference['tracked']}" in html
        assert f"{reference['tps']['good']:.1f}" in html


def test_page_errors_name_the_fields_as_the_form_labels_them(world):
    response = Client().get("/leaderboard/slo/", {"benchmark": "goodput-model", "ttft_ms": "-3"})
    assert response.status_code == 400
    html = response.content.decode()
    assert "TTFT per request ≤ (ms)</strong>" in html and "ttft_ms:" not in html
    response = Client().get("/leaderboard/slo/", {"benchmark": "goodput-model"})
    assert response.status_code == 400 and "TTFT P90 ≤ (ms)</strong>" in response.content.decode()


def test_cost_per_million_good_tokens_from_the_buyers_price(world, sample_events):
    query = {"benchmark": "goodput-model", "ttft_ms": 110, "tpot_ms": 12.5, "attainment": 50}
    priced = {**query, "price_per_accelerator_hour": 2.5, "energy_price_per_kwh": 0.2}
    rows = Client().get("/api/v1/public/slo/", priced).json()["results"]
    want = expected_answer(world, sample_events, ttft_ms=110.0, tpot_ms=12.5, goal=0.5)
    accelerators = {publication.public_id: count for publication, _, count in world["ranked"]}
    assert len(rows) == len(want) == 2
    for row, (public_id, point, reference) in zip(rows, want, strict=True):
        power_kw = point["system_tps"] / point["system_tps_per_kw"]
        hourly = 2.5 * accelerators[public_id] + power_kw * 0.2
        assert row["cost_per_million_good_tokens"] == pytest.approx(
            hourly / (reference["tps"]["good"] * 3600) * 1e6
        )
        assert row["cost_per_million_tokens"] == pytest.approx(hourly / (point["system_tps"] * 3600) * 1e6)
        assert row["goodput_tps_per_accelerator"] == pytest.approx(
            reference["tps"]["good"] / accelerators[public_id]
        )
    page = Client().get("/leaderboard/slo/", priced).content.decode()
    assert "Cost / M good tokens" in page and 'value="2.5"' in page  # the inputs stay in the URL and the form
    assert "Cost / M good tokens" not in Client().get("/leaderboard/slo/", query).content.decode()
    both = Client().get("/leaderboard/slo/", {**priced, "price_per_node_hour": 9})
    assert both.status_code == 400 and "Price per node-hour</strong>" in both.content.decode()


def test_the_result_page_normalises_and_prices_every_point(world):
    """Per accelerator, per node, per provisioned kW beside each point's recomputed tokens/s, and with the buyer's
    price (kept in the URL) the cost per hour and per million output tokens; a bad price is named by its label."""
    import re

    from leaderboard.board.slo import node_count

    publication, _, accelerators = world["ranked"][0]
    url = f"/results/{publication.public_id}/"
    html = Client().get(url).content.decode()
    assert "Cost per million output tokens" not in html  # nothing is priced by the portal
    html = (
        Client()
        .get(url, {"price_per_accelerator_hour": "2.5", "energy_price_per_kwh": "0.2"})
        .content.decode()
    )
    assert 'name="price_per_accelerator_hour" value="2.5"' in html
    nodes = node_count(publication.record.description)
    for point in publication.curve["points"]:
        row = re.search(rf'<tr data-normalised="{point["concurrency"]}">(.*?)</tr>', html, re.S).group(1)
        cells = dict(re.findall(r'data-metric="(\w+)">([^<]*)<', row))
        tps = point["system_tps"]
        assert float(cells["per_accelerator"].replace(",", "")) == pytest.approx(tps / accelerators, abs=0.05)
        if nodes:
            assert float(cells["per_node"].replace(",", "")) == pytest.approx(tps / nodes, abs=0.05)
        assert float(cells["per_kw_provisioned"].replace(",", "")) == pytest.approx(
            point["system_tps_per_kw"], abs=0.05
        )
        hourly = 2.5 * accelerators + tps / point["system_tps_per_kw"] * 0.2
        assert float(cells["cost_per_hour"].replace(",", "")) == pytest.approx(hourly, abs=0.005)
        assert float(cells["cost_per_million_tokens"].replace(",", "")) == pytest.approx(
            hourly / (tps * 3600) * 1e6, rel=1e-3
        )
    bad = Client().get(url, {"price_per_node_hour": "-3"}).content.decode()
    assert "Price per node-hour: enter a number" in bad and "price_per_node_hour:" not in bad


def test_the_fast_number_format_is_django_floatformat():
    """The SLO page formats its figures without the template filter: the same text for every kind of number."""
    import random

    from django.template.defaultfilters import floatformat

    from leaderboard.views.buyer import _floatformat

    rng = random.Random(5)
    values = [
        0,
        1,
        -1,
        0.0,
        -0.0,
        0.05,
        0.15,
        0.25,
        2.675,
        1.005,
        -0.04,
        -0.05,
        9.95,
        99.995,
        0.9999,
        1e16,
        1e-7,
    ]
    values += [123456789.123, -2.5, 7, 10**12, float("inf"), float("nan"), None, "12.5", True]
    values += [rng.uniform(-1, 1) * 10 ** rng.randint(-4, 9) for _ in range(3000)]
    values += [
        round(rng.uniform(0, 1000), rng.randint(0, 4)) for _ in range(2000)
    ]  # halfway cases among them
    for value in values:
        for places in (1, 2, 3):
            assert _floatformat(value, places, ".") == floatformat(value, places), (value, places)


def test_the_page_rows_show_each_figure_under_its_header(world, sample_events):
    """The per-request table's rows (written in Python, leaderboard.views.buyer.GOODPUT_COLUMNS: a column's header
    and cell in one place): as many cells as headers, priced or not, each figure as `floatformat` writes it, names
    escaped, a missing figure left out or shown as a dash, and the side of a cliff said in words."""
    import re

    from django.template.defaultfilters import floatformat

    from leaderboard.api.buyer import slo_answer
    from leaderboard.views.buyer import goodput_table_html

    base = {"benchmark": "goodput-model", "mode": "per_request", "ttft_ms": 110.0, "tpot_ms": 12.5}
    answer = slo_answer({**base, "attainment": 10.0, "price_per_accelerator_hour": 2.5})
    rows = answer["rows"][:]
    assert len(rows) == 2
    for priced in (False, True):
        header, html = goodput_table_html(rows, priced=priced)
        headers = re.findall(r"<th scope=\"col\"[^>]*>(.*?)</th>", header)
        assert ("Cost / M good tokens" in headers) is priced and headers[:2] == ["#", "System · result"]
        for row, written in zip(rows, html, strict=True):
            assert len(re.findall(r"<td[ >]", written)) == len(headers)
            assert f'data-public-id="{row["public_id"]}" data-point="{row["point"]}"' in written
            cells = dict(re.findall(r'<td class="num" data-metric="(\w+)">(.*?)</td>', written))
            assert re.sub("<[^>]+>", "", cells["goodput_tps"]).startswith(floatformat(row["goodput_tps"], 1))
            assert cells["attainment"] == f"{floatformat(100 * row['attainment'], 1)} %"
            assert cells["good_requests"] == f"{row['good_requests']} / {row['tracked_requests']}"
            assert cells["goodput_rps"] == floatformat(row["goodput_rps"], 2)
            assert cells["tpot_attainment"] == f"{floatformat(100 * row['tpot_attainment'], 1)} %"
            assert f">{floatformat(row['goodput_tps_per_accelerator'], 1)} / accel.<" in written
            if priced:
                assert f"<strong>{floatformat(row['cost_per_million_good_tokens'], 3)}</strong>" in written
    row = rows[0]
    cliff = {"after_concurrency": 16, "before_concurrency": 8}
    _, (odd,) = goodput_table_html(
        [
            {
                **row,
                "system": 'A<&>"B',
                "organisation": None,
                "goodput_tps_per_accelerator": None,
                "cliff": None,
            }
        ],
        priced=True,
    )
    assert "A&lt;&amp;&gt;&quot;B<br>" in odd and "/ accel." not in odd and 'data-cliff="none"' in odd
    _, (before,) = goodput_table_html(
        [{**row, "cliff": {"side": "before", "cliff": cliff}, "cost_per_million_good_tokens": None}],
        priced=True,
    )
    assert "before the cliff at r16" in before and 'data-cliff="before"' in before
    assert '<td class="num" data-metric="cost_per_million_good_tokens">—</td>' in before
    _, (past,) = goodput_table_html([{**row, "cliff": {"side": "past", "cliff": cliff}}], priced=False)
    assert "past the cliff at r16" in past and 'data-cliff="past"' in past


def test_the_page_shows_the_answer_a_page_at_a_time_keeping_the_inputs(world, sample_events):
    """25 rows from the top unless asked (`offset` and `limit`, as the API reads them); the links to the next rows
    and to all of them keep the targets, and a row keeps its rank in the whole answer."""
    import html as html_lib
    import re

    query = {"benchmark": "goodput-model", "ttft_ms": 110, "tpot_ms": 12.5, "attainment": 50}
    want = [
        public_id
        for public_id, _, _ in expected_answer(world, sample_events, ttft_ms=110.0, tpot_ms=12.5, goal=0.5)
    ]

    def shown(html: str) -> list[tuple[str, str]]:
        return re.findall(r'data-public-id="([^"]+)" data-point="[^"]+">\s*<td>(\d+)</td>', html)

    def link(html: str, attribute: str) -> str:
        return html_lib.unescape(re.search(rf'<a href="([^"]+)" {attribute}', html).group(1))

    everything = Client().get("/leaderboard/slo/", query).content.decode()
    assert shown(everything) == [(want[0], "1"), (want[1], "2")] and 'rel="next"' not in everything
    assert "Rows 1–2 of 2" in everything
    first = Client().get("/leaderboard/slo/", {**query, "limit": 1}).content.decode()
    assert shown(first) == [(want[0], "1")] and "Rows 1–1 of 2" in first
    following = link(first, 'rel="next"')
    assert all(f"{name}=" in following for name in query) and "offset=1" in following
    second = Client().get("/leaderboard/slo/" + following.split("#")[0]).content.decode()
    assert shown(second) == [(want[1], "2")] and 'rel="prev"' in second and 'rel="next"' not in second
    all_of_them = (
        Client().get("/leaderboard/slo/" + link(first, "data-show-all").split("#")[0]).content.decode()
    )
    assert shown(all_of_them) == shown(everything)


def test_a_long_answer_shows_25_rows_and_links_to_the_next_25_and_to_all():
    from django.test import RequestFactory

    from leaderboard.views.buyer import _page_of

    asked = "/leaderboard/slo/?benchmark=m&ttft_ms=300&tpot_ms=50"
    page = _page_of(RequestFactory().get(asked), 700)
    assert (page["first"], page["last"], page["previous_url"]) == (1, 25, None)
    assert page["next_url"] == "?benchmark=m&ttft_ms=300&tpot_ms=50&offset=25#slo-answer"
    assert page["all_url"] == "?benchmark=m&ttft_ms=300&tpot_ms=50&limit=700#slo-answer"
    last = _page_of(RequestFactory().get(asked + "&offset=690"), 700)
    assert (last["first"], last["last"], last["next_url"]) == (691, 700, None)
    assert last["previous_url"] == "?benchmark=m&ttft_ms=300&tpot_ms=50&offset=665#slo-answer"
    assert (
        _page_of(RequestFactory().get(asked + "&limit=x&offset=-3"), 700)["last"] == 25
    )  # as the API reads them


def test_a_table_that_cannot_be_written_answers_from_memory_when_small_and_503_when_not(
    world, sample_events, tmp_path, settings, monkeypatch
):
    """A goodput table that cannot be written (a file where its folder should be, as a full or read-only disk
    gives): a small board is ranked in memory and answered; one too large to hold (10,000 results' arrays are
    12.6 GB) is refused with a 503 that says what to do, on the API and the page, and the percentile mode still
    answers."""
    from leaderboard.board.goodput import tables

    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the tables' folder should be")
    settings.PORTAL_GOODPUT_TABLE_DIR = blocked
    query = {"benchmark": "goodput-model", "ttft_ms": 300, "tpot_ms": 50, "attainment": 95}
    tables._indexes.clear()
    tables._rankings.clear()
    small = Client().get("/api/v1/public/slo/", query)
    assert small.status_code == 200 and len(small.json()["results"]) >= 1

    monkeypatch.setattr(tables, "IN_MEMORY_POINTS_MAX", 0)
    tables._indexes.clear()
    tables._rankings.clear()
    public_cache_bump()
    refused = Client().get("/api/v1/public/slo/", {**query, "ttft_ms": 301})
    assert refused.status_code == 503 and refused["Retry-After"] == "60"
    assert refused.json()["code"] == "goodput-unavailable"
    assert "percentile mode" in refused.json()["detail"]
    page = Client().get("/leaderboard/slo/", {**query, "mode": "per_request", "ttft_ms": 302})
    assert page.status_code == 503 and "Ask again in a minute" in page.content.decode()
    assert (
        "Not available right now" in page.content.decode()
        and "Check the targets" not in page.content.decode()
    )
    percentile = Client().get(
        "/api/v1/public/slo/", {"benchmark": "goodput-model", "ttft_p90_ms_max": 500, "interactivity_min": 1}
    )
    assert percentile.status_code == 200


def test_results_tied_on_token_goodput_are_ranked_by_request_goodput_then_public_id():
    """Three results with the same samples tie on everything: their public ids decide; a fourth with the same good
    tokens from half as many requests ties on token goodput and ranks after them (lower request goodput)."""

    def series(tokens, ok):
        n = len(tokens)
        return SampleSeries(
            ttft_ns=np.full(n, 50_000_000, dtype=np.int64),
            tpot_ns=np.full(n, 5e6),
            output_tokens=np.asarray(tokens, dtype=np.int64),
            ok=np.asarray(ok, dtype=bool),
            duration_ns=10_000_000_000,
        )

    same = series([10, 10, 10, 10], [True] * 4)
    fewer = series([20, 20, 7, 7], [True, True, False, False])
    results = [
        {"public_id": public_id, "points": [{"point": f"{public_id}/m/r1", "concurrency": 1}]}
        for public_id in ("EP-C", "EP-D", "EP-A", "EP-B")
    ]
    samples = {(0, 0): same, (1, 0): fewer, (2, 0): same, (3, 0): same}
    rows = GoodputIndex(results, samples).rank(GoodputTargets(ttft_ms=100.0, tpot_ms=10.0, attainment=0.5))
    assert [row["public_id"] for row in rows] == ["EP-A", "EP-B", "EP-C", "EP-D"]
    assert {row["goodput_tps"] for row in rows} == {4.0}
    assert [row["goodput_rps"] for row in rows] == [0.4, 0.4, 0.4, 0.2]


def _row_by_definition(index, position, counts, targets, prices):
    """A row one figure at a time: the point's static row, the targets, per judgement its good requests,
    attainment and goodput per request and per token, then targets.normalised's figures (the API's key order)."""
    from leaderboard.board.goodput.index import _ROW_FIGURES
    from leaderboard.board.goodput.targets import normalised

    tracked, seconds = int(index._size[position]), float(index._seconds[position])
    row = {
        **index._static_row(position),
        "ttft_ms": targets.ttft_ms,
        "tpot_ms": targets.tpot_ms,
        "attainment_goal": targets.attainment,
        "tracked_requests": tracked,
    }
    for good_name, tokens_name, good_key, attainment_key, rps_key, tps_key in _ROW_FIGURES:
        good = counts[good_name]
        row[good_key] = good
        row[attainment_key] = good / tracked
        row[rps_key] = good / seconds
        row[tps_key] = counts[tokens_name] / seconds
    result = index.results[int(index._owner[position])]
    row.update(
        normalised(row, accelerators=result.get("accelerators"), nodes=result.get("nodes"), prices=prices)
    )
    return row


def test_rows_are_the_rows_the_definition_makes_key_for_key():
    """GoodputIndex.rows divides a page's figures at once and makes what does not depend on the targets once per
    point; each row is still what `_row` and targets.normalised make, value for value and in the same key order
    (the API's JSON and the CSV's columns), priced or not, with and without accelerator and node counts and power,
    and what a caller adds (`static`) is made once per point and comes after the rank."""
    from leaderboard.board.goodput.targets import Prices

    rng = np.random.default_rng(11)
    results, samples = [], {}
    for r in range(30):
        points = []
        for p in range(int(rng.integers(1, 5))):
            point = {
                "point": f"S{r}/m/r{2**p}",
                "concurrency": 2**p,
                "system_tps": float(rng.uniform(10, 900)),
            }
            if rng.random() < 0.7:  # provisioned power known: system_tps_per_kw claimed
                point["system_tps_per_kw"] = float(rng.uniform(5, 90))
            points.append(point)
            samples[(r, p)] = _random_series(rng, int(rng.integers(5, 300)))
        results.append(
            {
                "public_id": f"EP-{r:03d}",
                "points": points,
                "accelerators": [None, 0, 1, 8][r % 4],
                "nodes": [None, 2, 0, 1, 4][r % 5],
            }
        )
    index = GoodputIndex(results, samples)
    made = []

    def extra(row):
        return {"result_url": f"/results/{row['public_id']}/", "watts": row["power_kw"]}

    def added(row):
        made.append(row["point_key"])
        return extra(row)

    for prices in (
        None,
        Prices(),
        Prices(per_accelerator_hour=2.5),
        Prices(per_node_hour=30.0, per_kwh=0.2),
        Prices(per_system_hour=99.0),
    ):
        for _ in range(6):
            targets = GoodputTargets(
                ttft_ms=float(rng.uniform(250, 600)),
                tpot_ms=float(rng.uniform(10, 25)),
                attainment=float(rng.choice([0.1, 0.2, 0.3])),
            )
            ranking = index.ranking(targets)
            got = index.rows(ranking, targets, prices, static=("test", added))
            want = []
            for rank, position in enumerate(ranking["point"].tolist(), start=1):
                counts = {name: int(ranking[name][rank - 1]) for name in ranking if name != "point"}
                row = _row_by_definition(index, position, counts, targets, prices)
                row["rank"] = rank
                row.update(extra(row))
                want.append(row)
            assert len(got) > 3
            assert [list(row.items()) for row in got] == [list(row.items()) for row in want]
            assert any(row["goodput_tps_per_accelerator"] is None for row in got)
    # what the caller adds: made once for each point shown, however many answers showed it
    assert made and len(made) == len(set(made))


def test_a_table_carries_what_queries_work_out_once_and_a_table_without_it_still_answers(tmp_path):
    """The writer of a table also writes each point's edges and the k-th values of the goals buyers ask (a web
    process maps them instead of reading one scattered value per point of a table of gigabytes on its first ask):
    they are what the index works out itself, and a table written before them, or with one of them damaged,
    answers the same."""
    from leaderboard.board.goodput.index import TABLE_GOALS_PCT

    rng = np.random.default_rng(5)
    results, samples = [], {}
    for r in range(25):
        points = [{"point": f"S{r}/m/r{2**p}", "concurrency": 2**p} for p in range(int(rng.integers(1, 6)))]
        for p in range(len(points)):
            samples[(r, p)] = _random_series(rng, int(rng.integers(1, 300)))
        results.append({"public_id": f"EP-{r:03d}", "points": points})
    in_memory = GoodputIndex(results, samples)
    write_table(tmp_path / "t", results, lambda result, point: samples.get(_where(results, result, point)))
    mapped = GoodputIndex.load(tmp_path / "t", results)
    # there before any query, and what the index works out from the arrays
    assert "_edges" in mapped.__dict__ and sorted(mapped._goals) == sorted(p / 100.0 for p in TABLE_GOALS_PCT)
    for name, values in in_memory._edges.items():
        assert np.array_equal(mapped._edges[name], values), name
    for pct in TABLE_GOALS_PCT:
        for got, want in zip(mapped._goals[pct / 100.0], in_memory._goal(pct / 100.0), strict=True):
            assert np.array_equal(got, want)
    # an older table (no derived files) and a damaged one (a goal of another size) work them out when asked
    (tmp_path / "t" / "edge_tail_last.npy").unlink()
    np.save(tmp_path / "t" / "goal_95.0.npy", np.zeros((3, 2)))
    older = GoodputIndex.load(tmp_path / "t", results)
    assert "_edges" not in older.__dict__ and 0.95 not in older._goals and 0.99 in older._goals
    for _ in range(30):
        targets = GoodputTargets(
            ttft_ms=float(rng.uniform(50, 300)),
            tpot_ms=float(rng.uniform(5, 25)),
            attainment=float(rng.choice([0.9, 0.95, 0.99, 0.999, 0.5])),
        )
        want = in_memory.rank(targets)
        assert mapped.rank(targets) == want
        assert older.rank(targets) == want


def _where(results, result, point):
    r = results.index(result)
    return (r, result["points"].index(point))


def test_a_large_snapshot_is_set_apart_from_the_cyclic_collector_and_a_small_one_is_not():
    """At 10,000 results a full pass of the cyclic collector walked the snapshot's ~610,000 objects in ~0.4 s,
    stalling whichever request it fell in: once a large snapshot and its index are built, what the process holds is
    frozen (its full passes then walk only what came after); a small board is left alone."""
    import gc

    from leaderboard.board.cache import SETTLE_FROM_RESULTS, settle_large

    gc.unfreeze()
    try:
        settle_large([{"public_id": f"EP-{i}"} for i in range(SETTLE_FROM_RESULTS - 1)])
        assert gc.get_freeze_count() == 0
        large = [{"public_id": f"EP-{i}", "points": [{"point": f"p{i}"}]} for i in range(SETTLE_FROM_RESULTS)]
        settle_large(large)
        assert gc.get_freeze_count() > 2 * SETTLE_FROM_RESULTS  # the snapshot's dicts and lists among them
        assert not any(obj is large for obj in gc.get_objects())  # no longer walked by a full pass
    finally:
        gc.unfreeze()
