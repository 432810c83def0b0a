"""Benchmark: bytes a check unpacks to temporary disk per version, and what an over-inflating archive costs
(issue 11: the start and join steps unpacked every raw log they never read; a 19 MB archive inflating to 4 GiB
cost 51 s and 4 GiB of disk per unpack with no finding).

    python bench/check_unpack.py [--bomb-mb 400]

No Django, no database: the checker's own reader (checker.cli.pipeline.open_version) on the steps the worker runs
for one version (submissions/checks/): the start step opens each file to list its points, each point task opens
its own archive (plus the files holding no point), the join opens the whole version. "before" reads every step
with raw logs written (raw_logs=True, the old reading); "now" reads the start and the join descriptors-only
(raw_logs=False), as the worker does now. Printed per version: bytes written to the sandbox per step kind and in
all, and the seconds. Then one archive of random-and-zero padding that gzip packs ~250 times (under the per-member
ratio of 1000) is read without and with the inflation cap of 100 x (PORTAL_CHECK_MAX_INFLATION): seconds, bytes
inflated and whether a finding says so. A script, not a test: nothing asserts.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from checker.cli.pipeline import list_points, open_version  # noqa: E402
from checker.read.inputs import Limits  # noqa: E402

RUN_ARCHIVES = sorted((ROOT / "tests" / "checker" / "fixtures" / "run_archives").glob("AX-8000_c*.tar.gz"))


def _sandbox_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def _open_bytes(paths, *, raw_logs: bool, limits: Limits | None = None) -> tuple[int, list[str], object]:
    with tempfile.TemporaryDirectory() as work:
        with open_version(paths, limits=limits or Limits(), workdir=work, raw_logs=raw_logs) as opened:
            return _sandbox_bytes(Path(work)), list_points(opened.layout), opened


def version_steps(files: list[Path], *, light: bool) -> dict[str, int]:
    """Bytes written by start (every file), the point tasks (each its own file) and the join (all files)."""
    written = {"start": 0, "points": 0, "join": 0}
    owner: dict[str, Path] = {}
    for path in files:
        count, keys, _ = _open_bytes([path], raw_logs=not light)
        written["start"] += count
        for key in keys:
            owner.setdefault(key, path)
    for path in owner.values():
        written["points"] += _open_bytes([path], raw_logs=True)[0]
    written["join"] = _open_bytes(files, raw_logs=not light)[0]
    return written


def bomb(path: Path, megabytes: int) -> None:
    unit = os.urandom(64) + b"\0" * 500
    with tarfile.open(path, "w:gz") as tar:
        data = unit * (megabytes * 1024 * 1024 // len(unit))
        info = tarfile.TarInfo("c1/padding.bin")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--bomb-mb", type=int, default=400, help="inflated size of the padding archive (MiB)")
    args = parser.parse_args()
    stored = sum(p.stat().st_size for p in RUN_ARCHIVES)
    print(f"AX-8000 curve: {len(RUN_ARCHIVES)} run archives, {stored:,} bytes stored")
    print(f"{'reading':<8} {'start':>12} {'points':>12} {'join':>12} {'total':>12} {'seconds':>8}")
    for label, light in (("before", False), ("now", True)):
        started = time.perf_counter()
        steps = version_steps(RUN_ARCHIVES, light=light)
        seconds = time.perf_counter() - started
        total = sum(steps.values())
        print(
            f"{label:<8} {steps['start']:>12,} {steps['points']:>12,} {steps['join']:>12,} {total:>12,} {seconds:>8.2f}"
        )
    with tempfile.TemporaryDirectory() as folder:
        archive = Path(folder) / "AX-8000_c1.tar.gz"
        bomb(archive, args.bomb_mb)
        size = archive.stat().st_size
        print(
            f"\npadding archive: {size:,} bytes, inflating to {args.bomb_mb} MiB ({args.bomb_mb * 1048576 / size:.0f} x)"
        )
        for label, limits in (("no cap", Limits()), ("cap 100 x", Limits(max_inflation=100))):
            started = time.perf_counter()
            written, _, opened = _open_bytes([archive], raw_logs=True, limits=limits)
            seconds = time.perf_counter() - started
            rules = sorted({f.rule for f in opened.findings if f.rule.startswith("archive-")})
            print(
                f"{label:<10} {seconds:6.2f} s, inflated {opened.layout.inflated_bytes:>13,} bytes, "
                f"written {written:>13,}, findings {rules or 'none'}"
            )


if __name__ == "__main__":
    main()
