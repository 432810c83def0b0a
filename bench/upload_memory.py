"""Benchmark: memory of the web process while a large file is uploaded (issue 5: "Memory of the web
process does not grow with the upload's size").

    python bench/upload_memory.py [--sizes 64,256,1024] [--baseline-sizes 64,256] [--check off|eager]
                                  [--part-mb N] [--workdir DIR] [--keep]

What it does:
  1. In a temporary folder: a throwaway SQLite database (migrated), local file storage, a chair-made
     organisation, a submitter, a system, a draft submission of llama3_1-8b and the submitter's API token
     (via manage.py migrate + a small Django script). No REDIS_URL.
  2. Starts the portal as production does: `gunicorn portal.wsgi` with one sync worker, on a free
     loopback port, DEBUG off.
  3. For each size: writes a file of random bytes named bench-<MB>MB.tar.gz and sends it in a child
     process with checker.cli.remote's own client (`upload_file`, what `portal submit` runs: SHA-256, start,
     PUT every part, finish). Meanwhile the worker process's VmRSS (/proc/<worker>/status; the worker,
     not the gunicorn master) is sampled every 10 ms; its VmHWM is reset before each upload
     (/proc/<pid>/clear_refs) and read after. Client peak RSS is the child's ru_maxrss.
     With --check off (default) the version's check is queued to Celery's in-memory broker, which no
     worker reads (CELERY_TASK_ALWAYS_EAGER=0): the check does not run, so the figures are the upload's
     alone. With --check eager it runs in the finish request, as in the zero-config demo (random bytes:
     the checker refuses the archive at once, after copying it out of storage).
  4. Baseline for contrast: a second gunicorn (1 sync worker) serving bench/upload_memory_naive.py, a
     view that reads `request.body`; each baseline size is POSTed whole in one request (the client
     streams the file from disk, so only the server holds it).

Printed per size: parts seconds and MB/s (start + PUT parts), finish seconds (reassemble + hash + store),
the worker's idle RSS before the upload, its peak RSS during the parts and the finish, the growth (peak -
idle), and the client's peak RSS; then the ratio of the growth at the largest size to that at the smallest
(~1: bounded; ~largest/smallest: grows with the upload). This is a script, not a test: nothing asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = Path(__file__).resolve().parent
PYTHON = sys.executable
GUNICORN = str(Path(sys.executable).with_name("gunicorn"))
MB = 1024 * 1024

SETUP_SCRIPT = """
from accounts.services import organisations as accounts
from accounts.services.tokens import api_token_create
from accounts.models import Membership, Organisation
from catalog.models import Benchmark
from submissions import services
org = accounts.organisation_create(name="Bench Org", kind=Organisation.Kind.HARDWARE_VENDOR)
user = accounts.user_create(username="bench-submitter", email="bench@example.org")
accounts.membership_grant(user=user, organisation=org, role=Membership.Role.SUBMITTER)
system = services.system_register(organisation=org, name="bench-system", description={}, actor=user)
benchmark = Benchmark.objects.get(model_id="llama3_1-8b")
submission = services.submission_create(actor=user, system=system, benchmark=benchmark)
_, key = api_token_create(user=user, name="bench", scope="write")
print("BENCH", key, submission.pk)
"""


# --- helpers ---------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def proc_status_kb(pid: int, field: str) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        return None
    return None


def reset_hwm(pid: int) -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0: write 5 to clear_refs)."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as handle:
            handle.write("5")
        return True
    except OSError:
        return False


def children_of(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                stat = handle.read()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces, so split after the last ')'
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry))
    return found


class Sampler(threading.Thread):
    """Samples a process's VmRSS (kB) every `every` seconds, with monotonic timestamps."""

    def __init__(self, pid: int, every: float = 0.01):
        super().__init__(daemon=True)
        self.pid, self.every = pid, every
        self.samples: list[tuple[float, int]] = []
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.is_set():
            rss = proc_status_kb(self.pid, "VmRSS")
            if rss is not None:
                self.samples.append((time.monotonic(), rss))
            time.sleep(self.every)

    def stop(self) -> None:
        self._stop_event.set()
        self.join()

    def peak_between(self, start: float, end: float) -> int:
        values = [rss for t, rss in self.samples if start <= t <= end]
        return max(values) if values else 0


def write_random_file(path: Path, size: int) -> None:
    with open(path, "wb") as handle:
        left = size
        while left:
            chunk = os.urandom(min(MB, left))
            handle.write(chunk)
            left -= len(chunk)


def wait_http(url: str, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited early with code {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                response.read()
                return
        except urllib.error.HTTPError:
            return  # it answers
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"server did not answer {url} within {timeout} s")


class Gunicorn:
    """gunicorn with one sync worker; `worker` is the worker process's pid (not the master's)."""

    def __init__(self, app: str, *, env: dict, cwd: Path, log: Path, probe_path: str):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(log, "wb")
        self.proc = subprocess.Popen(
            [
                GUNICORN,
                app,
                "--bind",
                f"127.0.0.1:{self.port}",
                "--workers",
                "1",
                "--worker-class",
                "sync",
                "--timeout",
                "900",
                "--log-level",
                "warning",
            ],
            cwd=cwd,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        wait_http(self.url + probe_path, self.proc)
        workers = children_of(self.proc.pid)
        if len(workers) != 1:
            self.stop()
            raise SystemExit(f"expected one gunicorn worker, found {workers}")
        self.worker = workers[0]

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def measure(server: Gunicorn, run_client) -> dict:
    """Run `run_client()` (returns the client's figures incl. monotonic phase times) while sampling the worker."""
    idle = proc_status_kb(server.worker, "VmRSS") or 0
    hwm_reset = reset_hwm(server.worker)
    sampler = Sampler(server.worker)
    sampler.start()
    try:
        client = run_client()
    finally:
        time.sleep(0.05)
        sampler.stop()
    hwm = proc_status_kb(server.worker, "VmHWM") or 0
    return {"idle_kb": idle, "hwm_kb": hwm if hwm_reset else None, "sampler": sampler, **client}


def run_child(args: list[str], env: dict) -> dict:
    """A client child process; its JSON line on stdout plus its peak RSS (ru_maxrss, kB)."""
    proc = subprocess.Popen(
        [PYTHON, str(Path(__file__).resolve()), *args], cwd=ROOT, env=env, stdout=subprocess.PIPE
    )
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"client failed ({proc.returncode}): {out[-2000:]!r}")
    result = json.loads(out.decode().strip().splitlines()[-1])
    result["client_peak_kb"] = usage.ru_maxrss
    return result


# --- client children -------------------------------------------------------------------------


def client_chunked(url: str, token: str, submission: int, path: str) -> None:
    """Send `path` exactly as `portal submit` does (checker.cli.remote.uploads.upload_file), timing the phases."""
    sys.path.insert(0, str(ROOT))
    from checker.cli.remote.client import Client
    from checker.cli.remote.uploads import upload_file

    marks: dict[str, float] = {}

    class TimedClient(Client):
        def request(self, method, path_, **kwargs):
            if method == "POST" and path_ == "uploads/":
                marks["start"] = time.monotonic()
            if path_.endswith("/finish/"):
                marks["finish"] = time.monotonic()
            return super().request(method, path_, **kwargs)

    client = TimedClient(url, token, timeout=900)
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
    version = response.get("version") or {}
    print(
        json.dumps(
            {
                "t0": t0,
                "start": marks["start"],
                "finish": marks["finish"],
                "end": end,
                "status": response["upload"]["status"],
                "version": version.get("id"),
                "parts": response["upload"]["parts_expected"],
            }
        )
    )


def client_naive(url: str, path: str) -> None:
    """POST the whole file in one request, streamed from disk (the client holds 8 KiB at a time)."""
    size = os.path.getsize(path)
    with open(path, "rb") as handle:
        request = urllib.request.Request(
            url + "/upload/",
            data=handle,
            method="POST",
            headers={"Content-Type": "application/octet-stream", "Content-Length": str(size)},
        )
        start = time.monotonic()
        with urllib.request.urlopen(request, timeout=900) as response:
            answer = json.loads(response.read())
        end = time.monotonic()
    if answer["size"] != size:
        raise SystemExit(f"naive server received {answer['size']} of {size} bytes")
    print(json.dumps({"t0": start, "start": start, "finish": end, "end": end}))


# --- the benchmark ---------------------------------------------------------------------------


def portal_env(work: Path, check: str, part_mb: int | None = None) -> dict:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("REDIS_", "DATABASE_", "PORTAL_", "CELERY_"))
    }
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "portal.settings",
            "PYTHONPATH": str(ROOT),
            "DEBUG": "0",
            "SECRET_KEY": secrets.token_urlsafe(48),
            "PORTAL_ENDPOINT_KEY": secrets.token_urlsafe(48),
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "PORTAL_VAR_DIR": str(work / "var"),
            "DATABASE_URL": f"sqlite:///{work / 'portal.sqlite3'}",
            "STORAGE_BACKEND": "local",
            "PORTAL_MEDIA_ROOT": str(work / "media"),
            "PORTAL_STATIC_ROOT": str(work / "static"),
            "LOG_LEVEL": "WARNING",
            "EMAIL_URL": "dummy://",
            # off: the check is queued to the in-memory broker and never runs; eager: it runs in the finish request.
            "CELERY_TASK_ALWAYS_EAGER": "1" if check == "eager" else "0",
        }
    )
    if part_mb:
        env["PORTAL_UPLOAD_PART_BYTES"] = str(part_mb * MB)
    env.pop("REDIS_URL", None)
    return env


def setup_portal(work: Path, env: dict) -> tuple[str, int]:
    manage = [PYTHON, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True)
    out = subprocess.run(
        [*manage, "shell", "-c", SETUP_SCRIPT], cwd=ROOT, env=env, check=True, capture_output=True, text=True
    ).stdout
    line = next(line for line in out.splitlines() if line.startswith("BENCH "))
    _, token, submission = line.split()
    return token, int(submission)


def mb(kb: int | None) -> str:
    return "-" if kb is None else f"{kb / 1024:.0f}"


def print_table(title: str, rows: list[dict], *, chunked: bool) -> None:
    print(f"\n{title}")
    if chunked:
        print(
            f"{'size MB':>8} {'parts s':>8} {'MB/s':>7} {'finish s':>9} {'total MB/s':>10} {'idle MB':>8} "
            f"{'peak parts':>10} {'peak finish':>11} {'VmHWM':>6} {'growth MB':>9} {'client MB':>9}"
        )
    else:
        print(
            f"{'size MB':>8} {'upload s':>8} {'MB/s':>7} {'idle MB':>8} {'peak MB':>8} {'VmHWM':>6} "
            f"{'growth MB':>9} {'client MB':>9}"
        )
    for r in rows:
        if chunked:
            print(
                f"{r['size_mb']:>8} {r['parts_s']:>8.2f} {r['size_mb'] / r['parts_s']:>7.1f} {r['finish_s']:>9.2f} "
                f"{r['size_mb'] / (r['parts_s'] + r['finish_s']):>10.1f} {mb(r['idle_kb']):>8} "
                f"{mb(r['peak_parts_kb']):>10} {mb(r['peak_finish_kb']):>11} {mb(r['hwm_kb']):>6} "
                f"{mb(r['growth_kb']):>9} {mb(r['client_peak_kb']):>9}"
            )
        else:
            print(
                f"{r['size_mb']:>8} {r['parts_s']:>8.2f} {r['size_mb'] / r['parts_s']:>7.1f} {mb(r['idle_kb']):>8} "
                f"{mb(r['peak_parts_kb']):>8} {mb(r['hwm_kb']):>6} {mb(r['growth_kb']):>9} "
                f"{mb(r['client_peak_kb']):>9}"
            )
    if len(rows) >= 2:
        small, large = rows[0], rows[-1]
        ratio = large["growth_kb"] / max(small["growth_kb"], 1)
        print(
            f"peak RSS growth {large['size_mb']} MB / {small['size_mb']} MB: {mb(large['growth_kb'])} / "
            f"{mb(small['growth_kb'])} MB = {ratio:.2f}x (sizes {large['size_mb'] / small['size_mb']:.0f}x apart; "
            "~1x = bounded)"
        )


def row_from(size_mb: int, m: dict) -> dict:
    sampler: Sampler = m["sampler"]
    peak_parts = sampler.peak_between(m["t0"], m["finish"])
    peak_finish = sampler.peak_between(m["finish"], m["end"] + 0.05)
    peak = max(peak_parts, peak_finish, m["hwm_kb"] or 0)
    return {
        "size_mb": size_mb,
        "parts_s": m["finish"] - m["start"] if m["finish"] > m["start"] else m["end"] - m["start"],
        "finish_s": m["end"] - m["finish"],
        "idle_kb": m["idle_kb"],
        "peak_parts_kb": peak_parts,
        "peak_finish_kb": peak_finish,
        "hwm_kb": m["hwm_kb"],
        "growth_kb": peak - m["idle_kb"],
        "client_peak_kb": m["client_peak_kb"],
        "samples": len(sampler.samples),
    }


def bench_chunked(work: Path, sizes: list[int], check: str, part_mb: int | None) -> list[dict]:
    env = portal_env(work, check, part_mb)
    token, submission = setup_portal(work, env)
    server = Gunicorn(
        "portal.wsgi", env=env, cwd=ROOT, log=work / "portal-gunicorn.log", probe_path="/api/v1/benchmarks/"
    )
    print(
        f"portal: gunicorn portal.wsgi, 1 sync worker, {server.url}, master {server.proc.pid}, "
        f"worker {server.worker}; check {check}; part size {part_mb or 8} MiB",
        flush=True,
    )
    rows = []
    try:
        # Warm-up (imports, first queries, the upload code paths) so idle RSS is the steady state.
        warm = work / "warmup.tar.gz"
        write_random_file(warm, 3 * MB)
        run_child(["_client", server.url, token, str(submission), str(warm)], env)
        warm.unlink()
        for size_mb in sizes:
            path = work / f"bench-{size_mb}MB.tar.gz"
            write_random_file(path, size_mb * MB)
            m = measure(
                server,
                lambda path=path: run_child(["_client", server.url, token, str(submission), str(path)], env),
            )
            path.unlink()
            row = row_from(size_mb, m)
            rows.append(row)
            print(
                f"  {size_mb} MB: {m['parts']} parts, upload {m['status']}, version {m['version']}; "
                f"parts {row['parts_s']:.2f} s, finish {row['finish_s']:.2f} s, worker peak "
                f"{mb(max(row['peak_parts_kb'], row['peak_finish_kb']))} MB (idle {mb(row['idle_kb'])}), "
                f"{row['samples']} samples",
                flush=True,
            )
            shutil.rmtree(work / "media" / "blobs", ignore_errors=True)  # keep the disk use to one size
    finally:
        server.stop()
    return rows


def bench_naive(work: Path, sizes: list[int]) -> list[dict]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    env["DJANGO_SETTINGS_MODULE"] = "upload_memory_naive"
    server = Gunicorn(
        "upload_memory_naive:application",
        env=env,
        cwd=BENCH,
        log=work / "naive-gunicorn.log",
        probe_path="/upload/",
    )
    print(
        f"naive baseline: gunicorn upload_memory_naive:application, 1 sync worker, {server.url}, "
        f"worker {server.worker}",
        flush=True,
    )
    rows = []
    try:
        warm = work / "warmup.bin"
        write_random_file(warm, MB)
        run_child(["_naive", server.url, str(warm)], env)
        warm.unlink()
        for size_mb in sizes:
            path = work / f"naive-{size_mb}MB.tar.gz"
            write_random_file(path, size_mb * MB)
            m = measure(server, lambda path=path: run_child(["_naive", server.url, str(path)], env))
            path.unlink()
            row = row_from(size_mb, m)
            rows.append(row)
            print(
                f"  {size_mb} MB: {row['parts_s']:.2f} s, worker peak {mb(row['peak_parts_kb'])} MB "
                f"(idle {mb(row['idle_kb'])})",
                flush=True,
            )
    finally:
        server.stop()
    return rows


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "_client":
        client_chunked(argv[1], argv[2], int(argv[3]), argv[4])
        return 0
    if argv and argv[0] == "_naive":
        client_naive(argv[1], argv[2])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes", default="64,256,1024", help="chunked upload sizes in MiB (comma-separated)"
    )
    parser.add_argument(
        "--baseline-sizes",
        default="64,256",
        help="naive single-request sizes in MiB; empty to skip the baseline",
    )
    parser.add_argument(
        "--check",
        choices=("off", "eager"),
        default="off",
        help="off: the check is queued and never runs (default); eager: it runs in the finish",
    )
    parser.add_argument(
        "--part-mb", type=int, help="PORTAL_UPLOAD_PART_BYTES in MiB (default: the portal's, 8)"
    )
    parser.add_argument("--workdir", help="parent folder of the temporary folder (default: the system's)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (logs, database)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    baseline_sizes = [int(s) for s in args.baseline_sizes.split(",") if s.strip()]
    work = Path(tempfile.mkdtemp(prefix="upload-memory-", dir=args.workdir))
    print(f"work folder {work}; python {sys.version.split()[0]}; {os.cpu_count()} CPUs", flush=True)
    try:
        chunked = bench_chunked(work, sizes, args.check, args.part_mb) if sizes else []
        naive = bench_naive(work, baseline_sizes) if baseline_sizes else []
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    if chunked:
        print_table(
            f"chunked upload API (gunicorn portal.wsgi, 1 sync worker, check {args.check}, "
            f"{args.part_mb or 8} MiB parts; "
            "RSS of the worker in MB)",
            chunked,
            chunked=True,
        )
    if naive:
        print_table(
            "naive baseline: one POST, view reads request.body (RSS of the worker in MB)",
            naive,
            chunked=False,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
