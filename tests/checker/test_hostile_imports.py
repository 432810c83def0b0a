"""A generated corpus of hostile tool outputs (tests/checker/hostile_corpus.py: every number replaced by 1e308,
-1e308, a 400-digit integer, a wrong type; each numeric field alone; deep nesting; truncation; a claim of two
million requests) through `portal import` and through previews: findings, never a traceback, never a preview
left `checking`."""

from __future__ import annotations

import contextlib
import io
import json
from collections import Counter

import pytest

from checker.cli.main import main
from previews import services
from tests.checker.hostile_corpus import hostile_corpus
from tests.previews.support import folder_tar

EXTREMES = ("1e308", "-1e308", "400-digit", "-400-digit")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return hostile_corpus(tmp_path_factory.mktemp("hostile"))


def test_portal_import_answers_every_hostile_output_with_findings_not_a_traceback(corpus, tmp_path):
    exits: Counter[int] = Counter()
    for name, folder in corpus.items():
        out, err = io.StringIO(), io.StringIO()
        report = tmp_path / f"{name}.json"
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["import", str(folder), "--json", str(report)])
        assert "Traceback" not in out.getvalue() + err.getvalue(), name
        exits[code] += 1
        assert code in (0, 1, 2), name
        if code == 2:
            continue
        result = json.loads(report.read_text())  # strict JSON: no NaN or Infinity reached it
        errors = [f for f in result["findings"] if f["severity"] == "error"]
        if any(name.endswith(f"-{label}") for label in EXTREMES) and "-field-" not in name:
            # every number extreme: the file and the field are named, with a stable code
            refused = [f for f in errors if f["rule"] == "import-number-out-of-range"]
            assert refused and refused[0]["file"] and refused[0]["pointer"], name
            assert code == 1
        for point in result["points"]:
            for figure in (*point["reported"].values(), *point["recomputed"].values()):
                assert isinstance(figure, int | float) and abs(figure) <= 1e18, name
    assert len(corpus) > 1000 and exits[0] + exits[1] + exits[2] == len(corpus)


@pytest.mark.django_db
def test_previews_of_hostile_outputs_all_finish(
    corpus, role_users, sample_catalog, storage_dir, django_capture_on_commit_callbacks
):
    benchmark, system = sample_catalog
    wholesale = {name: folder for name, folder in corpus.items() if "-field-" not in name}
    states: Counter[str] = Counter()
    for name, folder in wholesale.items():
        with django_capture_on_commit_callbacks(execute=True):
            preview = services.preview_create(
                actor=role_users["submitter"],
                system=system,
                benchmark=benchmark,
                name=name[:120],
                files=[folder_tar(folder)],
            )
        preview.refresh_from_db()
        states[preview.status] += 1
        assert preview.status in ("checked", "failed"), name
        if any(name.endswith(f"-{label}") for label in EXTREMES):
            assert "import-number-out-of-range" in {f["rule"] for f in preview.findings}, name
    assert sum(states.values()) == len(wholesale) > 50
