"""Sending files to a portal: folders packed reproducibly, each file a resumable chunked upload (through the
portal, or straight to its bucket when the portal offers it), every part retried and verified."""

from __future__ import annotations

import base64
import contextlib
import gzip
import hashlib
import re
import sys
import tarfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from checker.cli.remote.client import (
    RETRIES,
    Client,
    RemoteError,
)


def pack(paths: list[Path], workdir: Path, *, curve: tuple[str, str] | None = None) -> list[Path]:
    """The files to upload: archives as they are, folders packed into <name>.tar.gz in workdir. With `curve`
    (system, model), a bundle that holds other curves too is packed with that curve's results only (a folder, or a
    .tar/.tar.gz bundle repacked): `portal submit bundle/ --system S` uploads S's curve, not the whole bundle."""
    files = []
    for path in paths:
        if path.is_dir():
            target = workdir / f"{path.resolve().name or 'bundle'}.tar.gz"
            # Same folder, same bytes (sorted members, no owner, gzip mtime 0): a re-run can resume the upload.
            with _packed(target) as tar:
                tar.add(path, arcname=path.resolve().name, filter=lambda info: _kept(info, curve))
            files.append(target)
        elif curve is not None and path.name.endswith((".tar", ".tar.gz", ".tgz")):
            files.append(_repacked(path, workdir, curve))
        else:
            files.append(path)
    return files


@contextlib.contextmanager
def _packed(target: Path) -> Iterator[tarfile.TarFile]:
    """A reproducible .tar.gz being written (no owner, gzip mtime 0)."""
    with (
        open(target, "wb") as raw,
        gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz,
        tarfile.open(fileobj=gz, mode="w") as tar,
    ):
        yield tar


def _repacked(path: Path, workdir: Path, curve: tuple[str, str]) -> Path:
    """A bundle archive with only `curve`'s results (members copied as they are, other curves left out); the
    archive itself when it holds nothing else."""
    with tarfile.open(path, mode="r:*") as source:
        members = source.getmembers()
        kept = [info for info in members if _kept(info, curve, quiet=True) is not None]
        if len(kept) == len(members):
            return path
        stem = path.name.split(".tar")[0].removesuffix(".tgz")
        target = workdir / f"{stem}-{curve[0]}.tar.gz"
        with _packed(target) as tar:
            for info in kept:
                tar.addfile(info, source.extractfile(info) if info.isreg() else None)
    return target


def _other_curve(name: str, curve: tuple[str, str] | None) -> bool:
    """The member is under results/<system>/<model>/ of another system or model than `curve`'s."""
    if curve is None:
        return False
    parts = Path(name).parts
    if "results" not in parts:
        return False
    at = parts.index("results")
    below = parts[at + 1 :]
    if not below:
        return False
    if below[0] != curve[0]:
        return True
    # results/<system>/<file> (system_power.json) stays; a model folder other than curve's goes.
    return len(below) >= 2 and below[1] != curve[1] and (len(below) > 2 or "." not in below[1])


def _kept(info: tarfile.TarInfo, curve: tuple[str, str] | None = None, *, quiet: bool = False):
    # Only regular files and folders: the portal refuses links anyway, so leave them out with a note.
    if _other_curve(info.name, curve):
        return None
    if info.isreg() or info.isdir():
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        return info
    if not quiet:
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
    upload = _start_or_resume(
        client,
        path,
        size=size,
        sha256=sha256,
        submission=submission,
        start_fields=start_fields,
        run_key=run_key,
        quiet=quiet,
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
    _send_parts_through_portal(client, path, upload, missing=missing, run_key=run_key, progress=progress)
    return _finish_through_portal(
        client,
        path,
        upload_id,
        sha256=sha256,
        size=size,
        run_key=run_key,
        create_version=create_version,
        include=include,
        quiet=quiet,
    )


def _start_or_resume(
    client: Client,
    path: Path,
    *,
    size: int,
    sha256: str,
    submission: int | None,
    start_fields: dict,
    run_key: str,
    quiet: bool,
) -> dict:
    """The upload of this file the server still holds (said on stderr), else a new one."""
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
    return upload


def _send_parts_through_portal(
    client: Client, path: Path, upload: dict, *, missing: list[int], run_key: str, progress: Progress
) -> None:
    """The missing parts, each PUT to the portal; failed parts are retried with backoff from the server's view."""
    upload_id, part_size = upload["id"], upload["part_size"]
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


def _finish_through_portal(
    client: Client,
    path: Path,
    upload_id: Any,
    *,
    sha256: str,
    size: int,
    run_key: str,
    create_version: bool,
    include: list[str],
    quiet: bool,
) -> dict:
    """Finish: the portal verifies the file (and creates the version); a hash mismatch says what to do."""
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
    upload_id = upload["id"]
    _send_parts_to_bucket(client, path, upload, missing=missing, progress=progress)
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
    return _wait_until_verified(
        client,
        path,
        upload_id,
        finished,
        sha256=sha256,
        size=size,
        create_version=create_version,
        poll_s=poll_s,
    )


def _send_parts_to_bucket(
    client: Client, path: Path, upload: dict, *, missing: list[int], progress: Progress
) -> None:
    """The missing parts, each signed for its length and MD5 just before it is PUT to the bucket; retried."""
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


def _wait_until_verified(
    client: Client,
    path: Path,
    upload_id: Any,
    finished: dict,
    *,
    sha256: str,
    size: int,
    create_version: bool,
    poll_s: float,
) -> dict:
    """Polls the upload until the portal's worker has verified the file sent to the bucket; the finish answer."""
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
