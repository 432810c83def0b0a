"""Load benchmark of the public leaderboard: 1,000 published results of 10-20 points in a throwaway PostgreSQL
database, served by gunicorn with the Redis cache, measured under 64 concurrent clients with locust (headless).

    .venv/bin/python bench/leaderboard_load.py [--results 1000] [--users 64] [--duration 30]
        [--workers 4] [--think 1.0] [--spawn-rate N] [--steady] [--pin]
        [--postgres postgres://postgres@127.0.0.1:5432] [--redis redis://127.0.0.1:6379/3] [--keep]
        [--reuse DATABASE --var-dir DIR] [--scenarios 'sizing,public API'] [--warm 8]

Scenarios, each its own locust run after warm-up requests (--warm per URL, default 8, 16 at a time, so that every gunicorn worker
and the cache are warm: "cached" means the steady state):
the benchmark's leaderboard page (/leaderboard/<model>/, or the public API list when the page does not exist),
a result page (/results/<id>/, else the API detail) over 50 results, the SLO query over a grid of 400
distinct targets (mostly answer-cache misses: the ranking is recomputed from the cached snapshot), and the
public API (results list, points of a result, curves), and the tender desk's site sizing over 400 distinct asks (users
per phase and an SLO), through the public API and its page. Prints p50/p95/p99 (ms) and requests/s per scenario.
A script, not a test: nothing asserts a time. The database is dropped at the end unless --keep.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# bench/_load.py: python runs bench/ scripts from there
from _load import clear_public_cache, run_locust, status, wait_up, warm

ROOT = Path(__file__).resolve().parent.parent
MODEL = "llama3_1-8b"


def _curve(system: str, rng: random.Random, points: int) -> dict:
    from checker.recompute.curve import curve_of

    scale = rng.uniform(0.3, 6.0)
    rows = []
    for index in range(points):
        concurrency = max(1, int(1.6**index))
        tps_per_user = round(150.0 / (1 + index * rng.uniform(0.2, 0.5)), 3)
        system_tps = round(scale * tps_per_user * concurrency * 0.9, 2)
        rows.append(
            {
                "point": f"{system}/{MODEL}/r{concurrency}",
                "basis": "recomputed",
                "concurrency": concurrency,
                "system_tps": system_tps,
                "tps_per_user": tps_per_user,
                "ttft_p90_ms": round(60 + rng.uniform(5, 20) * index**1.5, 1),
                "e2e_interactivity": round(tps_per_user * 0.8, 3),
                "system_tps_per_kw": round(system_tps / rng.uniform(5, 40), 3),
                "region": "low_latency" if concurrency <= 32 else "high_concurrency",
            }
        )
    return curve_of(system=system, model=MODEL, points=rows, ruleset="endpoints-v1.0")


def load(results: int) -> list[str]:
    """Bulk-create `results` published results (organisations, systems, submissions, versions, check runs,
    publications with their snapshot); returns their public ids."""
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from accounts.models import Organisation
    from catalog.models import Benchmark
    from leaderboard.models import Publication
    from leaderboard.publishing.services import headline_of
    from submissions.models import CheckRun, Submission, SubmissionVersion, System

    rng = random.Random(20261130)
    benchmark = Benchmark.objects.get(model_id=MODEL)
    now = timezone.now()
    organisations = Organisation.objects.bulk_create(
        [Organisation(name=f"Bench Org {i}", slug=f"bench-org-{i}") for i in range(50)]
    )
    User = get_user_model()
    users = User.objects.bulk_create([User(username=f"bench-user-{i}") for i in range(50)])
    systems = System.objects.bulk_create(
        [
            System(
                organisation=organisations[i % 50],
                name=f"Bench_System_{i:04d}",
                description={
                    "system_name": f"Bench System {i}",
                    "node_types": [
                        {
                            "system_node_ensemble_id": 0,
                            "number_of_nodes": rng.choice([1, 1, 2, 4]),
                            "host_processor_model_name": "Bench CPU",
                            "accelerator_info": [
                                {
                                    "accelerator_model_name": rng.choice(["AX-1", "BX-2", "CX-3"]),
                                    "accelerators_per_node": 8,
                                }
                            ],
                            "cooling": "air",
                        }
                    ],
                },
            )
            for i in range(results)
        ]
    )
    submissions = Submission.objects.bulk_create(
        [
            Submission(
                organisation=systems[i].organisation,
                system=systems[i],
                benchmark=benchmark,
                created_by=users[i % 50],
                title=f"Bench result {i}",
                status=Submission.Status.PUBLISHED,
                status_changed_at=now,
            )
            for i in range(results)
        ]
    )
    versions = SubmissionVersion.objects.bulk_create(
        [
            SubmissionVersion(
                submission=s,
                number=1,
                kind="bundle",
                size_bytes=1000,
                sha256=hashlib.sha256(s.title.encode()).hexdigest(),
                uploader=s.created_by,
            )
            for s in submissions
        ]
    )
    curves = [_curve(s.system.name, rng, rng.randint(10, 20)) for s in submissions]
    runs = CheckRun.objects.bulk_create(
        [CheckRun(version=v, checker_version="bench", ruleset="endpoints-v1.0") for v in versions]
    )
    CheckRun.objects.filter(pk__in=[r.pk for r in runs]).update(status="passed", finished_at=now, curves=[])
    for submission, version in zip(submissions, versions, strict=True):
        submission.submitted_version = version
    Submission.objects.bulk_update(submissions, ["submitted_version"])
    publications = Publication.objects.bulk_create(
        [
            Publication(
                submission=s,
                version=v,
                public_id=f"EP-B{i:05d}",
                mode="now",
                status="published",
                publish_at=now,
                published_at=now,
                chosen_by=s.created_by,
                check_run=r,
                curve=c,
                headline=headline_of(c),
            )
            for i, (s, v, r, c) in enumerate(zip(submissions, versions, runs, curves, strict=True))
        ]
    )
    fill_snapshots()
    analyse()
    return [p.public_id for p in publications]


def analyse() -> None:
    """ANALYZE the loaded tables, as PostgreSQL's autovacuum does soon after a bulk load: this machine's cluster
    runs with autovacuum off, and without statistics the planner joined the 10,000 publications to their
    submissions in a nested loop (the public snapshot's query 32 s instead of 0.09 s, docs/performance.md)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


def fill_snapshots() -> int:
    """Freeze the record publishing writes (leaderboard.publishing.snapshot.snapshot_build) on every published result that has
    none: the result page reads the system and organisation from it. Returns how many were filled."""
    from leaderboard.models import Publication
    from leaderboard.publishing.snapshot import snapshot_build

    todo = list(
        Publication.objects.filter(snapshot={}).select_related(
            "submission__system", "submission__organisation", "version", "check_run"
        )
    )
    for publication in todo:
        publication.snapshot = snapshot_build(
            submission=publication.submission,
            version=publication.version,
            check_run=publication.check_run,
            curve=publication.curve,
        )
    Publication.objects.bulk_update(todo, ["snapshot"], batch_size=500)
    return len(todo)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=int, default=1000)
    parser.add_argument("--users", type=int, default=64)
    parser.add_argument("--duration", type=int, default=30)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument(
        "--think",
        type=float,
        default=1.0,
        help="mean seconds a client waits between requests (0: back to back, the saturation throughput)",
    )
    parser.add_argument(
        "--spawn-rate",
        type=float,
        default=0,
        help="clients started per second (default: all at once, the 64-request burst counted in the figures)",
    )
    parser.add_argument(
        "--steady",
        action="store_true",
        help="count only the steady state: locust's --reset-stats drops what was measured while clients started",
    )
    parser.add_argument(
        "--pin",
        action="store_true",
        help="CPU-pin gunicorn to the first half of the CPUs and locust to the rest (taskset), so that the load "
        "generator does not take the server's CPU and its own delays do not count as latency",
    )
    parser.add_argument("--postgres", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/3")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--keep", action="store_true", help="keep the throwaway database")
    parser.add_argument(
        "--reuse",
        metavar="DATABASE",
        help="measure on a database a `bench/goodput_load.py --keep` run left (with its --var-dir): the same "
        "results, and the per-sample arrays behind the SLO page; nothing is loaded and nothing dropped",
    )
    parser.add_argument("--var-dir", help="PORTAL_VAR_DIR of that run (with --reuse)")
    parser.add_argument(
        "--scenarios",
        help="comma-separated names (or name prefixes) of the scenarios to run, e.g. 'sizing,public API' (default: all)",
    )
    parser.add_argument(
        "--warm",
        type=int,
        default=8,
        help="warm-up requests per URL before each scenario (of its first 60 URLs, 16 at a time; default 8)",
    )
    args = parser.parse_args()
    if args.reuse and not args.var_dir:
        parser.error("--reuse needs the --var-dir of the goodput_load run")

    import psycopg

    database = args.reuse or f"bench_leaderboard_{os.getpid()}"
    if not args.reuse:
        with psycopg.connect(f"{args.postgres}/postgres", autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{database}"')
    env = {
        **os.environ,
        "DATABASE_URL": f"{args.postgres}/{database}",
        "REDIS_URL": args.redis,
        "SECRET_KEY": "bench-only-secret-key-0123456789-abcdefghijklmnop",
        "PORTAL_ENDPOINT_KEY": "bench-only-endpoint-key-0123456789-abcdefghijklmnop",
        "DEBUG": "0",
        "DJANGO_SETTINGS_MODULE": "portal.settings",
        "PORTAL_VAR_DIR": args.var_dir or tempfile.mkdtemp(prefix="bench-leaderboard-var-"),
    }
    os.environ.update(env)
    sys.path.insert(0, str(ROOT))
    gunicorn = None
    try:
        import django

        if args.reuse:
            django.setup()
            from leaderboard.models import Publication

            public_ids = list(
                Publication.objects.filter(status="published").values_list("public_id", flat=True)
            )
            print(
                f"reusing {database}: {len(public_ids)} published results ({fill_snapshots()} records frozen now)"
            )
        else:
            subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
            django.setup()
            started = time.time()
            public_ids = load(args.results)
            print(
                f"loaded {len(public_ids)} published results in {time.time() - started:.1f} s into {database}"
            )
        from leaderboard.board.cache import public_cache_bump

        print(f"cleared {clear_public_cache()} cached public entries of earlier runs from Redis")
        public_cache_bump()  # nothing cached from an earlier run on this Redis db counts as warm
        from django.db import connection

        connection.close()
        base = f"http://127.0.0.1:{args.port}"
        cpus = sorted(os.sched_getaffinity(0))
        half = max(1, len(cpus) // 2)
        server_cpus = ",".join(map(str, cpus[:half])) if args.pin and len(cpus) > 1 else None
        client_cpus = ",".join(map(str, cpus[half:])) if server_cpus else None
        gunicorn = subprocess.Popen(
            [
                *(["taskset", "-c", server_cpus] if server_cpus else []),
                str(ROOT / ".venv/bin/gunicorn"),
                "portal.wsgi",
                "-w",
                str(args.workers),
                "-b",
                f"127.0.0.1:{args.port}",
                "--timeout",
                "120",
                "--log-level",
                "warning",
            ],
            cwd=ROOT,
            env=env,
            start_new_session=True,
        )
        wait_up(base)
        rng = random.Random(7)
        sample = rng.sample(public_ids, min(50, len(public_ids)))
        page = f"/leaderboard/{MODEL}/"
        leaderboard = [page] if status(base + page) == 200 else [f"/api/v1/public/results/?benchmark={MODEL}"]
        result_page = (
            "/results/{}/" if status(f"{base}/results/{sample[0]}/") == 200 else "/api/v1/public/results/{}/"
        )
        slo = [
            f"/api/v1/public/slo/?benchmark={MODEL}&ttft_p90_ms_max={ttft}&interactivity_min={inter}"
            for ttft in range(100, 2100, 100)
            for inter in range(5, 105, 5)
        ]
        rng.shuffle(slo)
        # the tender desk's site sizing: a site of U users per phase at one SLO, every ask distinct (the answer is
        # ranked from the cached snapshot each time, as for the SLO query)
        sizing = [
            f"/api/v1/public/sizing/?benchmark={MODEL}&users={users}&users_expansion={users * 3}"
            f"&ttft_p90_ms_max={ttft}&interactivity_min={inter}"
            for users, ttft, inter in zip(
                rng.choices(range(100, 100_000, 100), k=400),
                rng.choices(range(100, 2100, 100), k=400),
                rng.choices(range(5, 105, 5), k=400),
                strict=True,
            )
        ]
        scenarios = [
            ("leaderboard page" if leaderboard[0] == page else "leaderboard (API list)", leaderboard),
            (
                "result page" if result_page.startswith("/results") else "result (API detail)",
                [result_page.format(p) for p in sample],
            ),
            ("SLO query (400 targets)", slo),
            ("SLO page (400 targets)", [p.replace("/api/v1/public/slo/", "/leaderboard/slo/") for p in slo]),
            ("sizing query (400 asks)", sizing),
            (
                "sizing page (400 asks)",
                [p.replace("/api/v1/public/sizing/", "/leaderboard/sizing/") for p in sizing],
            ),
            (
                "public API",
                [
                    f"/api/v1/public/results/?limit=100&offset={o}"
                    for o in range(0, len(public_ids), max(100, len(public_ids) // 10))
                ]
                + [f"/api/v1/public/points/?result={p}" for p in sample]
                + [f"/api/v1/public/curves/?result={p}" for p in sample[:10]]
                + ["/api/v1/public/benchmarks/"],
            ),
        ]
        out = Path(tempfile.mkdtemp(prefix="bench-locust-"))
        print(
            f"{args.users} concurrent clients (think time {args.think} s), {args.duration} s per scenario, "
            f"gunicorn -w {args.workers}, clients started {args.spawn_rate or args.users:g}/s"
            + (", steady state only" if args.steady else "")
            + (f", gunicorn on CPU {server_cpus}, locust on CPU {client_cpus}" if server_cpus else "")
        )
        print(
            f"{'scenario':32} {'requests':>9} {'fail':>5} {'p50 ms':>7} {'p95 ms':>7} {'p99 ms':>7} {'req/s':>8}"
        )
        if args.scenarios:
            wanted = [w.strip() for w in args.scenarios.split(",") if w.strip()]
            scenarios = [(n, p) for n, p in scenarios if any(n.startswith(w) for w in wanted)]
        for name, paths in scenarios:
            # Warm every gunicorn worker (each keeps its own per-process snapshot) and the shared cache: what a
            # steady state serves.
            warm(base, paths[:60], {}, repeat=args.warm, threads=16)
            load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
            r = run_locust(
                name,
                base,
                paths,
                users=args.users,
                duration=args.duration,
                out=out,
                think_s=args.think,
                locust=ROOT / ".venv/bin/locust",
                spawn_rate=args.spawn_rate or args.users,
                reset_stats=args.steady,
                pin=client_cpus,
            )
            print(
                f"{name:32} {r['requests']:>9} {r['failures']:>5} {r['p50']:>7} {r['p95']:>7} {r['p99']:>7} {r['rps']:>8.1f}"
                f"   load {load_before} -> {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
            )
    finally:
        if gunicorn is not None:
            os.killpg(gunicorn.pid, signal.SIGTERM)
            gunicorn.wait(timeout=30)
        if not args.keep and not args.reuse:
            from django.db import connections

            connections.close_all()
            with psycopg.connect(f"{args.postgres}/postgres", autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
            print(f"dropped {database}")


if __name__ == "__main__":
    main()
