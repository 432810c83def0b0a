"""Adding an input kind is adding one module to checker.read.kinds: `portal import` and the preview upload find it there.

The test writes a small importer for a made-up tool ("toyperf", a JSON file of per-request records and the
tool's own summary) into a folder of its own, puts that folder on the package's search path as a new module of
it would be, and imports a file of that tool: nothing else in the project is told about the new kind.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from checker.cli.import_pipeline import import_runs
from checker.read import kinds

TOY_IMPORTER = '''
"""Input kind `toyperf`: a made-up tool's toyperf.json (for the registry's test)."""

import json

from checker.read.kinds.base import ImportedPoint, ImportedRun, RequestRecord


class ToyPerf:
    name = "toyperf"
    label = "ToyPerf toyperf.json"
    importer = True

    def detect_folder(self, folder):
        return (folder / "toyperf.json").is_file()

    def claims(self, path):
        return path.name == "toyperf.json"

    def _records(self, point):
        return [
            RequestRecord(
                issued_s=r["start"], first_token_s=r.get("first"), end_s=r.get("end"),
                output_tokens=r.get("tokens"), ok=r["ok"],
            )
            for r in point["requests"]
        ]

    def read(self, paths, *, findings, limits):
        data = json.loads(paths[0].read_text())
        run = ImportedRun(tool=self.name, tool_version=data["version"])
        for point in data["points"]:
            records = self._records(point)
            done = [r for r in records if r.ok]
            run.points.append(
                ImportedPoint(
                    concurrency=point["concurrency"],
                    label=f"c{point['concurrency']}",
                    file=paths[0].name,
                    reported=point["summary"],
                    recomputed={
                        "requests_completed": len(done),
                        "requests_failed": len(records) - len(done),
                        "request_throughput": len(done) / point["duration_s"],
                    },
                    requests=records,
                    duration_s=point["duration_s"],
                )
            )
        return run

    def requests(self, paths, *, findings, limits):
        data = json.loads(paths[0].read_text())
        for point in data["points"]:
            yield from self._records(point)


KIND = ToyPerf()
'''


def _toy_output(path: Path) -> Path:
    """A toyperf.json of one point: 4 requests over 2 s, one of them failed."""
    requests = [
        {"start": 0.0, "first": 0.1, "end": 1.0, "tokens": 10, "ok": True},
        {"start": 0.2, "first": 0.5, "end": 1.5, "tokens": 21, "ok": True},
        {"start": 1.0, "first": 1.2, "end": 1.9, "tokens": 8, "ok": True},
        {"start": 1.1, "ok": False},
    ]
    summary = {"requests_completed": 3, "requests_failed": 1, "request_throughput": 1.5}
    point = {"concurrency": 2, "duration_s": 2.0, "requests": requests, "summary": summary}
    path.write_text(json.dumps({"version": "0.1", "points": [point]}))
    return path


@pytest.fixture
def toy_kind(tmp_path, monkeypatch):
    folder = tmp_path / "kinds"
    folder.mkdir()
    (folder / "toyperf.py").write_text(TOY_IMPORTER)
    monkeypatch.setattr(kinds, "__path__", [*kinds.__path__, str(folder)])
    kinds.kinds.cache_clear()
    yield
    kinds.kinds.cache_clear()
    sys.modules.pop("checker.read.kinds.toyperf", None)


def test_a_new_kind_module_is_all_it_takes_for_portal_import(toy_kind, tmp_path):
    output = _toy_output(tmp_path / "toyperf.json")
    assert "toyperf" in {k.name for k in kinds.importers()}
    assert kinds.importer_for(output).name == "toyperf"

    result = import_runs([output])

    assert result.tool == "toyperf" and result.tool_version == "0.1"
    assert not [f for f in result.findings if f.severity == "error"]
    (point,) = result.points
    assert (
        point["reported"]
        == point["recomputed"]
        == {
            "request_throughput": 1.5,
            "requests_completed": 3,
            "requests_failed": 1,
        }
    )
    portal = point["portal"]
    assert portal["requests"] == 4 and portal["requests_ok"] == 3
    assert portal["system_tps"] == pytest.approx((10 + 21 + 8) / 2.0)


def test_without_the_module_the_same_file_is_not_recognised(tmp_path):
    output = _toy_output(tmp_path / "toyperf.json")
    assert kinds.importer_for(output) is None
    result = import_runs([output])
    assert [f.rule for f in result.findings if f.severity == "error"] == ["import-unrecognised"]
