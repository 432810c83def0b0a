"""Rule sets in the catalog: the preview rule set for short sample runs, marked as such wherever a board shows."""

import pytest
from django.core.exceptions import ValidationError

from catalog.models import Benchmark
from catalog.services import benchmark_ruleset_set
from checker.judge.ruleset import RulesetError, load_ruleset
from tests.factories import BenchmarkFactory

PREVIEW = "endpoints-v1.0-preview"


def test_preview_rule_set_has_the_official_parameters_and_only_short_runs_relaxed():
    official, preview = load_ruleset("endpoints-v1.0"), load_ruleset(PREVIEW)
    assert preview.preview and not official.preview
    assert preview.duration_severity == "warning"
    assert "preview" in preview.description.lower() and "not an official result" in preview.description
    differing = {
        key for key in set(official.raw) | set(preview.raw) if official.raw.get(key) != preview.raw.get(key)
    }
    assert differing == {"name", "description", "preview", "duration_below_minimum"}
    assert official.duration_severity == "error"
    assert (
        preview.min_duration_ms(16, agentic=False) == official.min_duration_ms(16, agentic=False) == 600_000
    )
    assert preview.datasets == official.datasets and preview.models.keys() == official.models.keys()


def test_an_unknown_base_rule_set_is_an_operator_error(tmp_path, monkeypatch):
    import checker.judge.ruleset as ruleset_module

    (tmp_path / "broken.yaml").write_text("name: broken\nextends: no-such-rules\n", encoding="utf-8")
    monkeypatch.setattr(ruleset_module, "RULESETS_DIR", tmp_path)
    with pytest.raises(RulesetError, match="unknown ruleset 'no-such-rules'"):
        load_ruleset("broken")


@pytest.mark.django_db
def test_a_benchmark_names_a_packaged_rule_set(role_users):
    benchmark = Benchmark.objects.get(model_id="llama3_1-8b")
    assert not benchmark.is_preview
    with pytest.raises(ValidationError, match="Unknown rule set"):
        benchmark_ruleset_set(benchmark=benchmark, ruleset_version="endpoints-v9", actor=role_users["chair"])
    benchmark_ruleset_set(benchmark=benchmark, ruleset_version=PREVIEW, actor=role_users["chair"])
    benchmark.refresh_from_db()
    assert benchmark.ruleset_version == PREVIEW and benchmark.is_preview


@pytest.mark.django_db
def test_preview_boards_are_marked_in_the_board_selector_and_the_api(client):
    BenchmarkFactory(model_id="preview-bench", display_name="Preview bench", ruleset_version=PREVIEW)
    BenchmarkFactory(model_id="official-bench", display_name="Official bench")
    index = client.get("/leaderboard/").content.decode()
    card_of = {
        name: index.split(name, 1)[1].split("</a>", 1)[0] for name in ("Preview bench", "Official bench")
    }
    assert "preview rule set" in card_of["Preview bench"]
    assert "preview rule set" not in card_of["Official bench"]
    board = client.get("/leaderboard/preview-bench/").content.decode()
    assert "data-preview-note" in board and "not official" in board
    assert "data-preview-note" not in client.get("/leaderboard/official-bench/").content.decode()
    rows = {row["model_id"]: row for row in client.get("/api/v1/benchmarks/").json()["results"]}
    assert rows["preview-bench"]["ruleset_preview"] is True
    assert rows["official-bench"]["ruleset_preview"] is False
