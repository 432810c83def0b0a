"""A generated corpus of hostile tool outputs (tests/checker/hostile_corpus.py: every number replaced by 1e308,
-1e308, a 400-digit integer, a wrong type; each numeric field alone; deep nesting; truncation; a claim of two
million requests) through `portal import` and through previews: findings, never a traceback, never a preview
left `checking`; and every value of the wrong type or out of range that the importer reads named by an `import-*`
finding with its file and field (a field the importer does not read changes nothing the user sees)."""

from __future__ import annotations

import contextlib
import io
import json
from collections import Counter
from pathlib import Path

import pytest

from checker.cli.main import main
from previews import services
from tests.checker.hostile_corpus import (
    BASES,
    OUT_OF_RANGE,
    WRONG_TYPES,
    hostile_corpus,
    mutation,
    original_case,
)
from tests.previews.support import folder_tar

EXTREMES = ("1e308", "-1e308", "400-digit", "-400-digit")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return hostile_corpus(tmp_path_factory.mktemp("hostile"))


def _import(folder: Path, report: Path) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["import", str(folder), "--json", str(report)])
    return code, out.getvalue() + err.getvalue()


def _as_seen(report: Path, folder: Path) -> str:
    """The JSON report with the case's folder name (in labels and file names) taken out."""
    return report.read_text().replace(folder.name, "<case>")


def _field_of(pointer: str | None) -> str | None:
    """The field a JSON pointer ends in (list indexes skipped: /ttfts/3 is the field ttfts)."""
    keys = [part for part in (pointer or "").split("/") if part and not part.isdigit()]
    return keys[-1].replace("~1", "/").replace("~0", "~") if keys else None


def _names(finding: dict, files: frozenset[str], key: str | None = None) -> bool:
    return (
        finding["rule"].startswith("import-")
        and bool(finding["file"])
        and Path(finding["file"]).name in files
        and (finding["pointer"] or "").startswith("/")
        and (key is None or _field_of(finding["pointer"]) == key)
    )


def test_portal_import_answers_every_hostile_output_with_findings_not_a_traceback(corpus, tmp_path):
    originals = {}
    for tool in BASES:
        folder = original_case(tmp_path / "original", tool)
        code, printed = _import(folder, tmp_path / f"{tool}-original.json")
        assert code == 0 and "Traceback" not in printed
        originals[tool] = _as_seen(tmp_path / f"{tool}-original.json", folder)
    exits: Counter[int] = Counter()
    fields: Counter[tuple[str, str]] = Counter()
    for name, folder in corpus.items():
        report = tmp_path / f"{name}.json"
        code, printed = _import(folder, report)
        assert "Traceback" not in printed, name
        exits[code] += 1
        assert code in (0, 1, 2), name  # 2: no load point could be read
        result = json.loads(report.read_text())  # strict JSON: no NaN or Infinity reached it
        errors = [f for f in result["findings"] if f["severity"] == "error"]
        case = mutation(name)
        if case.kind == "every" and case.value in EXTREMES:
            # every number extreme: the file and the field are named, with a stable code
            refused = [f for f in errors if f["rule"] == "import-number-out-of-range"]
            assert refused and refused[0]["file"] and refused[0]["pointer"], name
            assert code in (1, 2)
        if case.kind == "every" and case.value in (*WRONG_TYPES, "negative"):
            rule = "import-field-type" if case.value in WRONG_TYPES else "import-number-out-of-range"
            named = [f for f in errors if f["rule"] == rule and _names(f, case.files)]
            assert named and code in (1, 2), name
            assert all(Path(f["file"]).name in case.files for f in errors if f["rule"] == rule), name
        if case.kind == "field":
            assert case.value in (*WRONG_TYPES, *OUT_OF_RANGE)
            # each field alone of the wrong type or out of range: an import-* finding names its file and field,
            # or the importer does not read that field and the import is exactly the unchanged output's
            if any(_names(f, case.files, case.key) for f in errors):
                fields[(case.value, "named")] += 1
            else:
                assert _as_seen(report, folder) == originals[case.tool], name
                fields[(case.value, "not read")] += 1
        for point in result["points"]:
            for figure in (*point["reported"].values(), *point["recomputed"].values()):
                assert isinstance(figure, int | float) and abs(figure) <= 1e18, name
    assert len(corpus) > 1000 and exits[0] + exits[1] + exits[2] == len(corpus)
    # the extremes are named wherever they are, read or not; a string only where the importer reads a number
    assert sum(fields.values()) == sum(mutation(name).kind == "field" for name in corpus)
    assert fields[("string", "named")] >= 60, fields
    assert all(fields[(value, "not read")] == 0 for value in EXTREMES), fields


def test_a_string_where_vllm_writes_a_number_is_named_in_portal_import_output(tmp_path):
    folder, _ = BASES["vllm_bench"]
    written = json.loads((folder / "c1.json").read_text())
    written["duration"] = str(written["duration"])
    written["ttfts"][3] = [written["ttfts"][3]]
    (tmp_path / "c1.json").write_text(json.dumps(written))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["import", str(tmp_path)])
    printed = out.getvalue()
    assert code == 1
    assert "error: import-field-type: c1.json /duration: the text" in printed
    assert "where vLLM writes a number; it was read as missing." in printed
    assert "c1.json /ttfts/3: a list of 1 item(s) where vLLM writes a number" in printed
    assert "Fix: Import the file exactly as vLLM wrote it" in printed


def test_aiperf_records_are_named_by_line_and_a_negative_count_is_out_of_range(tmp_path):
    folder, _ = BASES["aiperf"]
    lines = (folder / "profile_export.jsonl").read_text().splitlines()
    third = json.loads(lines[2])
    third["metadata"]["request_start_ns"] = str(third["metadata"]["request_start_ns"])
    lines[2] = json.dumps(third)
    (tmp_path / "profile_export.jsonl").write_text("\n".join(lines) + "\n")
    summary = json.loads((folder / "profile_export_aiperf.json").read_text())
    summary["request_count"]["avg"] = -8
    (tmp_path / "profile_export_aiperf.json").write_text(json.dumps(summary))
    code, _ = _import(tmp_path, tmp_path / "report.json")
    findings = json.loads((tmp_path / "report.json").read_text())["findings"]
    assert code == 1
    where = {(f["rule"], f["file"].split("/")[-1], f["line"], f["pointer"]) for f in findings}
    assert ("import-field-type", "profile_export.jsonl", 3, "/metadata/request_start_ns") in where
    assert ("import-number-out-of-range", "profile_export_aiperf.json", None, "/request_count/avg") in where
    refused = next(f for f in findings if f["pointer"] == "/request_count/avg")
    assert refused["message"].endswith(
        "-8 where AIPerf writes a whole number of at least 0; it was read as missing."
    )


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
        case = mutation(name)
        if case.kind == "every" and case.value in EXTREMES:
            assert "import-number-out-of-range" in {f["rule"] for f in preview.findings}, name
        if case.kind == "every" and case.value in WRONG_TYPES:
            named = [f for f in preview.findings if f["rule"] == "import-field-type" and f["pointer"]]
            assert named and all(Path(f["file"]).name in case.files for f in named), name
    assert sum(states.values()) == len(wholesale) > 50
