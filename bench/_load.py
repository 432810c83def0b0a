"""What the load benchmarks share (bench/leaderboard_load.py, bench/private_load.py): waiting for the server,
warming its workers, and one headless locust run per scenario read back from locust's CSV.

Every simulated client picks one of the given header sets (one per signed-in account; `[{}]` for anonymous
clients) and requests a random path of the scenario, pausing `think_s` seconds on average (0.5-1.5 x) between
requests; anything but a 200 counts as a failure."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

LOCUSTFILE = """
import itertools, json, os, random
from locust import FastHttpUser, between, constant, task

with open(os.environ["BENCH_PATHS_FILE"]) as paths:  # one path a line (an environment variable holds 128 KB)
    PATHS = paths.read().split("\\n")
ACCOUNTS = json.loads(os.environ["BENCH_HEADERS"])  # one set of headers per account
COUNT = itertools.count()


class Client(FastHttpUser):
    THINK = float(os.environ["BENCH_THINK_S"])
    wait_time = between(THINK * 0.5, THINK * 1.5) if THINK > 0 else constant(0)

    def on_start(self):
        self.headers = ACCOUNTS[next(COUNT) % len(ACCOUNTS)]

    @task
    def get(self):
        path = random.choice(PATHS)
        with self.client.get(
            path, name=os.environ["BENCH_NAME"], headers=self.headers, catch_response=True
        ) as response:
            if response.status_code != 200:
                response.failure(f"{response.status_code} {path}")
"""


def wait_up(base: str, deadline_s: float = 60) -> None:
    """Until the server's /healthz answers (SystemExit after `deadline_s`)."""
    end = time.time() + deadline_s
    while time.time() < end:
        try:
            urllib.request.urlopen(f"{base}/healthz", timeout=2)
            return
        except OSError:
            time.sleep(0.5)
    raise SystemExit("gunicorn did not come up")


def status(url: str, headers: dict | None = None) -> int:
    """The HTTP status of a GET (0 on a timeout)."""
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            response.read()
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except TimeoutError:
        return 0


def warm(base: str, paths: list[str], headers: dict, *, repeat: int, threads: int) -> set[int]:
    """Each path `repeat` times, `threads` at a time: sequential requests tend to reach one gunicorn worker only,
    so parallel ones warm them all. The statuses seen."""
    urls = [base + path for path in sorted(set(paths)) for _ in range(repeat)]
    with ThreadPoolExecutor(max_workers=threads) as pool:
        return set(pool.map(lambda url: status(url, headers), urls))


def run_locust(
    name: str,
    base: str,
    paths: list[str],
    *,
    users: int,
    duration: int,
    out: Path,
    think_s: float,
    locust: Path,
    accounts: list[dict] | None = None,
    spawn_rate: float | None = None,
    reset_stats: bool = False,
    pin: str | None = None,
) -> dict:
    """One headless locust run of `users` clients for `duration` seconds; its summary row (p50/p95/p99 in ms as
    locust rounds them, requests, failures, requests/s). `spawn_rate` None starts every client at once;
    `reset_stats` counts only what follows the last client's start; `pin` runs locust under `taskset -c`."""
    locustfile = out / "locustfile.py"
    locustfile.write_text(LOCUSTFILE)
    prefix = out / name.replace(" ", "_")
    paths_file = prefix.with_name(prefix.name + "_paths.txt")
    paths_file.write_text("\n".join(paths))
    env = {
        **os.environ,
        "BENCH_PATHS_FILE": str(paths_file),
        "BENCH_NAME": name,
        "BENCH_THINK_S": str(think_s),
        "BENCH_HEADERS": json.dumps(accounts or [{}]),
    }
    command = [
        *(["taskset", "-c", pin] if pin else []),
        str(locust),
        "-f",
        str(locustfile),
        "--headless",
        "-u",
        str(users),
        "-r",
        str(spawn_rate if spawn_rate is not None else users),
        "-t",
        f"{duration}s",
        *(["--reset-stats"] if reset_stats else []),
        "--host",
        base,
        "--csv",
        str(prefix),
        "--only-summary",
        "--loglevel",
        "WARNING",
    ]
    subprocess.run(command, env=env, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(f"{prefix}_stats.csv") as handle:
        row = next(r for r in csv.DictReader(handle) if r["Name"] == name)
    return {
        "scenario": name,
        "requests": int(row["Request Count"]),
        "failures": int(row["Failure Count"]),
        "p50": row["50%"],
        "p95": row["95%"],
        "p99": row["99%"],
        "rps": float(row["Requests/s"]),
    }


def clear_public_cache() -> int:
    """Delete every cached public answer of this run's database in Redis (every generation; Django set up), and
    return how many: each run starts a new generation, and the old ones' entries (a 10,000-result snapshot is
    ~40 MB, every distinct SLO ask ~0.4 MB) would otherwise stay for their day-long TTL. On a machine whose Redis
    has no memory cap (production's has one: docker-compose.yml) they crowd the goodput table out of the page
    cache within a few runs: one run with 10 GB of them answered in seconds where a clean one took milliseconds."""
    from django.core.cache import cache
    from django.db import connection

    pattern = cache.make_key(f"leaderboard:public:{connection.settings_dict.get('NAME')}:*")
    client = cache._cache.get_client(write=True)
    deleted, batch = 0, []
    for key in client.scan_iter(match=pattern, count=1000):
        batch.append(key)
        if len(batch) == 1000:
            deleted += client.unlink(*batch)
            batch = []
    if batch:
        deleted += client.unlink(*batch)
    return deleted
