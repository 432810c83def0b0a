"""docker-compose.yml's way of serving, run here without Docker: nginx with deploy/nginx.conf in front of gunicorn
started with deploy/gunicorn.conf.py exactly as the web service starts it. Slow clients no longer stall the sync
workers, forwarded headers from 127.0.0.1 are not believed, and a chunked part upload reaches the portal whole."""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import IN_CI
from tests.submissions.conftest import _database_url_for_test_db

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
NGINX = os.environ.get("PORTAL_NGINX") or shutil.which("nginx") or "/usr/sbin/nginx"
# The web service's command in docker-compose.yml (test_compose_starts_gunicorn_like_this keeps them equal).
GUNICORN_ARGS = ["gunicorn", "-c", "deploy/gunicorn.conf.py", "portal.wsgi"]
SLOW_CLIENTS = 6


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _get(port: int, path: str, *, timeout: float, headers: dict | None = None) -> http.client.HTTPResponse:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    connection.request("GET", path, headers={"Host": "localhost", **(headers or {})})
    response = connection.getresponse()
    response.body = response.read()
    connection.close()
    return response


def _wait_until_up(port: int, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args[0]} exited: {log.read_text(errors='replace')[-3000:]}")
        try:
            if _get(port, "/healthz", timeout=5).status == 200:
                return
        except OSError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"not answering on {port} after 60 s: {log.read_text(errors='replace')[-3000:]}")


def nginx_config(prefix: Path, listen: int, upstream: int) -> str:
    """deploy/nginx.conf with its port, upstream, log and temp paths pointed here (no root needed)."""
    text = (ROOT / "deploy" / "nginx.conf").read_text()
    replacements = {
        "server 127.0.0.1:8000;": f"server 127.0.0.1:{upstream};",
        "listen 80 default_server;": f"listen 127.0.0.1:{listen} default_server;",
        "access_log /dev/stdout;": f"access_log {prefix}/access.log;",
    }
    for old, new in replacements.items():
        assert old in text, f"deploy/nginx.conf no longer has {old!r}"
        text = text.replace(old, new)
    temp_paths = "".join(
        f"    {kind}_temp_path {prefix}/{kind};\n"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return text.replace("http {\n", "http {\n" + temp_paths, 1)


class Served:
    def __init__(self, tmp_path: Path):
        self.gunicorn_port, self.nginx_port = _free_port(), _free_port()
        self.dir = tmp_path
        self.processes: list[subprocess.Popen] = []

    def start(self) -> None:
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "portal.settings",
            "DATABASE_URL": _database_url_for_test_db(),
            "DEBUG": "0",
            "SECRET_KEY": "test-only-secret-key-not-for-any-deployment-0123456789",
            "PORTAL_VAR_DIR": str(self.dir / "var"),
            "PORTAL_MEDIA_ROOT": str(self.dir / "media"),
            "STORAGE_BACKEND": "local",
            "CELERY_TASK_ALWAYS_EAGER": "1",
            "PORTAL_CHECK_OFFICIAL": "0",
            "PORTAL_GUNICORN_BIND": f"127.0.0.1:{self.gunicorn_port}",
            "PORTAL_TRUSTED_PROXIES": "1",
            "PATH": f"{VENV_BIN}:{os.environ.get('PATH', '')}",
        }
        env.pop("PORTAL_BEHIND_TLS_PROXY", None)
        gunicorn_log = self.dir / "gunicorn.log"
        self.processes.append(
            subprocess.Popen(
                GUNICORN_ARGS,
                cwd=ROOT,
                env=env,
                stdout=gunicorn_log.open("ab"),
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )
        _wait_until_up(self.gunicorn_port, self.processes[0], gunicorn_log)
        prefix = self.dir / "nginx"
        prefix.mkdir()
        (prefix / "nginx.conf").write_text(nginx_config(prefix, self.nginx_port, self.gunicorn_port))
        directives = f"daemon off; pid {prefix}/nginx.pid; error_log {prefix}/error.log;"
        if os.geteuid() == 0:
            directives += " user root;"  # workers must write the temp paths under this private folder
        nginx_log = prefix / "error.log"
        self.processes.append(
            subprocess.Popen(
                [
                    NGINX,
                    "-p",
                    str(prefix),
                    "-c",
                    str(prefix / "nginx.conf"),
                    "-e",
                    str(nginx_log),
                    "-g",
                    directives,
                ],
                stdout=(prefix / "stdout.log").open("ab"),
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )
        _wait_until_up(self.nginx_port, self.processes[1], nginx_log)

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait(timeout=10)


@pytest.fixture
def served(tmp_path):
    if not os.path.isfile(NGINX):
        message = f"nginx not found at {NGINX} (apt-get install -y nginx-light)"
        if IN_CI:
            pytest.fail(f"{message}; CI must run the serving tests (.ci/run installs it).")
        pytest.skip(message)
    server = Served(tmp_path)
    try:
        server.start()
        yield server
    finally:
        server.stop()


class SlowClients:
    """Sockets that open a request and then send one header line every 2 s, never finishing it."""

    def __init__(self, port: int, count: int = SLOW_CLIENTS):
        self.sockets = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(count)]
        for sock in self.sockets:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\n")
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._trickle, daemon=True)
        self.thread.start()

    def _trickle(self) -> None:
        line = 0
        while not self.stopped.wait(2):
            line += 1
            for sock in self.sockets:
                try:
                    sock.sendall(f"X-Slow-{line}: 1\r\n".encode())
                except OSError:
                    pass

    def close(self) -> None:
        self.stopped.set()
        self.thread.join(timeout=5)
        for sock in self.sockets:
            sock.close()


def test_compose_starts_gunicorn_like_this_behind_nginx():
    compose = (ROOT / "docker-compose.yml").read_text()
    assert " ".join(GUNICORN_ARGS) in compose
    assert "./deploy/nginx.conf:/etc/nginx/nginx.conf:ro" in compose
    assert '"8000:8000"' not in compose  # gunicorn's port is published nowhere: only nginx's (80) is
    assert 'network_mode: "service:web"' in compose


def test_slow_clients_do_not_stall_the_workers_behind_nginx(served):
    slow = SlowClients(served.nginx_port)
    try:
        time.sleep(3)  # the slow clients have been trickling headers for a while
        response = _get(served.nginx_port, "/healthz", timeout=5)
        assert response.status == 200
        assert json.loads(response.body)["database"] == "ok"
    finally:
        slow.close()
    # The same slow clients straight at gunicorn (what docker-compose.yml used to publish) take every worker:
    slow = SlowClients(served.gunicorn_port)
    try:
        time.sleep(3)
        with pytest.raises(TimeoutError):
            _get(served.gunicorn_port, "/healthz", timeout=5)
    finally:
        slow.close()


def test_forwarded_proto_from_localhost_is_not_believed(served):
    # Straight from 127.0.0.1, which gunicorn's defaults would trust: still plain http, so no HSTS.
    direct = _get(served.gunicorn_port, "/", timeout=10, headers={"X-Forwarded-Proto": "https"})
    assert direct.status == 200
    assert direct.getheader("Strict-Transport-Security") is None
    # Through nginx, which replaces the client's X-Forwarded-* with its own.
    proxied = _get(served.nginx_port, "/", timeout=10, headers={"X-Forwarded-Proto": "https"})
    assert proxied.status == 200
    assert proxied.getheader("Strict-Transport-Security") is None
    assert "script-src 'self'" in proxied.getheader("Content-Security-Policy")


def test_chunked_part_upload_reaches_the_portal_whole(served, draft, role_users):
    from rest_framework.authtoken.models import Token

    token = Token.objects.create(user=role_users["submitter"]).key
    payload = os.urandom(300_000)
    digest = hashlib.sha256(payload).hexdigest()
    connection = http.client.HTTPConnection("127.0.0.1", served.nginx_port, timeout=30)
    auth = {"Host": "localhost", "Authorization": f"Token {token}"}
    connection.request(
        "POST",
        "/api/v1/uploads/",
        body=json.dumps(
            {"submission": draft.pk, "filename": "run.tar.gz", "size": len(payload), "sha256": digest}
        ),
        headers={**auth, "Content-Type": "application/json"},
    )
    started = connection.getresponse()
    body = json.loads(started.read())
    assert started.status == 201, body

    def chunks():
        for start in range(0, len(payload), 64 * 1024):
            yield payload[start : start + 64 * 1024]

    connection.request(
        "PUT",
        f"/api/v1/uploads/{body['id']}/parts/0/",
        body=chunks(),
        headers={**auth, "Content-Type": "application/octet-stream", "Transfer-Encoding": "chunked"},
        encode_chunked=True,
    )
    stored = connection.getresponse()
    answer = json.loads(stored.read())
    connection.close()
    assert stored.status == 200, answer
    assert [part["index"] for part in answer["received_parts"]] == [0]
    assert answer["received_parts"][0]["size_bytes"] == len(payload)
    assert answer["received_parts"][0]["sha256"] == digest
