"""Cost of one SLO finder answer that misses the answer cache, in this process (no server, no database):
1,000 published results of 10-20 points (the curves bench/leaderboard_load.py loads), 400 distinct targets.

    .venv/bin/python bench/slo_query.py [--results 1000] [--queries 400] [--repeat 3]

(a) leaderboard.board.slo.SloIndex: build once per snapshot, then a vectorised mask per query (what the API and the
    page run since issue 10's tail work);
(b) leaderboard.board.slo.slo_rank: the plain per-point loop, the definition, and what every miss ran before.
Prints the build time, the per-query median and p99 of each, and the ratio (b)/(a); checks both give the
same rows. A script, not a test: nothing asserts a time.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from leaderboard_load import _curve  # noqa: E402

from leaderboard.board.slo import SloIndex, SloTargets, slo_rank  # noqa: E402


def results(count: int) -> list[dict]:
    rng = random.Random(7)
    out = []
    for index in range(count):
        curve = _curve(f"sys-{index}", rng, rng.randint(10, 20))
        out.append(
            {
                "public_id": f"EP-{index:05d}",
                "system": f"sys-{index}",
                "organisation": f"org-{index % 50}",
                "accelerators": rng.choice([1, 2, 4, 8, 16, 32, None]),
                "bundle_sha256": "0" * 64,
                "retracted": False,
                "points": curve["points"],
            }
        )
    return out


def targets(count: int) -> list[SloTargets]:
    rng = random.Random(11)
    return [
        SloTargets(
            ttft_p90_ms_max=rng.choice([100, 150, 200, 300, 500, 800, 1000, 2000]) + rng.randint(0, 49),
            interactivity_min=float(rng.randint(5, 120)),
            power_kw_max=rng.choice([None, None, 50.0, 200.0]),
            accelerators_max=rng.choice([None, None, 8, 16]),
        )
        for _ in range(count)
    ]


def timed(function, queries: list[SloTargets]) -> tuple[list[float], list[list[dict]]]:
    times, answers = [], []
    for query in queries:
        started = time.perf_counter()
        answers.append(function(query))
        times.append((time.perf_counter() - started) * 1000)
    return times, answers


def p99(values: list[float]) -> float:
    return sorted(values)[min(len(values) - 1, int(len(values) * 0.99))]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--results", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    published = results(args.results)
    queries = targets(args.queries)
    print(
        f"{args.results} results, {sum(len(r['points']) for r in published)} points, {len(queries)} targets"
    )
    builds, fast, plain = [], [], []
    for _ in range(args.repeat):
        started = time.perf_counter()
        index = SloIndex(published)
        builds.append((time.perf_counter() - started) * 1000)
        fast_times, fast_answers = timed(index.rank, queries)
        plain_times, plain_answers = timed(lambda q: slo_rank(published, q), queries)
        if fast_answers != plain_answers:
            raise SystemExit("the index and slo_rank disagree")
        fast += fast_times
        plain += plain_times
    print(f"index build: median {statistics.median(builds):.1f} ms (once per snapshot)")
    print(f"(a) SloIndex.rank: median {statistics.median(fast):.2f} ms, p99 {p99(fast):.2f} ms")
    print(f"(b) slo_rank:      median {statistics.median(plain):.2f} ms, p99 {p99(plain):.2f} ms")
    print(f"ratio (b)/(a) of medians: {statistics.median(plain) / statistics.median(fast):.1f}")


if __name__ == "__main__":
    main()
