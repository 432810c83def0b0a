"""The docs generated from the code say what the code says: the import contracts in docs/portal.md are
pyproject.toml's, and docs/modules.md names every module of every app with its own docstring (issue 36)."""

from __future__ import annotations

from pathlib import Path

import pytest

from portal.docs_generated import BLOCKS, ROOT, doc_generated, generated_pages


@pytest.mark.parametrize("path", sorted(generated_pages()), ids=lambda path: path.name)
def test_each_generated_page_is_what_the_code_writes_now(path: Path):
    assert path.read_text(encoding="utf-8") == generated_pages()[path], (
        f"{path.relative_to(ROOT)} drifted from the code: run python manage.py layout_doc --write"
    )


def test_the_module_map_names_every_module_and_its_first_sentence():
    text = (ROOT / "docs" / "modules.md").read_text(encoding="utf-8")
    assert "| `portal.policy` | The workflow policy's machinery" in text
    assert "| `leaderboard.evidence` |" in text and "| `checker.read` |" in text
    assert "migrations" not in text  # migrations are history, not the map


def test_a_page_that_lost_its_markers_is_refused_by_name():
    contracts = next(block for block in BLOCKS if block.name == "contracts")
    with pytest.raises(ValueError, match="contracts"):
        doc_generated("portal.md", "# a page\n" + contracts.start + "\n(no end marker)\n")


def test_a_new_contract_shows_in_the_table(monkeypatch):
    import portal.docs_generated as generated

    real = generated._pyproject()
    extra = {
        "id": "example",
        "type": "forbidden",
        "name": "Example contract",
        "source_modules": ["previews.models"],
        "forbidden_modules": ["spotchecks"],
    }
    real["tool"]["importlinter"]["contracts"].append(extra)
    monkeypatch.setattr(generated, "_pyproject", lambda: real)
    table = generated.contracts_markdown()
    assert (
        "| `example` | forbidden | Example contract | `previews.models` never import `spotchecks` |" in table
    )
