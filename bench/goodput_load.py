"""Load benchmark of the per-request SLO finder (goodput): 1,000 published results of 10-20 points with 2,000 samples
per point (per-sample arrays stored as the check task stores them), in a throwaway PostgreSQL database, served by
gunicorn with the Redis cache, measured under 64 concurrent clients with locust (headless).

    .venv/bin/python bench/goodput_load.py [--results 1000] [--samples 2000] [--users 64] [--duration 30]
        [--workers 2] [--think 1.0] [--postgres postgres://postgres@127.0.0.1:5432] [--redis redis://127.0.0.1:6379/6]

First prints the storage per point and the in-process time of one query (leaderboard.goodput.GoodputIndex.rank,
400 distinct targets, one thread), then the HTTP scenarios: the goodput SLO query of the public API over the same
400 targets (answer-cache misses: every answer is ranked from the per-process index), and the SLO page with them.
Prints p50/p95/p99 (ms) and requests/s. A script, not a test: nothing asserts a time. The database and the stored
arrays are removed at the end.
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

from _load import run_locust, wait_up, warm  # bench/_load.py: python runs bench/ scripts from there
from leaderboard_load import MODEL, load

ROOT = Path(__file__).resolve().parent.parent


def store_samples(samples_per_point: int) -> tuple[int, int]:
    """Per-sample arrays for every published point, drawn around the point's own figures (TTFT around its P90,
    TPOT around 1000 / its interactivity), stored and linked like the check task does; (points, bytes)."""
    import numpy as np

    from checker.goodput import SampleSeries
    from leaderboard.models import Publication
    from submissions.checks import point_samples_save
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


def targets(rng: random.Random) -> list[dict]:
    grid = [
        {"ttft_ms": ttft, "tpot_ms": tpot, "attainment": goal}
        for ttft in range(100, 2100, 100)
        for tpot in (5, 10, 15, 20, 30)
        for goal in (90, 95, 99, 99.9)
    ]
    rng.shuffle(grid)
    return grid[:400]


def in_process(queries: list[dict]) -> None:
    from django.conf import settings

    from leaderboard.api.results import public_publications
    from leaderboard.goodput import GoodputTargets, goodput_index
    from leaderboard.tasks import goodput_table_build_task

    started = time.perf_counter()
    built = goodput_table_build_task()  # what the publish worker runs after a publication commits
    size = sum(f.stat().st_size for f in settings.PORTAL_GOODPUT_TABLE_DIR.rglob("*.npy"))
    print(
        f"goodput table written by goodput_table_build_task in {time.perf_counter() - started:.1f} s: "
        f"{built}, {size / 2**20:.0f} MiB"
    )
    started = time.perf_counter()
    index = goodput_index(public_publications(), MODEL)
    print(
        f"first query's index (the table memory-mapped) in {time.perf_counter() - started:.2f} s: "
        f"{len(index.results)} results, {len(index.points)} points, {index.samples:,} samples"
    )
    times = []
    for query in queries:
        t = time.perf_counter()
        index.rank(
            GoodputTargets(
                ttft_ms=query["ttft_ms"], tpot_ms=query["tpot_ms"], attainment=query["attainment"] / 100
            )
        )
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    pick = lambda q: times[min(len(times) - 1, int(q * len(times)))]  # noqa: E731
    print(
        f"one query in process (400 targets): p50 {pick(0.5):.1f} ms, p95 {pick(0.95):.1f} ms, "
        f"p99 {pick(0.99):.1f} ms, max {times[-1]:.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--users", type=int, default=64)
    parser.add_argument("--duration", type=int, default=30)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--think", type=float, default=1.0)
    parser.add_argument("--postgres", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/6")
    parser.add_argument("--port", type=int, default=8770)
    args = parser.parse_args()

    import psycopg

    database = f"bench_goodput_{os.getpid()}"
    with psycopg.connect(f"{args.postgres}/postgres", autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{database}"')
    var_dir = tempfile.mkdtemp(prefix="bench-goodput-var-")
    env = {
        **os.environ,
        "DATABASE_URL": f"{args.postgres}/{database}",
        "REDIS_URL": args.redis,
        "SECRET_KEY": "bench-only-secret-key-0123456789-abcdefghijklmnop",
        "DEBUG": "0",
        "DJANGO_SETTINGS_MODULE": "portal.settings",
        "PORTAL_VAR_DIR": var_dir,
        "PORTAL_GOODPUT_TABLE_ON_PUBLISH": "0",  # no worker here: the bench runs the task itself, timed
    }
    os.environ.update(env)
    sys.path.insert(0, str(ROOT))
    gunicorn = None
    try:
        subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
        import django

        django.setup()
        started = time.time()
        public_ids = load(args.results)
        points, stored = store_samples(args.samples)
        print(
            f"loaded {len(public_ids)} published results, {points} points x {args.samples} samples in "
            f"{time.time() - started:.1f} s; per-sample arrays {stored / points / 1024:.1f} KiB per point "
            f"({stored / points / args.samples:.1f} bytes per sample, {stored / 2**20:.0f} MiB in all)"
        )
        from leaderboard.cache import public_cache_bump

        public_cache_bump()
        queries = targets(random.Random(7))
        in_process(queries)
        from django.db import connection

        connection.close()
        base = f"http://127.0.0.1:{args.port}"
        gunicorn = subprocess.Popen(
            [str(ROOT / ".venv/bin/gunicorn"), "portal.wsgi", "-w", str(args.workers), "-b", f"127.0.0.1:{args.port}",
             "--timeout", "300", "--log-level", "warning"],
            cwd=ROOT, env=env, start_new_session=True,
        )  # fmt: skip
        wait_up(base)
        api = [
            f"/api/v1/public/slo/?benchmark={MODEL}&ttft_ms={q['ttft_ms']}&tpot_ms={q['tpot_ms']}"
            f"&attainment={q['attainment']}"
            for q in queries
        ]
        scenarios = [
            ("goodput SLO query (400 targets)", api),
            (
                "goodput SLO page (400 targets)",
                [p.replace("/api/v1/public/slo/", "/leaderboard/slo/") for p in api],
            ),
        ]
        out = Path(tempfile.mkdtemp(prefix="bench-locust-"))
        print(
            f"{args.users} concurrent clients (think time {args.think} s), {args.duration} s per scenario, "
            f"gunicorn -w {args.workers}"
        )
        print(
            f"{'scenario':34} {'requests':>9} {'fail':>5} {'p50 ms':>7} {'p95 ms':>7} {'p99 ms':>7} {'req/s':>8}"
        )
        for name, paths in scenarios:
            # each worker builds its index on its first query; warm them all before measuring
            warm(base, paths[:8], {}, repeat=4, threads=4)
            r = run_locust(
                name, base, paths, users=args.users, duration=args.duration, out=out, think_s=args.think,
                locust=ROOT / ".venv/bin/locust", spawn_rate=args.users,
            )  # fmt: skip
            print(
                f"{name:34} {r['requests']:>9} {r['failures']:>5} {r['p50']:>7} {r['p95']:>7} {r['p99']:>7} "
                f"{r['rps']:>8.1f}"
            )
    finally:
        if gunicorn is not None:
            os.killpg(gunicorn.pid, signal.SIGTERM)
            gunicorn.wait(timeout=30)
        from django.db import connections

        connections.close_all()
        with psycopg.connect(f"{args.postgres}/postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        shutil.rmtree(var_dir, ignore_errors=True)
        print(f"dropped {database} and the stored arrays")


if __name__ == "__main__":
    main()
