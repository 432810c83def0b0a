"""How /healthz answers while slow clients hold connections: gunicorn as docker-compose.yml starts it
(`gunicorn -c deploy/gunicorn.conf.py portal.wsgi`), reached directly and through nginx with deploy/nginx.conf.

    .venv/bin/python bench/slow_clients.py [--clients 0,3,6,12] [--requests 10] [--nginx /usr/sbin/nginx]

Each slow client opens a request and sends one more header line every 2 s, never finishing it. For each number of
slow clients, prints the /healthz latency (median and worst of --requests, one at a time, 5 s timeout) directly
and through nginx. The portal runs zero-config (SQLite under a temporary folder; /healthz needs no migration).
A script, not a test: nothing asserts a time (tests/portal/test_serving.py checks the behaviour).
"""

from __future__ import annotations

import argparse
import http.client
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def healthz(port: int, timeout: float = 5.0) -> float | None:
    """Seconds to a 200 from /healthz, None on a timeout or error."""
    started = time.perf_counter()
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        connection.request("GET", "/healthz", headers={"Host": "localhost"})
        response = connection.getresponse()
        response.read()
        connection.close()
    except OSError:
        return None
    return time.perf_counter() - started if response.status == 200 else None


def wait_up(port: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if healthz(port, timeout=2) is not None:
            return
        time.sleep(0.3)
    raise SystemExit(f"nothing answers on port {port}")


def nginx_config(prefix: Path, listen: int, upstream: int) -> str:
    text = (ROOT / "deploy" / "nginx.conf").read_text()
    text = text.replace("server 127.0.0.1:8000;", f"server 127.0.0.1:{upstream};")
    text = text.replace("listen 80 default_server;", f"listen 127.0.0.1:{listen} default_server;")
    text = text.replace("access_log /dev/stdout;", "access_log off;")
    temp = "".join(
        f"    {k}_temp_path {prefix}/{k};\n" for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return text.replace("http {\n", "http {\n" + temp, 1)


class SlowClients:
    def __init__(self, port: int, count: int):
        self.sockets = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(count)]
        for sock in self.sockets:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\n")
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.trickle, daemon=True)
        self.thread.start()

    def trickle(self) -> None:
        line = 0
        while not self.stop.wait(2):
            line += 1
            for sock in self.sockets:
                try:
                    sock.sendall(f"X-Slow-{line}: 1\r\n".encode())
                except OSError:
                    pass

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=5)
        for sock in self.sockets:
            sock.close()


def measure(port: int, clients: int, requests: int) -> str:
    slow = SlowClients(port, clients)
    try:
        time.sleep(2.5)  # let the slow clients settle in (each has sent a header line more)
        times = [healthz(port) for _ in range(requests)]
    finally:
        slow.close()
    time.sleep(1)
    answered = [t for t in times if t is not None]
    if not answered:
        return f"all {requests} timed out"
    worst = "timeout" if len(answered) < len(times) else f"{max(answered) * 1000:.0f} ms"
    return f"median {statistics.median(answered) * 1000:.0f} ms, worst {worst} ({len(answered)}/{requests} answered)"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", default="0,3,6,12")
    parser.add_argument("--requests", type=int, default=10)
    parser.add_argument("--nginx", default="/usr/sbin/nginx")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="portal-slow-clients-"))
    gport, nport = free_port(), free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DATABASE_URL", "REDIS_URL", "PORTAL_", "STORAGE_", "CELERY_"))
    }
    env.update(
        DJANGO_SETTINGS_MODULE="portal.settings",
        PORTAL_VAR_DIR=str(work / "var"),
        PORTAL_GUNICORN_BIND=f"127.0.0.1:{gport}",
        PATH=f"{VENV_BIN}:{env.get('PATH', '')}",
    )
    processes = [
        subprocess.Popen(
            ["gunicorn", "-c", "deploy/gunicorn.conf.py", "portal.wsgi"],
            cwd=ROOT,
            env=env,
            stdout=(work / "gunicorn.log").open("ab"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    ]
    try:
        wait_up(gport)
        prefix = work / "nginx"
        prefix.mkdir()
        (prefix / "nginx.conf").write_text(nginx_config(prefix, nport, gport))
        directives = f"daemon off; pid {prefix}/nginx.pid; error_log {prefix}/error.log;"
        if os.geteuid() == 0:
            directives += " user root;"
        processes.append(
            subprocess.Popen(
                [
                    args.nginx,
                    "-p",
                    str(prefix),
                    "-c",
                    str(prefix / "nginx.conf"),
                    "-e",
                    str(prefix / "error.log"),
                    "-g",
                    directives,
                ],
                start_new_session=True,
            )
        )
        wait_up(nport)
        workers = os.environ.get("PORTAL_GUNICORN_WORKERS", "3")
        print(
            f"gunicorn: {workers} sync workers (deploy/gunicorn.conf.py); /healthz, {args.requests} requests each"
        )
        for clients in (int(c) for c in args.clients.split(",")):
            print(f"{clients:>3} slow clients  direct to gunicorn: {measure(gport, clients, args.requests)}")
            print(f"{clients:>3} slow clients  through nginx:      {measure(nport, clients, args.requests)}")
    finally:
        for process in reversed(processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(timeout=20)


if __name__ == "__main__":
    main()
