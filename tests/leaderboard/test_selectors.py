"""The leaderboard's reads: published only, retracted results out of the rankings but keeping their page,
filters, and a query count that does not grow with the number of results."""

from __future__ import annotations

import pytest
from django.db import connection
from django.http import Http404
from django.test.utils import CaptureQueriesContext

from leaderboard.board import selectors
from leaderboard.board.selectors import LeaderboardFilters
from tests.factories import BenchmarkFactory, OrganisationFactory, PublicationFactory, SystemFactory
from tests.leaderboard.support import publish

pytestmark = pytest.mark.django_db


def test_rankings_hold_published_not_retracted_results_by_peak_throughput():
    benchmark = BenchmarkFactory()
    slow = publish(benchmark=benchmark, scale=1.0)
    fast = publish(benchmark=benchmark, scale=3.0)
    retracted = publish(benchmark=benchmark, scale=9.0, retracted=True)
    scheduled = PublicationFactory(scheduled=True, submission__benchmark=benchmark)
    ranked = selectors.publications_ranked(benchmark)
    assert [p.public_id for p in ranked] == [fast.public_id, slow.public_id]
    assert selectors.publication_counts() == {benchmark.pk: 2}
    assert selectors.publication_public(retracted.public_id).is_retracted  # keeps its page
    with pytest.raises(Http404):
        selectors.publication_public(scheduled.public_id)
    assert scheduled.pk not in {p.pk for p in selectors.publications_latest()}


def test_filters_by_division_availability_organisation_accelerator_and_power():
    benchmark = BenchmarkFactory()
    nimbus = OrganisationFactory(name="NimbusCloud", slug="nimbuscloud")
    open_one = publish(benchmark=benchmark, division="open", availability="preview")
    nimbus_one = publish(benchmark=benchmark, organisation=nimbus)
    other_accelerator = publish(
        benchmark=benchmark,
        system=SystemFactory(
            description={
                "node_types": [
                    {
                        "number_of_nodes": 2,
                        "accelerator_info": [{"accelerator_model_name": "ZX-9", "accelerators_per_node": 4}],
                    }
                ]
            }
        ),
    )

    def ids(**filters):
        return {p.public_id for p in selectors.publications_ranked(benchmark, LeaderboardFilters(**filters))}

    assert ids(division="open") == {open_one.public_id}
    assert ids(availability="preview") == {open_one.public_id}
    assert ids(organisation="nimbuscloud") == {nimbus_one.public_id}
    assert ids(accelerator="ZX-9") == {other_accelerator.public_id}
    assert ids(power="provisioned") == {open_one.public_id, nimbus_one.public_id, other_accelerator.public_id}
    assert ids(power="measured") == set()
    board = selectors.leaderboard_for(benchmark)
    assert ("ZX-9", "ZX-9") in board.options["accelerator"] and ("AX-1 GPU", "AX-1 GPU") in board.options[
        "accelerator"
    ]


def test_history_and_compare():
    benchmark = BenchmarkFactory()
    first = publish(benchmark=benchmark, days_ago=30)
    second = publish(benchmark=benchmark, system=first.submission.system, scale=1.5)
    other = publish(benchmark=benchmark)
    assert [p.public_id for p in selectors.system_history(first.submission.system_id)] == [
        first.public_id,
        second.public_id,
    ]
    assert selectors.publications_compare(benchmark, [other.public_id, first.public_id]) == [other, first]
    with pytest.raises(ValueError):
        selectors.publications_compare(benchmark, [first.public_id])
    with pytest.raises(ValueError):
        selectors.publications_compare(benchmark, [first.public_id, "EP-999999"])
    with pytest.raises(Http404):
        selectors.system_history(SystemFactory().pk)


def test_queries_do_not_grow_with_the_number_of_results():
    benchmark = BenchmarkFactory()
    publish(benchmark=benchmark)
    with CaptureQueriesContext(connection) as few:
        selectors.leaderboard_for(benchmark)
        selectors.benchmarks_with_counts()
        selectors.publications_latest()
    for _ in range(6):
        publish(benchmark=benchmark)
    with CaptureQueriesContext(connection) as many:
        board = selectors.leaderboard_for(benchmark)
        selectors.benchmarks_with_counts()
        latest = selectors.publications_latest()
        shown = [  # what the pages read of each row
            (p.record.organisation_name, p.record.system_name, p.record.bundle_sha256)
            for p in board.results + latest
        ]
    assert len(board.results) == 7 and len(shown) == 7 + len(latest)
    assert len(many) == len(few) <= 10


def test_an_official_board_never_ranks_a_result_checked_under_a_preview_rule_set():
    official = BenchmarkFactory()
    ranked = publish(benchmark=official, scale=1.0)
    preview_checked = publish(benchmark=official, scale=5.0)
    preview_checked.check_run.ruleset = "endpoints-v1.0-preview"
    preview_checked.check_run.save(update_fields=["ruleset"])
    assert [p.public_id for p in selectors.publications_ranked(official)] == [ranked.public_id]
    # On a board of a preview benchmark (marked so on every board selector) the preview result ranks.
    preview = BenchmarkFactory(ruleset_version="endpoints-v1.0-preview")
    on_preview = publish(benchmark=preview, scale=2.0)
    on_preview.check_run.ruleset = "endpoints-v1.0-preview"
    on_preview.check_run.save(update_fields=["ruleset"])
    assert [p.public_id for p in selectors.publications_ranked(preview)] == [on_preview.public_id]
