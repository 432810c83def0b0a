"""Cost cells with a separate input-token price (issue 34, "Cost and energy in every buyer view"): on the result page
and the compare page, the cost per million output tokens at a price per accelerator-hour, plus, with a price per
million input tokens, that price x the point's input tokens per output token (its recomputed token totals); the
inputs stay in the URL; an input price without an hourly price is an error naming its field."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from leaderboard.board.cache import public_cache_bump
from submissions.models import PointMetric
from tests.factories import BenchmarkFactory
from tests.leaderboard.goodput_support import publish_sample_run

pytestmark = pytest.mark.django_db
PRICES = {"price_per_accelerator_hour": "2.5", "price_per_million_input_tokens": "0.4"}


@pytest.fixture
def world(storage_dir):
    public_cache_bump()
    benchmark = BenchmarkFactory(model_id="price-model")
    ax = publish_sample_run(benchmark=benchmark, system_name="Acme_AX-8000", accelerators=8)
    nb = publish_sample_run(benchmark=benchmark, system_name="Nimbus_NB-2", accelerators=2)
    public_cache_bump()
    return {"ax": ax, "nb": nb}


def _expected(publication, accelerators: int) -> dict[int, tuple[float, float, float]]:
    """Per concurrency (tps from the public points API; the input/output token totals the checker recomputed from
    the raw log): (input tokens per output token r, input cost 0.4 x r, 8 x 2.5 / (tps x 3600) x 10^6 + 0.4 x r)."""
    rows = (
        Client().get("/api/v1/public/points/", {"benchmark": "price-model", "limit": 1000}).json()["results"]
    )
    counted = {
        m.concurrency: m.recomputed for m in PointMetric.objects.filter(check_run_id=publication.check_run_id)
    }
    out = {}
    for p in rows:
        if p["public_id"] != publication.public_id:
            continue
        c = int(p["concurrency"])
        ratio = counted[c]["input_sequence_lengths"]["total"] / counted[c]["output_sequence_lengths"]["total"]
        hourly = accelerators * 2.5 / (p["system_tps"] * 3600) * 1e6
        out[c] = (ratio, 0.4 * ratio, hourly + 0.4 * ratio)
    return out


def _cells(html: str, metric: str, table_start: int = 0) -> dict[int, str]:
    out = {}
    for row in re.finditer(r'<tr data-normalised="(\d+)">(.*?)</tr>', html[table_start:], re.S):
        cell = re.search(rf'data-metric="{metric}">(.*?)</td>', row.group(2), re.S)
        out.setdefault(int(row.group(1)), cell.group(1) if cell else None)
    return out


def test_the_result_page_prices_input_tokens_on_top_of_the_hourly_price(world):
    ax = world["ax"]
    response = Client().get(f"/results/{ax.public_id}/", PRICES)
    assert response.status_code == 200
    html = response.content.decode()
    expected = _expected(ax, 8)
    assert expected and all(r > 0 for r, _, _ in expected.values())
    ratios = _cells(html, "input_tokens_per_output_token")
    costs = _cells(html, "cost_per_million_tokens")
    for concurrency, (ratio, input_cost, total) in expected.items():
        assert ratios[concurrency].strip() == f"{ratio:,.3f}", concurrency
        assert costs[concurrency].startswith(f"{total:,.4f}"), (concurrency, costs[concurrency])
        assert f"incl. {input_cost:,.4f} of input" in costs[concurrency]
    # the inputs are kept in the form (and so in the URL the form sends)
    assert 'name="price_per_million_input_tokens" value="0.4"' in html


def test_the_compare_page_prices_each_result_alike(world):
    ids = f"{world['ax'].public_id},{world['nb'].public_id}"
    html = Client().get("/leaderboard/price-model/compare/", {"ids": ids, **PRICES}).content.decode()
    for key, accelerators in (("ax", 8), ("nb", 2)):
        start = html.index(f"Every measured point of {world[key].public_id} normalised")
        costs = _cells(html, "cost_per_million_tokens", start)
        for concurrency, (_, input_cost, total) in _expected(world[key], accelerators).items():
            assert (
                costs[concurrency].startswith(f"{total:,.4f}")
                and f"incl. {input_cost:,.4f}" in costs[concurrency]
            )
    assert "price_per_million_input_tokens=0.4" in html  # the answer's link keeps every input


def test_an_input_price_alone_is_an_error_naming_its_field(world):
    response = Client().get(f"/results/{world['ax'].public_id}/", {"price_per_million_input_tokens": "0.4"})
    assert response.status_code == 400
    assert "Price per million input tokens: give an hourly price too" in response.content.decode()
