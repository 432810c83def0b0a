"""Load benchmark of the per-request SLO finder (goodput): 1,000 published results of 10-20 points with 2,000 samples
per point (per-sample arrays stored as the check task stores them), in a throwaway PostgreSQL database, served by
gunicorn with the Redis cache, measured under 64 concurrent clients with locust (headless).

    .venv/bin/python bench/goodput_load.py [--results 1000] [--samples 2000] [--users 64] [--duration 30]
        [--workers 3] [--think 1.0] [--spawn-rate N] [--steady] [--postgres postgres://postgres@127.0.0.1:5432] [--redis redis://127.0.0.1:6379/6]
        [--database NAME] [--var-dir DIR] [--keep] [--reuse] [--http-only] [--port 8770]

First prints the storage per point and the in-process time of one query over 400 distinct targets, one thread
(leaderboard.board.goodput.index.GoodputIndex.ranking; with the rows of one page, as a request builds them; with every row),
and the first SLO query of a fresh web process; then the HTTP scenarios, each after its own warm-up:
- the public API's SLO answer and the SLO page over distinct targets (drawn from 100,000 with 0.1 ms / 0.01 ms
  steps: practically every request misses the answer cache and the response cache, the worst case);
- the buyers' mix: round-number targets (360) drawn Zipf-like, half through the page, half through the API
  (bench/goodput_load.py buyers_targets says why).
Prints p50/p95/p99 (ms) and requests/s, and the load average beside every figure (the machine may be shared). A
script, not a test: nothing asserts a time. The database and the stored arrays are removed at the end unless
--keep; --reuse measures again on what a --keep run left (same --database and --var-dir), without loading, and
leaves them there;
--http-only leaves out the in-process figures (the table must be there: a --reuse run).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# bench/_load.py: python runs bench/ scripts from there
from _load import clear_public_cache, run_locust, status, wait_up, warm
from leaderboard_load import MODEL, analyse, load

ROOT = Path(__file__).resolve().parent.parent


def store_samples(samples_per_point: int) -> tuple[int, int]:
    """Per-sample arrays for every published point, drawn around the point's own figures (TTFT around its P90,
    TPOT around 1000 / its interactivity), stored and linked like the check task does; (points, bytes)."""
    import numpy as np

    from checker.recompute.goodput import SampleSeries
    from leaderboard.models import Publication
    from submissions.checks.samples import point_samples_save
    from submissions.models import PointMetric

    rng = np.random.default_rng(20261202)
    rows, stored_bytes = [], 0
    for publication in Publication.objects.select_related("submission__system").order_by("pk"):
        seen = set()
        for point in publication.curve["points"]:
            if point["point"] in seen:  # the generated curves repeat concurrency 1; one row per point key
                continue
            seen.add(point["point"])
            n = samples_per_point
            ttft_ms = point["ttft_p90_ms"] / 1.3 * rng.lognormal(0.0, 0.2, n)
            tpot_ms = 1000.0 / point["tps_per_user"] / 1.15 * rng.lognormal(0.0, 0.12, n)
            tokens = rng.integers(60, 300, n)
            seconds = float(tokens.sum()) / point["system_tps"]
            series = SampleSeries(
                ttft_ns=(ttft_ms * 1e6).astype(np.int64),
                tpot_ns=tpot_ms * 1e6,
                output_tokens=tokens,
                ok=rng.random(n) > 0.003,
                duration_ns=int(seconds * 1e9),
            )
            key, sha256 = point_samples_save(samples=series)
            stored_bytes += len(series.to_npz())
            rows.append(
                PointMetric(
                    check_run_id=publication.check_run_id,
                    system=publication.submission.system.name,
                    model=MODEL,
                    concurrency=point["concurrency"],
                    key=point["point"],
                    samples_key=key,
                    samples_sha256=sha256,
                    recomputed={},
                )
            )
    PointMetric.objects.bulk_create(rows, batch_size=2000)
    return len(rows), stored_bytes


def distinct_targets(rng: random.Random, count: int) -> list[dict]:
    """Targets no two requests are likely to share (0.1 ms TTFT, 0.01 ms TPOT steps): every answer is ranked
    afresh, nothing is served from the answer cache or the response cache (the worst case)."""
    return [
        {
            "ttft_ms": round(rng.uniform(100, 2000), 1),
            "tpot_ms": round(rng.uniform(5, 30), 2),
            "attainment": rng.choice([90, 95, 99, 99.9]),
        }
        for _ in range(count)
    ]


def buyers_targets(rng: random.Random, count: int) -> list[dict]:
    """Targets as buyers ask them: round numbers (TTFT 100-2,000 ms in 100 ms steps, TPOT 5/10/15/20/30/50 ms,
    goals 90/95/99 %: 360 targets), a few of them popular: drawn Zipf-like (the k-th most asked, in a shuffled
    order, with weight 1 / k^1.1), so that about half the requests ask one of the 20 most popular targets."""
    grid = [
        {"ttft_ms": ttft, "tpot_ms": tpot, "attainment": goal}
        for ttft in range(100, 2100, 100)
        for tpot in (5, 10, 15, 20, 30, 50)
        for goal in (90, 95, 99)
    ]
    rng.shuffle(grid)
    weights = [1 / (k + 1) ** 1.1 for k in range(len(grid))]
    return rng.choices(grid, weights=weights, k=count)


def query(target: dict) -> str:
    return (
        f"benchmark={MODEL}&ttft_ms={target['ttft_ms']}&tpot_ms={target['tpot_ms']}"
        f"&attainment={target['attainment']}"
    )


def _peak_rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def in_process(queries: list[dict]) -> None:
    from django.conf import settings

    from leaderboard.api.results import public_publications
    from leaderboard.board.goodput.index import GoodputRows
    from leaderboard.board.goodput.tables import goodput_index
    from leaderboard.board.goodput.targets import GoodputTargets
    from leaderboard.tasks import goodput_table_build_task

    started = time.perf_counter()
    built = goodput_table_build_task()  # what the publish worker runs after a publication commits
    size = sum(f.stat().st_size for f in settings.PORTAL_GOODPUT_TABLE_DIR.rglob("*.npy"))
    print(
        f"goodput table written by goodput_table_build_task in {time.perf_counter() - started:.1f} s: "
        f"{built}, {size / 2**20:.0f} MiB; this process's peak RSS so far {_peak_rss_mb():.0f} MB"
    )
    started = time.perf_counter()
    index = goodput_index(public_publications(), MODEL)
    print(
        f"first query's index (snapshot from the database, the table memory-mapped) in "
        f"{time.perf_counter() - started:.2f} s: "
        f"{len(index.results)} results, {len(index.points)} points, {index.samples:,} samples; "
        f"RSS {_rss_mb():.0f} MB (the table mapped, read as queries touch it)"
    )
    ranking_ms, page_ms, everything_ms = [], [], []
    for query in queries:
        targets = GoodputTargets(
            ttft_ms=query["ttft_ms"], tpot_ms=query["tpot_ms"], attainment=query["attainment"] / 100
        )
        t = time.perf_counter()
        ranking = index.ranking(targets)
        ranking_ms.append((time.perf_counter() - t) * 1000)
        GoodputRows(index, ranking, targets, None)[:100]
        page_ms.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        index.rank(targets)
        everything_ms.append((time.perf_counter() - t) * 1000)
    for name, times in (
        ("ranking (GoodputIndex.ranking)", ranking_ms),
        ("ranking + the rows of one page (100)", page_ms),
        ("ranking + every row (GoodputIndex.rank)", everything_ms),
    ):
        times.sort()
        pick = lambda q: times[min(len(times) - 1, int(q * len(times)))]  # noqa: E731, B023
        print(
            f"in process, {len(times)} distinct targets, {name}: p50 {pick(0.5):.1f} ms, p95 {pick(0.95):.1f} ms, "
            f"p99 {pick(0.99):.1f} ms, max {times[-1]:.1f} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--users", type=int, default=64)
    parser.add_argument("--duration", type=int, default=30)
    parser.add_argument(
        "--workers", type=int, default=3, help="gunicorn sync workers (3, as deploy/gunicorn.conf.py starts)"
    )
    parser.add_argument("--think", type=float, default=1.0)
    parser.add_argument(
        "--spawn-rate",
        type=float,
        default=0,
        help="clients started per second (default: all at once, a burst)",
    )
    parser.add_argument(
        "--steady",
        action="store_true",
        help="count only the steady state: locust's --reset-stats drops what was measured while clients started",
    )
    parser.add_argument("--postgres", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/6")
    parser.add_argument("--port", type=int, default=8770)
    parser.add_argument(
        "--database", default=f"bench_goodput_{os.getpid()}", help="the throwaway database's name"
    )
    parser.add_argument(
        "--var-dir", help="PORTAL_VAR_DIR of the run (stored arrays, goodput tables); default a new one"
    )
    parser.add_argument("--keep", action="store_true", help="keep the database and the var dir at the end")
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="the database and --var-dir were loaded by a --keep run: measure only",
    )
    parser.add_argument("--http-only", action="store_true", help="no in-process figures (with --reuse)")
    args = parser.parse_args()
    if args.reuse and not args.var_dir:
        parser.error("--reuse needs the --var-dir of the --keep run")

    import psycopg

    database = args.database
    if not args.reuse:
        with psycopg.connect(f"{args.postgres}/postgres", autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{database}"')
    var_dir = args.var_dir or tempfile.mkdtemp(prefix="bench-goodput-var-")
    env = {
        **os.environ,
        "DATABASE_URL": f"{args.postgres}/{database}",
        "REDIS_URL": args.redis,
        "SECRET_KEY": "bench-only-secret-key-0123456789-abcdefghijklmnop",
        "PORTAL_ENDPOINT_KEY": "bench-only-endpoint-key-0123456789-abcdefghijklmnop",
        "DEBUG": "0",
        "DJANGO_SETTINGS_MODULE": "portal.settings",
        "PORTAL_VAR_DIR": var_dir,
        "PORTAL_GOODPUT_TABLE_ON_PUBLISH": "0",  # no worker here: the bench runs the task itself, timed
    }
    os.environ.update(env)
    sys.path.insert(0, str(ROOT))
    gunicorn = None
    try:
        import django

        if not args.reuse:
            subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
            django.setup()
            started = time.time()
            public_ids = load(args.results)
            points, stored = store_samples(args.samples)
            analyse()  # the point rows too
            print(
                f"loaded {len(public_ids)} published results, {points} points x {args.samples} samples in "
                f"{time.time() - started:.1f} s; per-sample arrays {stored / points / 1024:.1f} KiB per point "
                f"({stored / points / args.samples:.1f} bytes per sample, {stored / 2**20:.0f} MiB in all)"
            )
        else:
            django.setup()
        from leaderboard.board.cache import public_cache_bump

        print(f"cleared {clear_public_cache()} cached public entries of earlier runs from Redis")
        public_cache_bump()
        rng = random.Random(7)
        in_process_targets = distinct_targets(rng, 400)
        if not args.http_only:
            in_process(in_process_targets)
        from django.db import connection

        connection.close()
        base = f"http://127.0.0.1:{args.port}"
        # sync workers, as deploy/gunicorn.conf.py has them; not that file itself: with it (its access log sent to
        # /dev/null) the API's p99 was 2-3x higher in back-to-back runs (docs/performance.md)
        gunicorn = subprocess.Popen(
            [str(ROOT / ".venv/bin/gunicorn"), "portal.wsgi", "-w", str(args.workers), "-b", f"127.0.0.1:{args.port}",
             "--timeout", "300", "--log-level", "warning"],
            cwd=ROOT, env=env, start_new_session=True,
        )  # fmt: skip
        wait_up(base)
        api, page = "/api/v1/public/slo/?", "/leaderboard/slo/?"
        started = time.perf_counter()
        first = status(base + api + query(distinct_targets(rng, 1)[0]))
        print(
            f"first SLO query of a fresh web process: {(time.perf_counter() - started) * 1000:.0f} ms ({first})"
        )
        distinct = [query(t) for t in distinct_targets(rng, 100_000)]
        mix = [query(t) for t in buyers_targets(rng, 20_000)]
        scenarios = [
            ("goodput SLO query, distinct targets", [api + q for q in distinct]),
            ("goodput SLO page, distinct targets", [page + q for q in distinct]),
            # half the buyers use the page, half the API: one answer (cached) serves both
            ("goodput SLO, buyers' mix", [(api if i % 2 else page) + q for i, q in enumerate(mix)]),
        ]
        out = Path(tempfile.mkdtemp(prefix="bench-locust-"))
        print(
            f"{args.users} concurrent clients (think time {args.think} s), {args.duration} s per scenario, "
            f"gunicorn -w {args.workers}, clients started {args.spawn_rate or args.users:g}/s"
            + (", steady state only" if args.steady else "")
        )
        print(
            f"{'scenario':38} {'requests':>9} {'fail':>5} {'p50 ms':>7} {'p95 ms':>7} {'p99 ms':>7} {'req/s':>8}"
        )
        for name, paths in scenarios:
            # each worker maps its index on its first query; warm them all before measuring (targets of their own)
            warm(
                base,
                [u + query(t) for t in distinct_targets(rng, 4) for u in (api, page)],
                {},
                repeat=1,
                threads=4,
            )
            print(f"  load average before {name}: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
            r = run_locust(
                name, base, paths, users=args.users, duration=args.duration, out=out, think_s=args.think,
                locust=ROOT / ".venv/bin/locust", spawn_rate=args.spawn_rate or args.users,
                reset_stats=args.steady,
            )  # fmt: skip
            print(
                f"{name:38} {r['requests']:>9} {r['failures']:>5} {r['p50']:>7} {r['p95']:>7} {r['p99']:>7} "
                f"{r['rps']:>8.1f}   load {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
            )
    finally:
        if gunicorn is not None:
            os.killpg(gunicorn.pid, signal.SIGTERM)
            gunicorn.wait(timeout=30)
        from django.db import connections

        connections.close_all()
        if args.keep or args.reuse:  # what a --reuse run measured on is still there for the next one
            print(f"kept {database} and {var_dir} (--reuse --database {database} --var-dir {var_dir})")
        else:
            with psycopg.connect(f"{args.postgres}/postgres", autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
            shutil.rmtree(var_dir, ignore_errors=True)
            print(f"dropped {database} and the stored arrays")


if __name__ == "__main__":
    main()
