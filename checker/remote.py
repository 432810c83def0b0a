"""`portal submit` and `portal status`: talk to a portal over its HTTP API (stdlib only, no Django).

    portal submit PATH... --url URL --token TOKEN [--system NAME] [--benchmark ID] [--submission ID]
                  [--wait] [--json] [--timeout S]
    portal status SUBMISSION_ID --url URL --token TOKEN

PORTAL_URL and PORTAL_TOKEN may replace --url and --token. Where it goes: --submission ID adds a version to that
submission (a draft, or one with changes requested); otherwise a new draft is created for the system and
benchmark the files name (every load point names both) unless --system/--benchmark say them, and it says so
before uploading, naming the caller's drafts of that system and benchmark already open. It asks for
--system/--benchmark only when the files name several (or none). It prints the submission's web address. What is uploaded:
  * one archive file: as is;
  * a folder (a bundle, or a run folder): packed into a .tar.gz made in a temporary folder;
  * several paths: each becomes one file of the same version (a set of run archives), each file its
    own chunked upload, the last finish joining them.
Each file is sent in the server's part size, with an Idempotency-Key per request; a failed part is
retried with backoff, and before retrying the client re-asks which parts the server already holds,
so an interrupted upload resumes. Across invocations too: before starting a file, the client asks the
server for an upload of the same file (SHA-256 + size) it started for the same draft (or for the same
system + benchmark) that is still open or verified, and continues it, sending only the missing parts.
The server is the only state (nothing is written on this machine); a folder is packed reproducibly so
its archive hashes the same on every run. Exit codes: 0 the check passed, 1 it found errors, 2 usage or
transport failure (also when the check could not run, or --wait timed out).
"""

from __future__ import annotations

import base64
import email.utils
import gzip
import hashlib
import json
import os
import re
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

EXIT_PASS, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
RETRIES = 5
THROTTLED_WAITS = 8  # HTTP 429s waited out per request before giving up
RETRY_AFTER_MAX_S = 120.0


def retry_after_s(header: str | None, *, now: float | None = None) -> float:
    """Seconds to wait from a Retry-After header: delta-seconds or an HTTP date, clamped to 1..RETRY_AFTER_MAX_S
    (5 s when the header is missing or unreadable)."""
    if not header:
        return 5.0
    header = header.strip()
    if header.isascii() and header.isdigit():
        seconds = float(header)
    else:
        try:
            when = email.utils.parsedate_to_datetime(header)
        except (TypeError, ValueError):
            return 5.0
        if when is None or when.tzinfo is None:
            return 5.0
        seconds = when.timestamp() - (time.time() if now is None else now)
    return min(max(seconds, 1.0), RETRY_AFTER_MAX_S)


class RemoteError(Exception):
    """A refusal or transport failure; `code` is the portal's stable error code when it sent one."""

    def __init__(self, message: str, *, http_status: int | None = None, code: str | None = None, body=None):
        super().__init__(message)
        self.http_status, self.code, self.body = http_status, code, body or {}


class Client:
    """A tiny JSON-over-HTTP client for /api/v1/ with token auth."""

    def __init__(self, url: str, token: str, *, timeout: float = 60.0):
        self.base = url.rstrip("/") + "/api/v1/"
        self.token = token
        self.timeout = timeout

    def request(
        self,
        method: str,
        path: str,
        *,
        body=None,
        data: bytes | None = None,
        idempotency_key: str | None = None,
        retries: int = RETRIES,
    ):
        headers = {"Authorization": f"Token {self.token}", "Accept": "application/json"}
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        elif data is not None:
            headers["Content-Type"] = "application/octet-stream"
        if idempotency_key:
            headers["Idempotency-Key"] = idempotency_key
        url = urllib.parse.urljoin(self.base, path)
        delay = 0.5
        throttled = 0
        attempt = -1
        while attempt < retries:
            attempt += 1
            req = urllib.request.Request(url, data=data, method=method, headers=headers)
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as response:
                    raw = response.read()
                    return json.loads(raw) if raw else None
            except urllib.error.HTTPError as exc:
                raw = exc.read()
                try:
                    payload = json.loads(raw) if raw else {}
                except ValueError:
                    payload = {}
                code = payload.get("code") if isinstance(payload, dict) else None
                if exc.code == 429 and throttled < THROTTLED_WAITS:
                    # The server's rate limit: wait what it asks (Retry-After), then send the same request again.
                    throttled += 1
                    wait = retry_after_s(exc.headers.get("Retry-After"))
                    print(
                        f"portal: rate limited by the server ({path}); retrying in {wait:.0f} s "
                        f"({throttled}/{THROTTLED_WAITS})",
                        file=sys.stderr,
                    )
                    time.sleep(wait)
                    attempt -= 1  # a throttled request was not processed: it does not use up a retry
                    continue
                if exc.code >= 500 or code == "idempotency-key-in-progress":
                    if attempt < retries:
                        time.sleep(delay)
                        delay = min(delay * 2, 10)
                        continue
                detail = payload.get("detail") if isinstance(payload, dict) else None
                raise RemoteError(
                    f"{method} {path}: HTTP {exc.code}: {detail or exc.reason}",
                    http_status=exc.code,
                    code=code,
                    body=payload,
                ) from None
            except (urllib.error.URLError, OSError, TimeoutError) as exc:
                if attempt < retries:
                    time.sleep(delay)
                    delay = min(delay * 2, 10)
                    continue
                raise RemoteError(f"{method} {url}: {getattr(exc, 'reason', exc)}") from None
        raise RemoteError(f"{method} {url}: gave up")  # pragma: no cover


# --- packing ---------------------------------------------------------------------------------


def pack(paths: list[Path], workdir: Path) -> list[Path]:
    """The files to upload: archives as they are, folders packed into <name>.tar.gz in workdir."""
    files = []
    for path in paths:
        if path.is_dir():
            target = workdir / f"{path.resolve().name or 'bundle'}.tar.gz"
            # Same folder, same bytes (sorted members, no owner, gzip mtime 0): a re-run can resume the upload.
            with (
                open(target, "wb") as raw,
                gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz,
                tarfile.open(fileobj=gz, mode="w") as tar,
            ):
                tar.add(path, arcname=path.resolve().name, filter=_plain_members)
            files.append(target)
        else:
            files.append(path)
    return files


def _plain_members(info: tarfile.TarInfo):
    # Only regular files and folders: the portal refuses links anyway, so leave them out with a note.
    if info.isreg() or info.isdir():
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        return info
    print(f"portal submit: leaving out {info.name} (not a regular file)", file=sys.stderr)
    return None


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1024 * 1024):
            digest.update(chunk)
    return digest.hexdigest()


class Progress:
    """Upload progress on stderr: a one-line bar on a terminal, a plain line every quarter otherwise (logs, CI),
    nothing with -q."""

    def __init__(self, name: str, total: int, *, enabled: bool, plain: bool = False):
        self.name, self.total, self.enabled, self.plain = name, total, enabled, plain
        self.done = 0
        self.said = -1  # the last quarter printed in plain mode

    def advance(self, count: int) -> None:
        self.done += count
        percent = self.done * 100 // max(self.total, 1)
        if self.enabled:
            width = 30
            filled = int(width * self.done / self.total) if self.total else width
            sys.stderr.write(f"\r{self.name[:30]:<30} [{'#' * filled}{'.' * (width - filled)}] {percent:3d}%")
            if self.done >= self.total:
                sys.stderr.write("\n")
            sys.stderr.flush()
        elif self.plain and percent // 25 > self.said:
            self.said = percent // 25
            sys.stderr.write(f"uploading {self.name}: {percent}% of {self.total:,} bytes\n")
            sys.stderr.flush()


class CheckProgress:
    """The portal's check while --wait polls it: a bar on a terminal, a plain line per change otherwise."""

    def __init__(self, *, enabled: bool, plain: bool = False):
        self.enabled, self.plain = enabled, plain
        self.last = ""

    def show(self, run: dict) -> None:
        done, total = run.get("progress_done") or 0, run.get("progress_total") or 0
        stage = {"points": "recomputing load points", "rules": "applying the rules"}.get(
            run.get("progress_stage") or "", run.get("progress_stage") or ""
        )
        what = "waiting for a worker" if run.get("status") == "queued" else (stage or run.get("status", ""))
        text = f"checking: {what}, {done}/{total or '?'} points"
        if self.enabled:
            width = 20
            filled = int(width * done / total) if total else 0
            sys.stderr.write(f"\r{text[:50]:<50} [{'#' * filled}{'.' * (width - filled)}]")
            sys.stderr.flush()
        elif self.plain and text != self.last:
            sys.stderr.write(text + "\n")
            sys.stderr.flush()
        self.last = text

    def end(self) -> None:
        if self.enabled and self.last:
            sys.stderr.write("\n")
            sys.stderr.flush()


def find_resumable(
    client: Client, *, sha256: str, size: int, submission: int | None, start_fields: dict
) -> dict | None:
    """An upload of the same file (SHA-256 + size) that the caller started for the same draft (or, for a new
    draft, for the same system and benchmark) and the server still holds: open (some parts may be missing)
    or verified (waiting to join a version). The server is the only state: nothing is kept on this machine."""
    query = [
        ("sha256", sha256),
        ("size", size),
        ("status", "open"),
        ("status", "verifying"),
        ("status", "verified"),
        ("mine", "true"),
        ("submission_status", "draft"),
    ]
    if submission is not None:
        query.append(("submission", submission))
    else:
        query += [("system", start_fields["system"]), ("benchmark", start_fields["benchmark"])]
    found = client.request("GET", "uploads/?" + urllib.parse.urlencode(query))
    candidates = found.get("results", []) if isinstance(found, dict) else (found or [])
    if not candidates:
        return None
    # Verified first (nothing left to send), then the one holding the most parts, then the newest.
    return max(
        candidates,
        key=lambda u: (
            u["status"] == "verified",
            len(u.get("received_parts") or []),
            u.get("created_at") or "",
        ),
    )


def hash_mismatch_advice(path: Path, sha256: str, size: int, body: dict) -> str:
    """What to do when the server's hash of the received bytes is not the file's (`upload-hash-mismatch`)."""
    now = file_sha256(path)
    if now != sha256:
        return (
            f"{path.name} changed while it was being uploaded (SHA-256 {sha256} when the upload started, "
            f"{now} now). The portal discarded this upload of the file and created no version. Wait until "
            f"nothing writes to {path} any more (or upload a finished copy), then run the same command again."
        )
    received = body.get("received_sha256") or "?"
    received_bytes = body.get("received_bytes")
    got = (
        f"{received_bytes} bytes, SHA-256 {received}" if received_bytes is not None else f"SHA-256 {received}"
    )
    return (
        f"the portal received bytes of {path.name} that do not match the file ({got} instead of {size} bytes, "
        f"SHA-256 {sha256}): they were damaged on the way or in the portal's storage. The portal discarded "
        "this upload of the file and created no version; files already verified are kept. Run the same "
        f"command again: it sends {path.name} again from the start. If this happens again, send this message "
        "to the portal's operators."
    )


def upload_file(
    client: Client,
    path: Path,
    *,
    submission: int | None,
    start_fields: dict,
    run_key: str,
    create_version: bool,
    include: list[str],
    show_progress: bool,
    quiet: bool = False,
    plain_progress: bool = False,
) -> dict:
    """One file through start / parts / finish, resuming from what the server holds (also an upload of the same
    file left open by an earlier, interrupted `portal submit`); the finish response."""
    size = path.stat().st_size
    sha256 = file_sha256(path)
    upload = find_resumable(
        client, sha256=sha256, size=size, submission=submission, start_fields=start_fields
    )
    if upload is not None:
        if not quiet:
            held = upload["parts_expected"] - len(upload.get("missing_parts") or [])
            what = (
                "already verified"
                if upload["status"] == "verified"
                else (f"{held} of {upload['parts_expected']} parts already on the server")
            )
            print(f"portal submit: resuming {path.name} (upload {upload['id']}, {what})", file=sys.stderr)
    else:
        # auto: straight to the bucket when the portal stores in S3 (presigned multipart), else through the portal.
        start = {"filename": path.name, "size": size, "sha256": sha256, "transfer": "auto", **start_fields}
        if submission is not None:
            start["submission"] = submission
        upload = client.request(
            "POST", "uploads/", body=start, idempotency_key=f"{run_key}-start-{sha256[:16]}"
        )
    upload_id, part_size = upload["id"], upload["part_size"]
    progress = Progress(path.name, size, enabled=show_progress, plain=plain_progress)
    missing = (
        list(upload.get("missing_parts", range(upload["parts_expected"])))
        if upload["status"] == "open"
        else []
    )
    progress.advance(size - sum(min(part_size, size - i * part_size) for i in missing))
    if upload.get("transfer") == "direct":
        return _upload_direct(
            client,
            path,
            upload,
            missing=missing,
            sha256=sha256,
            size=size,
            run_key=run_key,
            create_version=create_version,
            include=include,
            progress=progress,
            quiet=quiet,
        )
    for round_ in range(RETRIES + 1):
        failed = []
        with open(path, "rb") as handle:
            for index in missing:
                handle.seek(index * part_size)
                chunk = handle.read(part_size)
                try:
                    client.request(
                        "PUT",
                        f"uploads/{upload_id}/parts/{index}/",
                        data=chunk,
                        retries=2,
                        idempotency_key=f"{run_key}-{upload_id}-part-{index}",
                    )
                    progress.advance(len(chunk))
                except RemoteError as exc:
                    if exc.http_status is not None and exc.http_status < 500:
                        raise
                    failed.append(index)
        if not failed:
            break
        time.sleep(min(2**round_, 10))
        # Resume from the server's view, not ours: a part may have arrived though its answer was lost.
        status = client.request("GET", f"uploads/{upload_id}/")
        missing = status["missing_parts"]
        if not missing:
            break
    else:
        raise RemoteError(f"{path.name}: parts {failed[:10]} could not be sent")
    if not quiet:
        print(
            f"portal submit: verifying {path.name} on the server"
            + (" and creating the version (the check starts at once)…" if create_version else "…"),
            file=sys.stderr,
        )
    try:
        return client.request(
            "POST",
            f"uploads/{upload_id}/finish/",
            body={"sha256": sha256, "create_version": create_version, "include_uploads": include},
            idempotency_key=f"{run_key}-{upload_id}-finish",
        )
    except RemoteError as exc:
        if exc.code != "upload-hash-mismatch":
            raise
        raise RemoteError(
            hash_mismatch_advice(path, sha256, size, exc.body),
            http_status=exc.http_status,
            code=exc.code,
            body=exc.body,
        ) from None


# How long `portal submit` waits for the portal's worker to verify a file sent straight to the bucket.
VERIFY_WAIT_S = 3600


def put_to_bucket(url: str, data: bytes, headers: dict, *, timeout: float = 300.0) -> str:
    """PUT one part to its presigned URL (the bucket itself, not the portal); its ETag."""
    request = urllib.request.Request(url, data=data, method="PUT", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.headers.get("ETag", "")
    except urllib.error.HTTPError as exc:
        body = exc.read()[:2000].decode("utf-8", "replace")
        found = re.search(r"<Code>([^<]+)</Code>", body)
        code = found.group(1) if found else None
        raise RemoteError(
            f"PUT part to the bucket: HTTP {exc.code}: {code or exc.reason}", http_status=exc.code, code=code
        ) from None


def _upload_direct(
    client: Client,
    path: Path,
    upload: dict,
    *,
    missing: list[int],
    sha256: str,
    size: int,
    run_key: str,
    create_version: bool,
    include: list[str],
    progress: Progress,
    quiet: bool,
    poll_s: float = 1.0,
) -> dict:
    """The parts straight to the bucket (each signed for its exact length and MD5 just before it is sent), then
    finish; the portal's worker verifies the SHA-256 and answers through the upload's status."""
    upload_id, part_size = upload["id"], upload["part_size"]
    for round_ in range(RETRIES + 1):
        failed = []
        with open(path, "rb") as handle:
            for index in missing:
                handle.seek(index * part_size)
                chunk = handle.read(part_size)
                md5 = base64.b64encode(hashlib.md5(chunk).digest()).decode("ascii")
                signed = client.request(
                    "POST",
                    f"uploads/{upload_id}/sign/",
                    body={"parts": [{"index": index, "content_md5": md5}]},
                )["parts"][0]
                try:
                    put_to_bucket(signed["url"], chunk, signed["headers"])
                    progress.advance(len(chunk))
                except (RemoteError, urllib.error.URLError, OSError, TimeoutError) as exc:
                    if isinstance(exc, RemoteError) and exc.http_status is not None and exc.http_status < 500:
                        raise
                    failed.append(index)
        if not failed:
            break
        time.sleep(min(2**round_, 10))
        missing = client.request("GET", f"uploads/{upload_id}/")["missing_parts"]  # what the bucket holds
        if not missing:
            break
    else:
        raise RemoteError(f"{path.name}: parts {failed[:10]} could not be sent to the bucket")
    if not quiet:
        print(
            f"portal submit: {path.name} is in the bucket; the portal verifies its SHA-256…", file=sys.stderr
        )
    finished = client.request(
        "POST",
        f"uploads/{upload_id}/finish/",
        body={"sha256": sha256, "create_version": create_version, "include_uploads": include},
        idempotency_key=f"{run_key}-{upload_id}-finish",
    )
    current = finished["upload"]
    deadline = time.monotonic() + VERIFY_WAIT_S
    while current["status"] == "verifying":
        if time.monotonic() > deadline:
            raise RemoteError(
                f"{path.name}: the portal has not verified it within {VERIFY_WAIT_S} s (its workers are busy); "
                "run the same command again later: nothing is sent twice."
            )
        time.sleep(poll_s)
        current = client.request("GET", f"uploads/{upload_id}/")
    if current["status"] == "aborted":
        if file_sha256(path) != sha256:
            message = hash_mismatch_advice(path, sha256, size, {})
        else:
            message = (
                f"{path.name}: {current.get('error_message') or 'the portal aborted this upload.'} Run the same "
                f"command again: it sends {path.name} again from the start."
            )
        raise RemoteError(message, code="upload-hash-mismatch", body=current)
    version = None
    if current.get("version") is not None:
        version = client.request("GET", f"versions/{current['version']}/")
    elif create_version:
        raise RemoteError(
            f"{path.name}: verified, but {current.get('error_message') or 'no version was made'}"
        )
    return {"upload": current, "version": version}


# --- printing --------------------------------------------------------------------------------


def _fmt(value, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def print_check_run(run: dict, out=sys.stdout) -> None:
    counts = run.get("counts") or {}
    out.write(
        f"check run {run['id']}: {run['status']}  (attempt {run.get('attempts')}/{run.get('max_attempts')}, "
        f"checker {run.get('checker_version') or '-'}, rules {run.get('ruleset') or '-'})\n"
    )
    if run.get("error_message"):
        out.write(f"  note: {run['error_message']}\n")
    findings = run.get("findings") or []
    if counts:
        out.write(
            f"  {counts.get('error', 0)} error(s), {counts.get('warning', 0)} warning(s), "
            f"{counts.get('info', 0)} note(s)\n"
        )
        portal_only = [f for f in findings if f.get("portal_only")]
        if portal_only:
            out.write(
                f"  {len(portal_only)} of them from rules only the portal runs (marked 'portal only'; "
                "`portal check` on the same files does not report them)\n"
            )
    points = run.get("point_metrics") or []
    if points:
        out.write(
            f"\n  {'point':<38} {'region':<17} {'system_tps':>11} {'tps/user':>10} {'ttft_p90_ms':>12} "
            f"{'claimed_tps':>12}\n"
        )
        for point in points:
            recomputed = point.get("recomputed") or {}
            claimed = point.get("claimed") or {}
            region = point.get("region") or (point.get("extra") or {}).get("region") or "-"
            out.write(
                f"  {point['key'][:38]:<38} {str(region)[:17]:<17} {_fmt(recomputed.get('system_tps')):>11} "
                f"{_fmt(recomputed.get('tps_per_user')):>10} {_fmt(recomputed.get('ttft_p90_ms')):>12} "
                f"{_fmt(claimed.get('system_tps')):>12}\n"
            )
    if findings:
        out.write("\n")
        for finding in findings:
            where = finding.get("file") or finding.get("point") or ""
            if finding.get("line"):
                where += f":{finding['line']}"
            origin = " (portal only)" if finding.get("portal_only") else ""
            out.write(
                f"  {finding['severity'].upper():<7} {finding['rule']}{origin}: {finding['message']}"
                f"{f'  [{where}]' if where else ''}\n"
            )
            if finding.get("fix"):
                out.write(f"          fix: {finding['fix']}\n")


def run_as_json(run: dict | None, *, submission: int, version: dict, url: str) -> dict:
    """What `portal submit --json` prints: where the version is, the check's final status, findings and points."""
    out: dict = {
        "submission": submission,
        "version": version.get("number"),
        "url": url,
        "status": run.get("status") if run else "timeout",
    }
    if run:
        out.update(
            {
                "check_run": run.get("id"),
                "checker_version": run.get("checker_version"),
                "ruleset": run.get("ruleset"),
                "error_message": run.get("error_message") or None,
                "counts": run.get("counts") or {},
                "findings": run.get("findings") or [],
                "points": [
                    {
                        k: point.get(k)
                        for k in ("key", "concurrency", "region", "region_label", "claimed", "recomputed")
                    }
                    for point in run.get("point_metrics") or []
                ],
            }
        )
    return out


def exit_code_for(run: dict | None) -> int:
    if run is None:
        return EXIT_USAGE
    status = run.get("status")
    return (
        # passed_with_waivers: a failed run whose every error has a granted waiver (the portal's verdict)
        {"passed": EXIT_PASS, "passed_with_waivers": EXIT_PASS, "failed": EXIT_FAIL}.get(status, EXIT_USAGE)
        if isinstance(status, str)
        else EXIT_USAGE
    )


def wait_for_check(
    client: Client, version: dict, *, timeout: float, show_progress: bool, plain_progress: bool = False
) -> dict | None:
    deadline = time.monotonic() + timeout
    run_id = (version.get("latest_check_run") or {}).get("id")
    progress = CheckProgress(enabled=show_progress, plain=plain_progress)
    delay = 1.0
    try:
        while time.monotonic() < deadline:
            if run_id is None:
                fresh = client.request("GET", f"versions/{version['id']}/")
                run_id = (fresh.get("latest_check_run") or {}).get("id")
            if run_id is not None:
                run = client.request("GET", f"check-runs/{run_id}/")
                if run["status"] in ("passed", "passed_with_waivers", "failed", "error"):
                    return run
                progress.show(run)
            time.sleep(delay)
            delay = min(delay * 1.5, 5.0)
        return None
    finally:
        progress.end()


# --- commands --------------------------------------------------------------------------------


class TokenProblem(RemoteError):
    """No token, or the portal refused it (HTTP 401/403 before anything was done)."""


def _portal_url(args) -> str:
    return (args.url or os.environ.get("PORTAL_URL") or "").rstrip("/")


def token_hint(base_url: str) -> str:
    base = base_url.rstrip("/") or "<portal>"
    return (
        f"Create an API token at {base}/accounts/tokens/ (signed in), then give it with --token TOKEN "
        "or set PORTAL_TOKEN."
    )


def _client(args) -> Client:
    url = _portal_url(args)
    token = args.token or os.environ.get("PORTAL_TOKEN")
    if not url:
        raise RemoteError("give --url (or set PORTAL_URL): the portal's address", code="usage")
    if not token:
        raise TokenProblem(f"no API token given. {token_hint(url)}", code="usage")
    return Client(url, token)


def _token_refused(exc: RemoteError, base_url: str) -> str | None:
    """The sentence to print when the portal refused the token itself (missing, expired or revoked)."""
    detail = str((exc.body or {}).get("detail") or "")
    if exc.http_status == 401 or (
        exc.http_status == 403
        and (exc.code in ("not_authenticated", "authentication_failed") or "token" in detail.lower())
    ):
        return (
            f"the portal refused the API token ({detail or f'HTTP {exc.http_status}'}): it is wrong, expired or "
            f"revoked. {token_hint(base_url)}"
        )
    return None


def web_address(base_url: str, submission: int, version: int | None = None) -> str:
    """The submission's page in the browser (the version's check when one is given)."""
    address = f"{base_url.rstrip('/')}/submissions/{submission}/"
    return f"{address}?version={version}#check" if version is not None else address


def register_system_hint(base_url: str, system: str) -> str:
    """What to do when the portal has no system of that name for the caller's organisation."""
    base = base_url.rstrip("/")
    return (
        f"the portal has no system {system!r} in your organisation(s), so it cannot create a draft for it.\n"
        f"  Register it once, with its system_desc.json (the one in your run folders):\n"
        f'    - in the browser: {base}/systems/ ("Register a system"), or\n'
        f'    - from a script: POST {base}/api/v1/systems/ with {{"name": "{system}", "description": '
        f'<system_desc.json>}} (add "organisation": SLUG if you belong to several);\n'
        f"  then run the same `portal submit` command again. Check the spelling: the name is the "
        f"results/<system>/ folder name, e.g. Acme_AX-8000."
    )


def system_exists(client: Client, system: str) -> bool | None:
    """True/False when the portal says whether the caller's organisations have this system; None when it cannot
    tell (an older portal without /systems/)."""
    try:
        me = client.request("GET", "me/")
        found = client.request("GET", "systems/?" + urllib.parse.urlencode({"name": system}))
    except RemoteError as exc:
        if exc.http_status == 404:
            return None
        raise
    own = set((me or {}).get("organisations") or {})
    rows = found.get("results", []) if isinstance(found, dict) else (found or [])
    return any(row.get("organisation") in own or (me or {}).get("chair") for row in rows)


def files_target(paths: list[Path]) -> list[tuple[str, str]]:
    """The (system, benchmark) pairs the files' load points name, read as `portal check` reads them (archives
    unpacked into a temporary folder, with the checker's limits); unknown names are left out."""
    from checker.inputs import Limits, open_inputs
    from checker.report import Findings

    with tempfile.TemporaryDirectory(prefix="portal-submit-read-") as sandbox:
        layout = open_inputs(
            list[str | Path](paths), workdir=Path(sandbox), limits=Limits(), findings=Findings()
        )
        return sorted(
            {
                (point.system, point.model)
                for point in layout.points
                if point.system != "unknown-system" and point.model != "unknown-model"
            }
        )


class Ambiguous(Exception):
    """The target cannot be chosen without the user: the message says which option to give."""


def choose_target(args, paths: list[Path]) -> tuple[str, str, str]:
    """(system, benchmark, how they were found) from the options, else from what the files name."""
    if args.system and args.benchmark:
        return args.system, args.benchmark, "given"
    pairs = files_target(paths)
    systems = sorted({system for system, _ in pairs})
    models = sorted({model for _, model in pairs})
    system = args.system or (systems[0] if len(systems) == 1 else None)
    benchmark = args.benchmark or (models[0] if len(models) == 1 else None)
    problems = []
    if system is None:
        problems.append(
            f"the files name {len(systems)} systems ({', '.join(systems)}): give --system NAME"
            if systems
            else "no system could be read from the files: give --system NAME (your registered system)"
        )
    if benchmark is None:
        problems.append(
            f"the files name {len(models)} benchmarks ({', '.join(models)}): give --benchmark ID"
            if models
            else "no benchmark could be read from the files: give --benchmark ID (e.g. llama3_1-8b)"
        )
    if problems or system is None or benchmark is None:
        raise Ambiguous("; ".join(problems) + " (or --submission ID to add a version to a draft)")
    return system, benchmark, "read from the files"


def open_drafts(client: Client, system: str, benchmark: str) -> list[dict]:
    """The caller's organisations' submissions of this system and benchmark that take a new version."""
    me = client.request("GET", "me/") or {}
    query = [
        ("system", system),
        ("benchmark", benchmark),
        ("status", "draft"),
        ("status", "changes_requested"),
    ]
    found = client.request("GET", "submissions/?" + urllib.parse.urlencode(query))
    rows = found.get("results", []) if isinstance(found, dict) else (found or [])
    own = set(me.get("organisations") or {})
    return [row for row in rows if row.get("organisation") in own]


def cmd_submit(args) -> int:
    paths = [Path(p) for p in args.paths]
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        print(f"portal submit: no such file or folder: {', '.join(missing)}", file=sys.stderr)
        return EXIT_USAGE
    as_json = bool(args.json)
    wait = args.wait or as_json
    terminal = sys.stderr.isatty()
    show_progress = terminal and not args.quiet
    plain_progress = not terminal and not args.quiet
    info = sys.stderr if as_json else sys.stdout  # with --json, stdout holds only the JSON
    base_url = _portal_url(args)
    try:
        client = _client(args)
        submission = args.submission
        start_fields: dict = {}
        if submission is None:
            try:
                system, benchmark, how = choose_target(args, paths)
            except Ambiguous as exc:
                print(f"portal submit: {exc}", file=sys.stderr)
                return EXIT_USAGE
            if system_exists(client, system) is False:
                print(f"portal submit: {register_system_hint(base_url, system)}", file=sys.stderr)
                return EXIT_USAGE
            # A new draft unless told which submission to add to: never a guess at an older one.
            start_fields = {"system": system, "benchmark": benchmark}
            where = "creating a new draft"
            drafts = open_drafts(client, system, benchmark)
            if drafts:
                listed = ", ".join(f"#{d['id']} ({d['status']})" for d in drafts)
                where += (
                    f" (open already: {listed}; to add a version to one instead, run again with "
                    f"--submission {drafts[0]['id']})"
                )
            if not args.quiet:
                print(f"portal submit: {system} on {benchmark} ({how}); {where}", file=sys.stderr)
        run_key = uuid.uuid4().hex
        with tempfile.TemporaryDirectory(prefix="portal-submit-") as workdir:
            files = pack(paths, Path(workdir))
            include: list[str] = []
            finished: dict | None = None
            for position, path in enumerate(files):
                last = position == len(files) - 1
                finished = upload_file(
                    client,
                    path,
                    submission=submission,
                    start_fields=start_fields,
                    run_key=run_key,
                    create_version=last,
                    include=include,
                    show_progress=show_progress,
                    quiet=args.quiet,
                    plain_progress=plain_progress,
                )
                submission = finished["upload"]["submission"]
                start_fields = {}
                include.append(finished["upload"]["id"])
        assert finished is not None and submission is not None  # pack() returns a file per given path
        version = finished["version"]
        address = web_address(base_url, submission, version["number"])
        print(
            f"submission {submission}: version {version['number']} uploaded "
            f"({version['size_bytes']} bytes, sha256 {version['sha256']})\n"
            f"  on the web: {address}",
            file=info,
        )
        if not wait:
            return EXIT_PASS
        run = wait_for_check(
            client, version, timeout=args.timeout, show_progress=show_progress, plain_progress=plain_progress
        )
        if as_json:
            sys.stdout.write(
                json.dumps(run_as_json(run, submission=submission, version=version, url=address), indent=2)
                + "\n"
            )
        if run is None:
            print(
                f"portal submit: the check did not finish within {args.timeout:g} s; "
                f"see `portal status {submission}` or {address}",
                file=sys.stderr,
            )
            return EXIT_USAGE
        if not as_json:
            print_check_run(run)
            print(f"\nFindings, point table and curve: {address}")
        return exit_code_for(run)
    except TokenProblem as exc:
        print(f"portal submit: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except RemoteError as exc:
        refused = _token_refused(exc, base_url)
        if refused:
            print(f"portal submit: {refused}", file=sys.stderr)
            return EXIT_USAGE
        if exc.code == "unknown-system":
            system = args.system or str((exc.body or {}).get("system") or "")
            print(f"portal submit: {register_system_hint(base_url, system)}", file=sys.stderr)
            return EXIT_USAGE
        print(f"portal submit: {exc}", file=sys.stderr)
        return EXIT_USAGE


def cmd_status(args) -> int:
    try:
        client = _client(args)
        submission = client.request("GET", f"submissions/{args.submission_id}/")
        version = submission.get("latest_version")
        print(
            f"submission {submission['id']} ({submission['organisation']}/{submission['system']}/"
            f"{submission['benchmark']}): {submission['status']}\n"
            f"  on the web: {web_address(_portal_url(args), submission['id'])}"
        )
        if version is None:
            print("no version uploaded yet")
            return EXIT_USAGE
        print(f"version {version['number']}: {version['size_bytes']} bytes, sha256 {version['sha256']}")
        summary = version.get("latest_check_run")
        if summary is None:
            print("no check run yet")
            return EXIT_USAGE
        run = client.request("GET", f"check-runs/{summary['id']}/")
        print_check_run(run)
        return exit_code_for(run)
    except RemoteError as exc:
        print(f"portal status: {_token_refused(exc, _portal_url(args)) or exc}", file=sys.stderr)
        return EXIT_USAGE


def _common(parser) -> None:
    parser.add_argument("--url", help="the portal's address (or env PORTAL_URL)")
    parser.add_argument("--token", help="your API token (or env PORTAL_TOKEN)")


def add_commands(sub) -> None:
    """Called by checker.cli to add `submit` and `status`."""
    submit = sub.add_parser(
        "submit", help="upload run archives or a bundle to a portal and (optionally) wait"
    )
    submit.add_argument(
        "paths", nargs="+", metavar="PATH", help="run archives, a bundle archive or a bundle folder"
    )
    _common(submit)
    submit.add_argument(
        "--system",
        help="your registered system's name (default: the one the files name; register it on the "
        "portal's Systems page first)",
    )
    submit.add_argument(
        "--benchmark", help="the benchmark's model id, e.g. llama3_1-8b (default: the one the files name)"
    )
    submit.add_argument(
        "--submission",
        type=int,
        help="add a version to this submission (a draft or one with changes requested) instead of a new draft",
    )
    submit.add_argument(
        "--new-draft", action="store_true", help="start a new draft (the default; kept for scripts)"
    )
    submit.add_argument("--wait", action="store_true", help="wait for the checks and print the findings")
    submit.add_argument(
        "--json",
        action="store_true",
        help="wait, then print the final status, findings and points as JSON (messages go to stderr)",
    )
    submit.add_argument(
        "--timeout", type=float, default=1800.0, help="seconds to wait with --wait (default 1800)"
    )
    submit.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    submit.set_defaults(func=cmd_submit)

    status = sub.add_parser("status", help="show a submission's latest version and check")
    status.add_argument("submission_id", type=int, metavar="ID")
    _common(status)
    status.set_defaults(func=cmd_status)
