"""Load benchmark of the signed-in pages a submitter uses: the dashboard, a submission page and the API lists
(token), in a throwaway PostgreSQL database, served by gunicorn (4 sync workers, like docker-compose) and
measured under 32 concurrent clients with locust (headless).

    python bench/private_load.py [--submissions 37] [--users 32] [--duration 20] [--think 1.0] [--workers 4]
        [--code DIR] [--database NAME] [--keep] [--postgres postgres://postgres@127.0.0.1:5432]
        [--redis redis://127.0.0.1:6379/3] [--scenarios dashboard,page,api-submissions,api-lists] [--conn-max-age 0]
        [--accounts 1] [--private-cache on|off] [--spawn-rate N] [--steady]

The data: `manage.py seed_demo` (its checks run in-process: real reports, curves, findings and per-point metrics
of the sample bundle and run archives), then drafts and submitted results of AcmeCompute copied from the demo's
checked AX-8000 submission (two versions each, every version with its files, an errored check run and a
re-check carrying the real report, curves, findings and point metrics), until demo-submitter sees
`--submissions` submissions. demo-submitter is the client: a session cookie for the pages, a token for the API.

Scenarios, each its own locust run after warm-up requests (so that every gunicorn worker is warm):
the dashboard (/dashboard/), a submission page (/submissions/<id>/ over every submission demo-submitter sees),
the token API list of submissions (/api/v1/submissions/) and the other API lists a submitter reads
(/api/v1/versions/, /api/v1/check-runs/, /api/v1/systems/, /api/v1/uploads/, /api/v1/notifications/).
Prints p50/p95/p99 (ms) and requests/s per scenario, and the queries and time of one request alone.

--spawn-rate N starts N clients a second (default all at once) and --steady counts only what follows the last
client's start (locust's --reset-stats), as bench/leaderboard_load.py does.

--private-cache off serves without the per-user cache of signed-in pages (portal/private_cache.py), for a
before/after on the same data. --accounts N spreads the clients over N submitters of AcmeCompute (demo-submitter
and N-1 more, made on first use), each with its own session and token: every account fills its own entries.

--code DIR serves another checkout (e.g. /work/main for "before"): the data is loaded by this checkout's code
(the same schema), gunicorn runs from DIR. --database NAME loads into NAME once and reuses it on later runs
(kept); otherwise the database is dropped at the end unless --keep. A script, not a test: nothing asserts a time.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from _load import run_locust, wait_up, warm  # bench/_load.py: python runs bench/ scripts from there

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
CLIENT = "demo-submitter"


def load(target: int) -> None:
    """seed_demo, then copies of the demo's checked AX-8000 submission until CLIENT sees `target` submissions."""
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.utils import timezone

    from access.visibility import submissions_visible_to

    User = get_user_model()
    from submissions.models import CheckRun, Finding, PointMetric, Submission, SubmissionVersion, VersionFile

    call_command("seed_demo", stdout=open(os.devnull, "w"))  # noqa: SIM115 - closed with the process
    client = User.objects.get(username=CLIENT)
    extra = target - submissions_visible_to(client).count()
    if extra <= 0:
        return
    # The demo's AX-8000 run-archive submission: the run with the most findings is the richest page.
    model_run = (
        CheckRun.objects.filter(
            CheckRun.states.q("judged"), version__submission__organisation__slug="acmecompute"
        )
        .order_by("-counts__error", "id")
        .select_related("version__submission")
        .first()
    )
    model_version = model_run.version
    model = model_version.submission
    files = list(model_version.files.all())
    findings = list(model_run.findings.all())
    metrics = list(model_run.point_metrics.all())
    now = timezone.now()
    statuses = [Submission.Status.DRAFT, Submission.Status.SUBMITTED]
    submissions = Submission.objects.bulk_create(
        [
            Submission(
                organisation=model.organisation,
                system=model.system,
                benchmark=model.benchmark,
                division=model.division,
                availability=model.availability,
                created_by=client,
                title=f"Bench copy {i} of #{model.pk}",
                status=statuses[i % 2],
                status_changed_at=now,
            )
            for i in range(extra)
        ]
    )
    versions = SubmissionVersion.objects.bulk_create(
        [
            SubmissionVersion(
                submission=s,
                number=number,
                kind=model_version.kind,
                size_bytes=model_version.size_bytes,
                sha256=model_version.sha256,
                uploader=client,
            )
            for s in submissions
            for number in (1, 2)
        ]
    )
    VersionFile.objects.bulk_create(
        [
            VersionFile(
                version=v,
                position=f.position,
                original_filename=f.original_filename,
                storage_key=f.storage_key,
                size_bytes=f.size_bytes,
                sha256=f.sha256,
            )
            for v in versions
            for f in files
        ]
    )
    copied = {
        name: getattr(model_run, name)
        for name in (
            "checker_version",
            "ruleset",
            "progress_stage",
            "progress_done",
            "progress_total",
            "points_expected",
            "point_files",
            "counts",
            "curves",
            "report",
        )
    }
    runs = CheckRun.objects.bulk_create(
        [CheckRun(version=v, error_message="bench: the first attempt errored") for v in versions]
        + [CheckRun(version=v, **copied) for v in versions]  # the re-check: the latest run of each version
    )
    errored, checked = runs[: len(versions)], runs[len(versions) :]
    CheckRun.objects.filter(pk__in=[r.pk for r in errored]).update(status="error", finished_at=now)
    CheckRun.objects.filter(pk__in=[r.pk for r in checked]).update(
        status=model_run.status, started_at=now, finished_at=now
    )
    Finding.objects.bulk_create(
        [
            Finding(
                check_run=run,
                **{
                    k: getattr(f, k) for k in ("step", "rule", "severity", "file", "line", "pointer", "point")
                },
                message=f.message,
                fix=f.fix,
            )
            for run in checked
            for f in findings
        ],
        batch_size=2000,
    )
    PointMetric.objects.bulk_create(
        [
            PointMetric(
                check_run=run,
                **{k: getattr(m, k) for k in ("system", "model", "concurrency", "key", "source")},
                claimed=m.claimed,
                recomputed=m.recomputed,
                extra=m.extra,
            )
            for run in checked
            for m in metrics
        ]
    )
    for submission, latest in zip(submissions, versions[1::2], strict=True):
        if submission.in_state("submitted"):
            submission.submitted_version = latest
    Submission.objects.bulk_update(submissions, ["submitted_version"])


def credentials(accounts: int) -> tuple[list[dict], list[dict], list[int]]:
    """Headers of `accounts` browser sessions and API tokens (CLIENT, then other submitters of its organisation,
    made on first use), and the ids of the submissions CLIENT sees (every account sees the same ones)."""
    from django.contrib.auth import get_user_model
    from django.http import HttpRequest
    from django.middleware.csrf import get_token
    from django.test import Client

    from access.visibility import submissions_visible_to
    from accounts.models import Membership
    from accounts.services.tokens import api_token_create, api_tokens_revoke_named

    User = get_user_model()

    client_user = User.objects.get(username=CLIENT)
    membership = Membership.objects.filter(user=client_user).select_related("organisation").first()
    users = [client_user]
    for i in range(1, accounts):
        user, created = User.objects.get_or_create(
            username=f"{CLIENT}-{i}", defaults={"email": f"bench{i}@x.test"}
        )
        if created:
            Membership.objects.create(user=user, organisation=membership.organisation, role=membership.role)
        users.append(user)
    pages, apis = [], []
    for user in users:
        browser = Client()
        browser.force_login(user)
        session = browser.cookies["sessionid"].value
        # A browser that has seen one form holds a CSRF cookie: its value is the secret get_token() keeps in META.
        blank = HttpRequest()
        get_token(blank)
        pages.append({"Cookie": f"sessionid={session}; csrftoken={blank.META['CSRF_COOKIE']}"})
        api_tokens_revoke_named(user=user, name="private load bench")  # a kept database holds the last run's
        _, key = api_token_create(user=user, name="private load bench", scope="read")
        apis.append({"Authorization": f"Token {key}"})
    ids = sorted(submissions_visible_to(client_user).values_list("pk", flat=True))
    return pages, apis, ids


def alone(base: str, path: str, headers: dict, repeat: int = 5) -> float:
    """Median ms of one request with nobody else asking (after the warm-up)."""
    times = []
    for _ in range(repeat):
        request = urllib.request.Request(base + path, headers=headers)
        started = time.perf_counter()
        with urllib.request.urlopen(request, timeout=120) as response:
            response.read()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def _queries_alone(paths: list[str], headers: dict) -> int:
    """Queries of one request for the first path, served in this process by this checkout's code."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client(headers={k: v for k, v in headers.items() if k != "Cookie"}, SERVER_NAME="127.0.0.1")
    for cookie in headers.get("Cookie", "").split("; "):
        if cookie:
            name, value = cookie.split("=", 1)
            client.cookies[name] = value
    with CaptureQueriesContext(connection) as captured:
        response = client.get(paths[0])
    if response.status_code != 200:
        raise SystemExit(f"{paths[0]} answered {response.status_code}")
    return len(captured.captured_queries)


SCENARIOS = ("dashboard", "page", "api-submissions", "api-lists")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--submissions", type=int, default=37, help="submissions demo-submitter sees")
    parser.add_argument("--users", type=int, default=32)
    parser.add_argument("--duration", type=int, default=20)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument(
        "--think",
        type=float,
        default=1.0,
        help="mean seconds a client waits between requests (0: back to back, the saturation throughput)",
    )
    parser.add_argument("--code", default=str(ROOT), help="the checkout gunicorn serves (default: this one)")
    parser.add_argument("--database", help="load into this database once and reuse it afterwards (kept)")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--postgres", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/3")
    parser.add_argument("--port", type=int, default=8766)
    parser.add_argument(
        "--conn-max-age",
        type=int,
        default=0,
        help="gunicorn's DATABASE_URL ?conn_max_age= (seconds a worker keeps its database connection; 0: a new "
        "connection per request, the default when DATABASE_URL does not say)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the throwaway database")
    parser.add_argument(
        "--accounts",
        type=int,
        default=1,
        help="distinct signed-in accounts the clients are spread over (1: every client is demo-submitter)",
    )
    parser.add_argument(
        "--spawn-rate",
        type=float,
        help="clients started per second (default: all at once, their first requests in the same millisecond)",
    )
    parser.add_argument(
        "--steady",
        action="store_true",
        help="count only the steady state: locust's --reset-stats drops what was measured while clients started",
    )
    parser.add_argument(
        "--private-cache",
        choices=("on", "off"),
        default="on",
        help="PORTAL_PRIVATE_CACHE of the server (on: the per-user page cache, the default with Redis)",
    )
    args = parser.parse_args()
    code = Path(args.code).resolve()

    import psycopg

    database = args.database or f"bench_private_{os.getpid()}"
    with psycopg.connect(f"{args.postgres}/postgres", autocommit=True) as admin:
        exists = admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", [database]).fetchone()
        if not exists:
            admin.execute(f'CREATE DATABASE "{database}"')
    keep = args.keep or args.database is not None
    env = {
        **os.environ,
        "DATABASE_URL": f"{args.postgres}/{database}",
        "REDIS_URL": args.redis,
        "CELERY_TASK_ALWAYS_EAGER": "1",  # seed_demo's checks run in this process
        "SECRET_KEY": "bench-only-secret-key-0123456789-abcdefghijklmnop",
        "PORTAL_ENDPOINT_KEY": "bench-only-endpoint-key-0123456789-abcdefghijklmnop",
        "DEBUG": "0",
        # one account's token from one address: the production limits (600/minute per account) would answer
        # 429 to 32 clients at ~1 request/s each; the bench measures serving, not the throttle
        "PORTAL_API_RATE_PER_ACCOUNT": "1000000/minute",
        "PORTAL_API_RATE_PER_ADDRESS": "1000000/minute",
        "PORTAL_SECURE_COOKIES": "0",
        "DJANGO_SETTINGS_MODULE": "portal.settings",
        "PORTAL_VAR_DIR": f"/tmp/bench-private-var-{database}",
    }
    os.environ.update(env)
    sys.path.insert(0, str(ROOT))
    gunicorn = None
    try:
        subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
        import logging

        import django

        django.setup()
        logging.disable(logging.INFO)  # the in-process check tasks log every step
        from django.contrib.auth import get_user_model

        from access.visibility import submissions_visible_to

        User = get_user_model()

        started = time.time()
        if not exists or not User.objects.filter(username=CLIENT).exists():
            load(args.submissions)
        page_headers, api_headers, ids = credentials(args.accounts)
        rows = submissions_visible_to(User.objects.get(username=CLIENT)).count()
        print(f"{database}: {CLIENT} sees {rows} submissions (ready in {time.time() - started:.1f} s)")
        from django.db import connection

        scenarios = {
            "dashboard": ("dashboard", ["/dashboard/"], page_headers),
            "page": ("submission page", [f"/submissions/{pk}/" for pk in ids], page_headers),
            "api-submissions": ("API submissions list", ["/api/v1/submissions/"], api_headers),
            "api-lists": (
                "API other lists",
                [
                    "/api/v1/versions/",
                    "/api/v1/check-runs/",
                    "/api/v1/systems/",
                    "/api/v1/uploads/",
                    "/api/v1/notifications/",
                ],
                api_headers,
            ),
        }
        chosen = [scenarios[key] for key in args.scenarios.split(",")]
        if code == ROOT:
            for name, paths, headers in chosen:
                print(f"{name}: {_queries_alone(paths, headers[0])} queries for {paths[0]} (this checkout)")
        connection.close()
        base = f"http://127.0.0.1:{args.port}"
        served = {**env, "PORTAL_PRIVATE_CACHE": "1" if args.private_cache == "on" else "0"}
        if args.conn_max_age:
            served["DATABASE_URL"] = f"{env['DATABASE_URL']}?conn_max_age={args.conn_max_age}"
        gunicorn = subprocess.Popen(
            [
                str(BIN / "gunicorn"),
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
            cwd=code,
            env=served,
            start_new_session=True,
        )
        wait_up(base)
        out = Path(tempfile.mkdtemp(prefix="bench-private-locust-"))
        load_1 = os.getloadavg()[0]
        print(
            f"serving {code} ({subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=code, capture_output=True, text=True).stdout.strip()}); "
            f"{args.users} concurrent clients (think time {args.think} s), {args.duration} s per scenario, "
            f"gunicorn -w {args.workers}, conn_max_age={args.conn_max_age}, private cache {args.private_cache}, "
            f"{args.accounts} account(s); load average {load_1:.1f}"
        )
        print(
            f"{'scenario':24} {'alone ms':>8} {'requests':>9} {'fail':>5} {'p50 ms':>7} {'p95 ms':>7} "
            f"{'p99 ms':>7} {'req/s':>7}"
        )
        for name, paths, headers in chosen:
            if warm(base, paths, headers[0], repeat=4, threads=8) != {200}:
                raise SystemExit(f"{name}: the warm-up did not answer 200 everywhere")
            r = run_locust(
                name,
                base,
                paths,
                users=args.users,
                duration=args.duration,
                out=out,
                think_s=args.think,
                locust=BIN / "locust",
                accounts=headers,
                spawn_rate=args.spawn_rate,
                reset_stats=args.steady,
            )
            single = statistics.median(alone(base, p, headers[0], repeat=3) for p in paths[:10])
            print(
                f"{name:24} {single:>8.0f} {r['requests']:>9} {r['failures']:>5} {r['p50']:>7} {r['p95']:>7} "
                f"{r['p99']:>7} {r['rps']:>7.1f}"
            )
        print(f"load average at the end {os.getloadavg()[0]:.1f}")
    finally:
        if gunicorn is not None:
            os.killpg(gunicorn.pid, signal.SIGTERM)
            gunicorn.wait(timeout=30)
        if not keep:
            from django.db import connections

            connections.close_all()
            with psycopg.connect(f"{args.postgres}/postgres", autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
            print(f"dropped {database}")


if __name__ == "__main__":
    main()
