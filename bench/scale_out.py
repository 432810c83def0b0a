"""Benchmark: one curve's check fanned out across 1, 2 and 4 worker processes (issue 21, point 3).

    python bench/scale_out.py [--size-mb 500] [--points 8] [--workers 1,2,4] [--workdir DIR] [--keep]

What it does:
  1. Builds --points run archives from the sample AX-8000 curve (tests/checker/fixtures/run_archives; the 8th
     point is the c64 archive relabelled c128 in its point.yaml, so the curve has 8 distinct points), each with
     its events.jsonl replaced by a synthetic, schema-faithful log of --size-mb MB (bench/recompute.py's
     generator, another seed per point), in the work folder (deleted afterwards, never in the repository).
     The synthetic logs do not match the archives' stored summaries: the verdict is `fail` with metric findings,
     which costs nothing extra; the recompute of every point is the same work as for a genuine log.
  2. Real components: SeaweedFS (`weed mini`) as the S3 storage, a PostgreSQL database of its own (created on
     the server of DATABASE_URL, dropped at the end), Redis (REDIS_URL) as the broker, `manage.py seed_demo` for
     the catalog, users and systems, then one version of the curve uploaded through the portal's services.
  3. For each N in --workers: N `celery -A portal worker -c 1` processes (every queue, an empty check cache
     each), a new check run of that version queued as an upload's finish queues it (check_run_create), and the
     time from the queueing commit to the run's verdict (its finished_at). Then per worker: busy time (the sum of
     its tasks' run times, from its log), its point tasks, and its pool process's peak RSS (VmHWM).

Printed: one line per N, and the speed-up against N=1, with the machine's load average beside it. This is a
script, not a test: nothing asserts. On a shared machine the figures move with the load: run it when quiet.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.direct_upload import CELERY, CountingRelay, start_weed  # noqa: E402 - shared benchmark helpers
from bench.upload_memory import (  # noqa: E402
    PYTHON,
    Gunicorn,
    Sampler,
    children_of,
    portal_env,
    proc_status_kb,
    reset_hwm,
)

RUN_ARCHIVES = ROOT / "tests" / "checker" / "fixtures" / "run_archives"
TOKENIZER = ROOT / "tests" / "checker" / "fixtures" / "tokenizer" / "tokenizer.json"
SUCCEEDED = re.compile(r"Task (\S+)\[[0-9a-f-]+\] succeeded in ([0-9.]+)s")

UPLOAD_SCRIPT = """
import sys
from pathlib import Path
from django.db import transaction
from accounts.models import Membership
from submissions.models import Submission, System
from submissions import services, uploads
import hashlib
system = System.objects.get(name="Acme_AX-8000")
actor = Membership.objects.filter(organisation=system.organisation, role="submitter").first().user
submission = services.submission_create(actor=actor, system=system, benchmark=Submission.objects.filter(system=system).first().benchmark)
files = [Path(p) for p in sys.argv[1:]]
done = []
for position, path in enumerate(files):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    upload = uploads.upload_start(actor=actor, submission=submission, filename=path.name, size=path.stat().st_size, sha256=digest.hexdigest())
    with open(path, "rb") as handle:
        for index in range(upload.parts_expected):
            handle.seek(index * upload.part_size)
            uploads.upload_part(upload=upload, index=index, data_stream=io.BytesIO(handle.read(upload.part_size)), actor=actor)
    last = position == len(files) - 1
    version = uploads.upload_finish(upload=upload, sha256=upload.sha256, actor=actor, create_version=last, include_uploads=done if last else []).version
    done.append(upload)
print("VERSION", version.pk)
"""


TOKEN_SCRIPT = """
from accounts.models import Membership
from accounts.services.tokens import api_token_create
from submissions import services
from submissions.models import Submission, System
system = System.objects.get(name="Acme_AX-8000")
actor = Membership.objects.filter(organisation=system.organisation, role="submitter").first().user
benchmark = Submission.objects.filter(system=system).first().benchmark
submission = services.submission_create(actor=actor, system=system, benchmark=benchmark)
_, key = api_token_create(user=actor, name="bench-scale", scope="write")
print("BENCH", key, submission.pk)
"""


def client_child(url: str, token: str, submission: int, files: list[str]) -> None:
    """Send the curve as `portal submit` does (transfer auto: straight to the bucket); print the times as JSON."""
    import json
    import secrets

    from checker.cli.remote.client import Client
    from checker.cli.remote.uploads import upload_file

    finishes: list[float] = []

    class TimedClient(Client):
        def request(self, method, path_, **kwargs):
            if path_.endswith("/finish/"):
                finishes.append(time.time())
            return super().request(method, path_, **kwargs)

    client = TimedClient(url, token, timeout=3600)
    started = time.time()
    include: list[str] = []
    run_key = secrets.token_hex(8)
    finished: dict = {}
    for position, path in enumerate(files):
        finished = upload_file(
            client,
            Path(path),
            submission=submission,
            start_fields={},
            run_key=run_key,
            create_version=position == len(files) - 1,
            include=list(include),
            show_progress=False,
            quiet=True,
        )
        include.append(finished["upload"]["id"])
    print(
        json.dumps(
            {
                "started": started,
                "last_finish": finishes[-1],
                "end": time.time(),
                "transfer": finished["upload"]["transfer"],
                "version": (finished.get("version") or {}).get("id"),
            }
        )
    )


def upload_direct(env: dict, work: Path, archives: list[Path], token: str, submission: int) -> dict:
    """The curve through gunicorn (one sync worker, behind a byte-counting relay) with every part straight to the
    bucket; the web worker's RSS sampled every 10 ms. A check worker must be up: it verifies each upload."""
    import json

    web = Gunicorn("portal.wsgi", env=env, cwd=ROOT, log=work / "gunicorn.log", probe_path="/healthz")
    relay = CountingRelay(web.port)
    relay.start()
    try:
        idle_kb = proc_status_kb(web.worker, "VmRSS") or 0
        hwm_reset = reset_hwm(web.worker)
        sampler = Sampler(web.worker)
        sampler.start()
        try:
            out = subprocess.run(
                [PYTHON, str(Path(__file__).resolve()), "--client", relay.url, token, str(submission)]
                + [str(path) for path in archives],
                cwd=ROOT,
                env=env,
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        finally:
            time.sleep(0.05)
            sampler.stop()
        figures = json.loads(out.strip().splitlines()[-1])
        hwm_kb = proc_status_kb(web.worker, "VmHWM") if hwm_reset else None
        figures.update(
            web_idle_mb=idle_kb / 1024,
            web_peak_mb=max(max((rss for _, rss in sampler.samples), default=0), hwm_kb or 0) / 1024,
            web_received_kb=relay.received / 1024,
        )
        return figures
    finally:
        relay.stop()
        web.stop()


def _concurrency(path: Path) -> int:
    return int(path.name.split("_c")[1].split(".")[0])


def build_archives(work: Path, *, points: int, size_mb: float, one_log: bool = False) -> list[Path]:
    from bench.recompute import generate

    samples = sorted(RUN_ARCHIVES.glob("AX-8000_c*.tar.gz"), key=_concurrency)
    plan = [(path, _concurrency(path)) for path in samples]
    while len(plan) < points:  # more points than samples: the largest relabelled at twice its concurrency
        plan.append((samples[-1], plan[-1][1] * 2))
    out = []
    for path, concurrency in plan[:points]:
        target = work / f"AX-8000_c{concurrency}.tar.gz"
        out.append(target)
        if target.exists():
            continue
        source_c = _concurrency(path)
        log = work / ("events-one.jsonl" if one_log else f"events-c{concurrency}.jsonl")
        if not log.exists():
            generate(
                log,
                work / "texts.tmp",
                size_mb=size_mb,
                concurrency=concurrency,
                seed=concurrency,
                tokenizer_path=TOKENIZER,
            )
        with tarfile.open(path, "r:gz") as source, tarfile.open(target, "w:gz", compresslevel=1) as sink:
            for member in source.getmembers():
                name = member.name.replace(f"c{source_c}", f"c{concurrency}", 1)
                if member.name.endswith("/events.jsonl"):
                    info = tarfile.TarInfo(name)
                    info.size = log.stat().st_size
                    info.mtime = member.mtime
                    with open(log, "rb") as handle:
                        sink.addfile(info, handle)
                    continue
                data = source.extractfile(member).read() if member.isfile() else None
                if data is not None and member.name.endswith("point.yaml") and source_c != concurrency:
                    data = data.replace(
                        f"concurrency: {source_c}\n".encode(), f"concurrency: {concurrency}\n".encode()
                    )
                member.name = name
                if data is not None:
                    member.size = len(data)
                    sink.addfile(member, io.BytesIO(data))
                else:
                    sink.addfile(member)
        if not one_log:
            log.unlink()
        (work / "texts.tmp").unlink(missing_ok=True)
    (work / "events-one.jsonl").unlink(missing_ok=True)
    return out


def create_database(base_url: str) -> tuple[str, str]:
    import psycopg

    name = f"bench_scale_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(base_url, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    return name, base_url.rsplit("/", 1)[0] + "/" + name


def drop_database(base_url: str, name: str) -> None:
    import psycopg

    with psycopg.connect(base_url, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class Worker:
    def __init__(self, env: dict, work: Path, number: int):
        from portal.queues import queue_names

        var = work / f"worker-{number}"
        shutil.rmtree(var, ignore_errors=True)
        var.mkdir()
        self.log_path = var / "worker.log"
        self.process = subprocess.Popen(
            [
                CELERY,
                "-A",
                "portal",
                "worker",
                "-Q",
                ",".join(queue_names(prefix=env["PORTAL_QUEUE_PREFIX"])),
                "-c",
                "1",
                "-n",
                f"bench{number}-{uuid.uuid4().hex[:4]}@%h",
                "-l",
                "INFO",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
            ],
            cwd=ROOT,
            env={**env, "PORTAL_VAR_DIR": str(var), "PORTAL_CHECK_CACHE_DIR": str(var / "cache")},
            stdout=open(self.log_path, "wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def ready(self) -> bool:
        if self.process.poll() is not None:
            raise SystemExit(f"celery worker exited: {self.log_path.read_bytes()[-2000:]!r}")
        return b" ready." in self.log_path.read_bytes()

    def figures(self) -> dict:
        busy, points = 0.0, 0
        for name, seconds in SUCCEEDED.findall(self.log_path.read_text(errors="replace")):
            busy += float(seconds)
            points += name.endswith("check_run_point_task")
        peak = max(
            (proc_status_kb(pid, "VmHWM") or 0) for pid in [self.process.pid, *children_of(self.process.pid)]
        )
        return {"busy_s": busy, "points": points, "peak_mb": peak / 1024}

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)


def measure(version_id: int, workers: list[Worker], timeout_s: float, *, since: float | None = None) -> dict:
    """A new check run of the version queued now, to its verdict; with `since`, the version's own run (the one the
    upload queued), timed from `since` (the upload's last finish request)."""
    from django.db import transaction

    from submissions.checks.queue import check_run_create
    from submissions.models import CheckRun, SubmissionVersion

    version = SubmissionVersion.objects.get(pk=version_id)
    if since is None:
        with transaction.atomic():
            run = check_run_create(version=version, actor=None)
        queued = time.time()
    else:
        run = CheckRun.objects.filter(version=version).order_by("pk").first()
        queued = since
    deadline = time.monotonic() + timeout_s
    while True:
        run.refresh_from_db()
        if run.in_state("finished"):
            break
        if time.monotonic() > deadline:
            raise SystemExit(f"check run {run.pk} still {run.status} after {timeout_s} s")
        time.sleep(0.5)
    return {
        "wall_s": run.finished_at.timestamp() - queued,
        "status": run.status,
        "points_checked": run.point_metrics.count(),
        "workers": [worker.figures() for worker in workers],
        "tasks": _task_seconds(workers),
    }


def _task_seconds(workers: list[Worker]) -> dict[str, list[float]]:
    """Each task's run time by task name, over the workers' logs (unpack, point, judge ...)."""
    tasks: dict[str, list[float]] = {}
    for worker in workers:
        for name, seconds in SUCCEEDED.findall(worker.log_path.read_text(errors="replace")):
            tasks.setdefault(name.rsplit(".", 1)[-1], []).append(float(seconds))
    return tasks


def project(
    tasks: dict[str, list[float]], plan: str, *, points: int, log_mb: float, stored_mb: float
) -> None:
    """The wall time of a larger curve from one run's measured task costs: per point its log's share, the once-per-
    version steps (unpack: download and list every archive; judge: the rules over the version) by the bytes."""
    target_points, target_mb, target_workers = (int(x) for x in plan.split("x"))
    point_s = statistics.mean(tasks.get("check_run_point_task") or [0.0])
    once = {
        name: sum(times)
        for name, times in tasks.items()
        if name in ("check_run_start_task", "check_run_finish_task")
    }
    bytes_factor = (target_points * target_mb) / (points * log_mb)
    point_target = point_s * target_mb / log_mb
    rounds = -(-target_points // target_workers)
    once_target = {name: seconds * bytes_factor for name, seconds in once.items()}
    wall = rounds * point_target + sum(once_target.values())
    steps = ", ".join(
        f"{name} {seconds:.0f} s -> {once_target[name]:.0f} s" for name, seconds in once.items()
    )
    print(
        f"\nprojection for {target_points} points x {target_mb:g} MB logs on {target_workers} workers (from the first "
        f"row: a point {point_s:.1f} s per {log_mb:g} MB -> {point_target:.0f} s; {rounds} round(s) of points; "
        f"once per version, by bytes x{bytes_factor:.0f}: {steps}): wall ~ {wall:.0f} s ({wall / 60:.1f} min); "
        f"points alone {rounds * point_target:.0f} s"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=float, default=500)
    parser.add_argument("--points", type=int, default=8)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--timeout-s", type=float, default=3600)
    parser.add_argument("--workdir")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument(
        "--direct",
        action="store_true",
        help="upload as `portal submit` does, through gunicorn with every part straight to the bucket; the first "
        "worker count is timed from the upload's last finish request to the verdict of the run it queued",
    )
    parser.add_argument(
        "--project", default="32x2048x32", help="POINTSxLOG_MBxWORKERS to project from the measured costs"
    )
    parser.add_argument(
        "--one-log",
        action="store_true",
        help="one synthetic log in every archive (the same replay work per point; saves generating --points logs)",
    )
    parser.add_argument("--client", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        url, token, submission, *files = args.client
        client_child(url, token, int(submission), files)
        return 0
    work = Path(args.workdir or tempfile.mkdtemp(prefix="bench-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    base_db = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")
    if not base_db.startswith("postgres"):
        raise SystemExit(
            "DATABASE_URL must name a PostgreSQL server (the benchmark makes its own database there)"
        )
    weed = db_name = None
    workers: list[Worker] = []
    try:
        started = time.monotonic()
        archives = build_archives(work, points=args.points, size_mb=args.size_mb, one_log=args.one_log)
        stored_mb = sum(path.stat().st_size for path in archives) / 2**20
        print(
            f"{len(archives)} archives of {args.size_mb:g} MB logs ({stored_mb:.0f} MB compressed) built in "
            f"{time.monotonic() - started:.0f} s",
            flush=True,
        )
        weed, s3_env = start_weed(work)
        db_name, db_url = create_database(base_db)
        env = portal_env(work, "off")
        env.update(s3_env)
        env.update(
            {
                "DATABASE_URL": db_url,
                "REDIS_URL": os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/7"),
                "CELERY_TASK_ALWAYS_EAGER": "0",
                "PORTAL_QUEUE_PREFIX": f"bench-{uuid.uuid4().hex[:8]}.",
                "PORTAL_ORG_QUOTA_BYTES": str(500 * 1024**3),
                "PORTAL_MAX_UPLOAD_BYTES": str(32 * 1024**3),
                "PORTAL_UPLOAD_PART_BYTES": str(64 * 1024**2),
                "PORTAL_CHECK_HEARTBEAT_TIMEOUT_S": "3600",
                "PORTAL_CHECK_QUEUED_TIMEOUT_S": "7200",
            }
        )
        manage = [PYTHON, str(ROOT / "manage.py")]
        subprocess.run([*manage, "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True)
        subprocess.run(
            [*manage, "seed_demo"],
            cwd=ROOT,
            env={**env, "CELERY_TASK_ALWAYS_EAGER": "1"},
            check=True,
            capture_output=True,
        )
        counts = [int(n) for n in args.workers.split(",")]
        upload: dict = {}
        if args.direct:
            out = subprocess.run(
                [*manage, "shell", "-c", TOKEN_SCRIPT],
                cwd=ROOT,
                env=env,
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            _, token, submission = next(
                line for line in out.splitlines() if line.startswith("BENCH ")
            ).split()
            workers = [Worker(env, work, number) for number in range(counts[0])]  # they verify the uploads
            while not all(worker.ready() for worker in workers):
                time.sleep(0.2)
            load_before = os.getloadavg()[0]
            upload = upload_direct(env, work, archives, token, int(submission))
            version_id = upload["version"]
            print(
                f"uploaded {len(archives)} archives ({stored_mb:.0f} MB, transfer {upload['transfer']}) in "
                f"{upload['last_finish'] - upload['started']:.1f} s to the last finish, version made "
                f"{upload['end'] - upload['last_finish']:.1f} s later; web process received "
                f"{upload['web_received_kb']:.0f} kB, RSS {upload['web_idle_mb']:.0f} MB idle -> "
                f"{upload['web_peak_mb']:.0f} MB peak; load {load_before:.1f} -> {os.getloadavg()[0]:.1f}",
                flush=True,
            )
        else:
            out = subprocess.run(
                [
                    *manage,
                    "shell",
                    "-c",
                    "import io\n" + UPLOAD_SCRIPT.replace("sys.argv[1:]", repr([str(p) for p in archives])),
                ],
                cwd=ROOT,
                env=env,
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            version_id = int(
                next(line for line in out.splitlines() if line.startswith("VERSION ")).split()[1]
            )
            # The upload's own check went to the queues before any worker ran: drop it, every N gets a new run.
            import redis

            from portal.queues import queue_names

            client = redis.Redis.from_url(env["REDIS_URL"])
            client.delete(*queue_names(prefix=env["PORTAL_QUEUE_PREFIX"]))
        os.environ.update(env)
        import django

        django.setup()
        rows = []
        for position, count in enumerate(counts):
            if not workers:
                workers = [Worker(env, work, number) for number in range(count)]
            while not all(worker.ready() for worker in workers):
                time.sleep(0.2)
            load_before = os.getloadavg()[0]
            own = args.direct and position == 0
            row = measure(version_id, workers, args.timeout_s, since=upload["last_finish"] if own else None)
            row.update(count=count, load_before=load_before, load_after=os.getloadavg()[0])
            rows.append(row)
            for worker in workers:
                worker.stop()
            workers = []
            busy = ", ".join(f"{w['busy_s']:.0f}" for w in row["workers"])
            peaks = ", ".join(f"{w['peak_mb']:.0f}" for w in row["workers"])
            points = ", ".join(str(w["points"]) for w in row["workers"])
            tasks = ", ".join(
                f"{name} {len(times)} x {sum(times) / len(times):.1f} s"
                for name, times in row["tasks"].items()
            )
            print(
                f"{count} worker(s): {row['wall_s']:.1f} s {'upload finished' if own else 'queued'} -> verdict "
                f"({row['status']}, "
                f"{row['points_checked']} points); busy s per worker [{busy}]; point tasks [{points}]; "
                f"peak RSS MB [{peaks}]; load {row['load_before']:.1f} -> {row['load_after']:.1f}; tasks: {tasks}",
                flush=True,
            )
        base = rows[0]["wall_s"]
        print(
            f"\ncpus: {os.cpu_count()}; per point (1 worker): {rows[0]['workers'][0]['busy_s'] / len(archives):.1f} s busy"
        )
        for row in rows:
            print(
                f"{row['count']} worker(s): wall {row['wall_s']:.1f} s, speed-up {base / row['wall_s']:.2f}x"
            )
        project(
            rows[0]["tasks"], args.project, points=len(archives), log_mb=args.size_mb, stored_mb=stored_mb
        )
    finally:
        for worker in workers:
            worker.stop()
        if weed is not None and weed.poll() is None:
            os.killpg(weed.pid, signal.SIGTERM)
            weed.wait(timeout=30)
        if db_name:
            from django.conf import settings

            if settings.configured:
                from django.db import connections

                connections.close_all()
            drop_database(base_db, db_name)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
