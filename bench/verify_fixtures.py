"""Check that checker.recompute.replay.recompute_point reproduces the real sample points exactly.

    python bench/verify_fixtures.py

For every run archive in tests/checker/fixtures/run_archives, every value of
performance/result_summary.json that the recompute produces (histograms aside) must match:
integers exactly, floats within 1e-9 relative. Exits non-zero on any mismatch.
"""

from __future__ import annotations

import json
import math
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from checker.recompute.replay import recompute_point  # noqa: E402
from checker.report import Findings  # noqa: E402
from tests.checker.test_recompute import FIXTURES, TOKENIZER, summary_leaves  # noqa: E402 - the test's, not copies


def main() -> int:
    checked = bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for archive in sorted((FIXTURES / "run_archives").glob("*.tar.gz")):
            into = Path(tmp) / archive.name.split(".")[0]
            with tarfile.open(archive) as tar:
                tar.extractall(into, filter="data")
            folder = next(into.iterdir())
            got = recompute_point(
                folder / "events.jsonl", tokenizer=TOKENIZER, findings=Findings(), display=folder.name
            )
            want = json.loads((folder / "performance" / "result_summary.json").read_text())
            for key in want:
                if key not in got:
                    continue  # metadata the recompute does not produce (version, state, ...)
                for where, claimed, value in summary_leaves({key: want[key]}, {key: got[key]}):
                    checked += 1
                    if isinstance(claimed, float) and isinstance(value, int | float):
                        ok = math.isclose(value, claimed, rel_tol=1e-9, abs_tol=0.0)
                    else:
                        ok = value == claimed
                    if not ok:
                        bad += 1
                        print(f"MISMATCH {archive.name} {where}: claimed {claimed!r} recomputed {value!r}")
    print(f"fixtures: {checked} values checked, {bad} mismatches")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
