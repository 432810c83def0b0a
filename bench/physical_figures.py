"""Physical-consistency figures of real runs: max and mean in flight, implied concurrency and the bounds the rules
judge them against (checker/judge/rules/physical.py; docs/rules.md, "Physical consistency", quotes them).

    .venv/bin/python bench/physical_figures.py [RUN_ARCHIVE ...] [--tokenizer tokenizer.json]

Without arguments: the seven AX-8000 sample run archives of tests/checker/fixtures. Each archive is checked alone
under the preview rule set (the sample runs are short); one line per point."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from checker.cli.local_check import check

FIXTURES = Path(__file__).parents[1] / "tests" / "checker" / "fixtures"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("archives", nargs="*", type=Path)
    parser.add_argument("--tokenizer", type=Path, default=FIXTURES / "tokenizer" / "tokenizer.json")
    args = parser.parse_args()
    archives = args.archives or sorted((FIXTURES / "run_archives").glob("AX-8000_c*.tar.gz"))
    print(
        f"{'archive':26} {'C':>4} {'max':>4} {'mean':>7} {'mean/C':>6} {'min':>7} "
        f"{'implied':>8} {'impl/C':>6} {'bound':>7} {'p90/avg':>7} {'ttft%':>6}  rules"
    )
    started = time.perf_counter()
    for archive in archives:
        report = check([archive], tokenizer=args.tokenizer, ruleset="endpoints-v1.0-preview")
        fired = sorted(
            {
                f.rule
                for f in report.findings
                if f.rule.startswith(("in-flight", "implied-", "raw-log-dup", "concurrency-declared"))
            }
        )
        for point in report.points:
            physical = point.extra.get("physical", {})
            c = physical.get("declared_concurrency") or point.concurrency
            mean = physical.get("mean_in_flight") or 0.0
            implied = physical.get("implied_concurrency") or 0.0
            print(
                f"{archive.name:26} {c:4d} {physical.get('max_in_flight', 0):4d} {mean:7.2f} {mean / c:6.3f} "
                f"{physical.get('mean_in_flight_min', 0.0):7.2f} {implied:8.2f} {implied / c:6.3f} "
                f"{physical.get('implied_concurrency_max', 0.0):7.2f} {physical.get('tpot_p90_over_mean', 0.0):7.3f} "
                f"{100 * physical.get('ttft_share', 0.0):5.1f}%  {', '.join(fired) or '-'}"
            )
    print(f"{len(archives)} archive(s) in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
