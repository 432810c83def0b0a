"""Input kind `bundle`: an MLPerf Endpoints submission bundle, <org>/<submission_id>/results/<system>/<model>/r<C>/.

Its point folders map to logical files as checker.read.inputs.layout.POINT_FILES says; its per-request reader is
the raw log's (checker.read.kinds._events), since a portal bundle point carries events.jsonl[.zst].
"""

from __future__ import annotations

from pathlib import Path

from checker.read.kinds._events import read_requests


class BundleKind:
    """A submission bundle folder (it holds results/)."""

    name = "bundle"
    label = "Submission bundle"
    importer = False
    order = 0
    requests = staticmethod(read_requests)

    def detect_folder(self, folder: Path) -> bool:
        results = folder / "results"
        return results.is_dir() and not results.is_symlink()

    def claims(self, path: Path) -> bool:
        return False  # a bundle archive is recognised after it is read into a folder


KIND = BundleKind()
