"""Input kind `run_archives`: official run folders (one load point each), packed as run archives or given unpacked.

A run folder has point.yaml plus performance/result_summary.json or the raw log; it maps to the bundle's
logical files as checker.read.inputs.layout.POINT_FILES says (result_summary.json from performance/, ...). Its
per-request reader replays events.jsonl[.zst] (checker.read.kinds._events).
"""

from __future__ import annotations

from pathlib import Path

from checker.read.inputs.archive import RAW_LOG_NAMES
from checker.read.kinds._events import read_requests


def _is_file(path: Path) -> bool:
    return path.is_file() and not path.is_symlink()


class RunArchivesKind:
    """One official run folder per load point."""

    name = "run_archives"
    label = "Run archives"
    importer = False
    order = 1
    requests = staticmethod(read_requests)

    def detect_folder(self, folder: Path) -> bool:
        return _is_file(folder / "point.yaml") and (
            _is_file(folder / "performance" / "result_summary.json")
            or any(_is_file(folder / name) for name in RAW_LOG_NAMES)
        )

    def claims(self, path: Path) -> bool:
        return False  # a run archive is recognised after it is read into a folder


KIND = RunArchivesKind()
