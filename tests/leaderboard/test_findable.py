"""The buyer's tools are findable: the navigation links the SLO finder and the procurement report, the home page
starts from the buyer's question, every result page links "does this meet my SLO?" prefilled."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.test import Client

from leaderboard.board.cache import public_cache_bump
from tests.factories import BenchmarkFactory
from tests.leaderboard.support import publish

pytestmark = pytest.mark.django_db


@pytest.fixture
def result(role_users, storage_dir):
    public_cache_bump()
    return publish(benchmark=BenchmarkFactory(model_id="find-8b", display_name="Find 8B"))


def test_every_public_page_links_the_slo_finder_and_the_procurement_report(result):
    for url in ("/", "/leaderboard/", "/leaderboard/find-8b/", f"/results/{result.public_id}/"):
        html = Client().get(url).content.decode()
        nav = re.search(r'<nav class="main-nav".*?</nav>', html, re.S).group(0)
        assert 'href="/leaderboard/slo/">SLO finder<' in nav, url
        assert 'href="/leaderboard/procurement/">Procurement<' in nav, url


def test_the_home_page_asks_for_targets_and_sends_them_to_the_finder(result):
    html = Client().get("/").content.decode()
    form = re.search(r'<form method="get" action="/leaderboard/slo/".*?</form>', html, re.S).group(0)
    for name in ("benchmark", "ttft_ms", "interactivity", "attainment"):
        assert f'name="{name}"' in form
    # It starts on the benchmark with results, not on whichever benchmark of the catalog comes first.
    assert 'value="find-8b" selected' in form and form.count(" selected") == 1


def test_a_result_page_links_the_finder_prefilled_with_its_benchmark(result):
    html = Client().get(f"/results/{result.public_id}/").content.decode()
    link = unescape(re.search(r'<a href="([^"]+)" data-slo-link>Does this meet my SLO\?</a>', html).group(1))
    assert link.startswith("/leaderboard/slo/?benchmark=find-8b&")
    response = Client().get(link.split("#")[0])
    assert response.status_code == 200
