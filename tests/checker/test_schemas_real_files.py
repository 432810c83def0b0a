"""Every schema accepts every unedited file the official tools wrote: each descriptor of every real sample in
/work/shared/samples (single-turn, extension, second system, agentic) and of the project's fixtures, loose or inside
a run archive, validated by the schema its name selects (checker.read.schema_check.SCHEMA_FOR_FILE)."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest
import yaml

from checker.read.schema_check import SCHEMA_FOR_FILE, validate
from checker.report import Findings

SHARED = Path("/work/shared/samples")
FIXTURES = Path(__file__).parent / "fixtures"
ROOTS = [root for root in (SHARED, FIXTURES) if root.is_dir()]


def _parse(name: str, data: bytes):
    return yaml.safe_load(data) if name.endswith(".yaml") else json.loads(data)


def _real_files() -> list[tuple[str, str, bytes]]:
    """(display, file name, bytes) of every descriptor, loose or in a .tar.gz run archive."""
    found = []
    for root in ROOTS:
        for path in sorted(root.rglob("*")):
            if path.name in SCHEMA_FOR_FILE and path.is_file():
                found.append((str(path), path.name, path.read_bytes()))
            elif path.name.endswith(".tar.gz"):
                with tarfile.open(path) as tar:
                    for member in tar.getmembers():
                        name = member.name.rsplit("/", 1)[-1]
                        if name in SCHEMA_FOR_FILE and member.isfile():
                            data = tar.extractfile(member).read()  # type: ignore[union-attr]
                            found.append((f"{path}:{member.name}", name, data))
    return found


REAL = _real_files()


def test_the_walk_reaches_every_kind_of_sample():
    displays = "\n".join(d for d, _, _ in REAL)
    for where in (
        "agentic/run_archives/ZX-2_agentic_c8",
        "ZX-2_c2_nowarmup",
        "agentic/bundle_failure",
        "NB-2_c64",
    ):
        assert where in displays
    assert {name for _, name, _ in REAL} >= {
        "point.yaml",
        "system_desc.json",
        "result_summary.json",
        "accuracy_results.json",
        "system_power.json",
    }


@pytest.mark.parametrize(("display", "name", "data"), REAL, ids=[d for d, _, _ in REAL])
def test_every_schema_accepts_every_real_file(display, name, data):
    findings = Findings()
    assert validate(_parse(name, data), SCHEMA_FOR_FILE[name], display=display, findings=findings)
    assert [f.message for f in findings] == []


def test_a_run_without_warmup_and_the_agentic_accuracy_entry_are_what_the_client_writes():
    """The two forms the schemas refused before: warmup.n_requests null, extractor/ground_truth_column null."""
    with tarfile.open(FIXTURES / "agentic/run_archives/ZX-2_agentic_c2_http500.tar.gz") as tar:
        by_name = {m.name.rsplit("/", 1)[-1]: m for m in tar.getmembers() if m.isfile()}
        summary = json.load(io.BytesIO(tar.extractfile(by_name["result_summary.json"]).read()))  # type: ignore[union-attr]
        accuracy = json.load(io.BytesIO(tar.extractfile(by_name["accuracy_results.json"]).read()))  # type: ignore[union-attr]
    assert summary["run_config"]["warmup"]["n_requests"] is None
    entry = accuracy["accuracy_scores"][0]
    assert entry["extractor"] is None and entry["ground_truth_column"] is None
    findings = Findings()
    summary["run_config"]["warmup"]["n_requests"] = -1  # still a count when present
    assert not validate(summary, "result_summary", display="s", findings=findings)
    assert [f.rule for f in findings] == ["schema-result-summary"]
    assert "/run_config/warmup/n_requests" in findings[0].message
