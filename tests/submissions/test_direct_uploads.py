"""Uploads straight to the bucket (S3 storage, SeaweedFS `weed mini`): the portal signs, counts quota and completes;
the parts go to the bucket; the SHA-256 is verified from the bucket's object before any version exists. Includes a
part whose bytes differ from what was signed, a file whose bytes are not the announced ones, a `portal submit`
killed mid-upload and run again, the sweep of stale multipart uploads, and a verifying worker killed with kill -9."""

from __future__ import annotations

import base64
import hashlib
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from audit.models import AuditEvent
from portal.celery import app
from portal.reconcile import jobs_reconcile
from submissions import uploads
from submissions.models import CheckRun, SubmissionVersion, Upload
from tests.submissions.conftest import s3_storages
from tests.submissions.support import RUN_ARCHIVES, api_client, api_token_key, make_catalog, sha256_of

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]
MIB = 1024**2


@pytest.fixture
def bucket(seaweedfs, settings):
    # A bucket of the test's own: the server lives for the session, and after a transactional test's flush the
    # upload ids start again, so another test's objects under uploads/<id>/ must not be this test's.
    seaweedfs = {**seaweedfs, "bucket_name": f"direct-{uuid.uuid4().hex[:12]}"}
    seaweedfs["client"].create_bucket(Bucket=seaweedfs["bucket_name"])
    s3_storages(settings, seaweedfs)
    settings.PORTAL_UPLOAD_DIRECT_PART_BYTES = 5 * MIB  # S3's smallest part: several parts for a small file
    return seaweedfs


def _keys(bucket, prefix: str) -> list[str]:
    listing = bucket["client"].list_objects_v2(Bucket=bucket["bucket_name"], Prefix=prefix)
    return [item["Key"] for item in listing.get("Contents", [])]


def _held(upload: Upload) -> list[int]:
    """The part indices the bucket holds for a direct upload, as the upload's status lists them."""
    return [part["index"] for part in uploads.upload_parts_received(upload)]


def _md5(data: bytes) -> str:
    return base64.b64encode(hashlib.md5(data).digest()).decode()


def _put(part: dict, data: bytes) -> tuple[int, bytes]:
    request = urllib.request.Request(part["url"], data=data, method="PUT", headers=part["headers"])
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, b""
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _start(client, draft, data: bytes, *, sha256: str | None = None, name="AX-8000_c1.tar.gz") -> dict:
    answer = client.post(
        "/api/v1/uploads/",
        {
            "submission": draft.pk,
            "filename": name,
            "size": len(data),
            "sha256": sha256 or sha256_of(data),
            "transfer": "direct",
        },
        format="json",
    )
    assert answer.status_code == 201, answer.json()
    return answer.json()


def _sign(client, upload: dict, index: int, data: bytes) -> dict:
    answer = client.post(
        f"/api/v1/uploads/{upload['id']}/sign/",
        {"parts": [{"index": index, "content_md5": _md5(data)}]},
        format="json",
    )
    assert answer.status_code == 200, answer.json()
    return answer.json()["parts"][0]


def _part(data: bytes, upload: dict, index: int) -> bytes:
    size = upload["part_size"]
    return data[index * size : (index + 1) * size]


def test_a_run_archive_goes_to_the_bucket_and_becomes_a_checked_version(role_users, draft, bucket):
    client = api_client(role_users["submitter"])
    data = max(RUN_ARCHIVES, key=lambda p: p.stat().st_size).read_bytes()
    upload = _start(client, draft, data)
    assert upload["transfer"] == "direct" and upload["parts_expected"] == 1 and upload["missing_parts"] == [0]
    # The portal takes no bytes of a direct upload; the announced size is reserved against the quota at once.
    refused = client.put(
        f"/api/v1/uploads/{upload['id']}/parts/0/", data, content_type="application/octet-stream"
    )
    assert refused.status_code == 409 and refused.json()["code"] == "upload-direct"
    assert uploads.organisation_storage_used_bytes(draft.organisation) == len(data)
    part = _sign(client, upload, 0, data)
    assert part["url"].startswith(bucket["endpoint_url"] + "/")  # the bucket itself, not the portal
    assert part["headers"] == {"Content-Length": str(len(data)), "Content-MD5": _md5(data)}
    assert _put(part, data)[0] == 200
    status = client.get(f"/api/v1/uploads/{upload['id']}/").json()
    assert status["missing_parts"] == [] and status["received_parts"] == [
        {"index": 0, "size_bytes": len(data)}
    ]
    finished = client.post(
        f"/api/v1/uploads/{upload['id']}/finish/", {"sha256": sha256_of(data)}, format="json"
    )
    # Tasks run in-process here, so the verification (a worker's, in production) is done when finish answers.
    assert finished.status_code == 200, finished.json()
    version = SubmissionVersion.objects.get(pk=finished.json()["version"]["id"])
    stored = version.files.get()
    assert stored.storage_key == f"blobs/sha256/{sha256_of(data)[:2]}/{sha256_of(data)}"
    obj = bucket["client"].get_object(Bucket=bucket["bucket_name"], Key=stored.storage_key)
    assert obj["Body"].read() == data
    assert _keys(bucket, f"uploads/{upload['id']}/") == []  # the staging object is gone
    assert CheckRun.objects.filter(version=version).exists()
    assert Upload.objects.get(pk=upload["id"]).status == Upload.Status.DONE
    assert uploads.organisation_storage_used_bytes(draft.organisation) == len(
        data
    )  # counted once, as a version file


def test_part_urls_name_the_bucket_as_submitters_reach_it(role_users, draft, bucket, settings):
    public = bucket["endpoint_url"].replace("127.0.0.1", "localhost")  # the same server under another name
    settings.PORTAL_UPLOAD_BUCKET_URL = public
    client = api_client(role_users["submitter"])
    data = RUN_ARCHIVES[0].read_bytes()
    upload = _start(client, draft, data)
    part = _sign(client, upload, 0, data)
    assert part["url"].startswith(public + "/")
    assert _put(part, data)[0] == 200  # signed for that host, accepted there
    assert _held(Upload.objects.get(pk=upload["id"])) == [0]


def test_a_part_whose_bytes_differ_from_what_was_signed_is_refused_by_the_bucket(role_users, draft, bucket):
    client = api_client(role_users["submitter"])
    data = os.urandom(11 * MIB)
    upload = _start(client, draft, data, name="big.tar.gz")
    assert upload["parts_expected"] == 3 and upload["part_size"] == 5 * MIB
    first = _part(data, upload, 0)
    signed = _sign(client, upload, 0, first)
    other = bytes(reversed(first))  # same length, other bytes
    code, body = _put(signed, other)
    assert code == 400 and b"BadDigest" in body
    shorter = dict(signed, headers={"Content-MD5": _md5(first[:100])})
    assert _put(shorter, first[:100])[0] == 403  # another length or MD5 than signed: the signature fails
    assert client.get(f"/api/v1/uploads/{upload['id']}/").json()["missing_parts"] == [0, 1, 2]
    early = client.post(f"/api/v1/uploads/{upload['id']}/finish/", {"sha256": sha256_of(data)}, format="json")
    assert early.status_code == 409 and early.json()["code"] == "upload-incomplete"
    assert early.json()["missing_parts"] == [0, 1, 2]
    bad_md5 = client.post(
        f"/api/v1/uploads/{upload['id']}/sign/",
        {"parts": [{"index": 1, "content_md5": "abc"}]},
        format="json",
    )
    assert bad_md5.status_code == 400 and bad_md5.json()["code"] == "upload-part-md5"


def test_bytes_that_are_not_the_announced_file_make_no_version(role_users, draft, bucket):
    client = api_client(role_users["submitter"])
    data = os.urandom(6 * MIB)
    announced = sha256_of(data[:-1] + b"x")  # the client announces another file than it sends
    upload = _start(client, draft, data, sha256=announced, name="changed.tar.gz")
    for index in range(upload["parts_expected"]):
        chunk = _part(data, upload, index)
        assert _put(_sign(client, upload, index, chunk), chunk)[0] == 200
    finished = client.post(f"/api/v1/uploads/{upload['id']}/finish/", {"sha256": announced}, format="json")
    assert finished.status_code == 202
    row = Upload.objects.get(pk=upload["id"])
    assert row.status == Upload.Status.ABORTED and row.version is None
    assert f"SHA-256 {sha256_of(data)}" in row.error_message and "upload the file again" in row.error_message
    assert client.get(f"/api/v1/uploads/{upload['id']}/").json()["error_message"] == row.error_message
    assert not SubmissionVersion.objects.exists()
    assert _keys(bucket, f"uploads/{upload['id']}/") == []
    assert _keys(bucket, f"blobs/sha256/{sha256_of(data)[:2]}/{sha256_of(data)}") == []
    assert uploads.organisation_storage_used_bytes(draft.organisation) == 0


def test_direct_needs_s3_storage(role_users, draft, storage_dir):
    client = api_client(role_users["submitter"])
    data = RUN_ARCHIVES[0].read_bytes()
    answer = client.post(
        "/api/v1/uploads/",
        {
            "submission": draft.pk,
            "filename": "a.tar.gz",
            "size": len(data),
            "sha256": sha256_of(data),
            "transfer": "direct",
        },
        format="json",
    )
    assert answer.status_code == 409 and answer.json()["code"] == "direct-upload-unavailable"
    auto = client.post(
        "/api/v1/uploads/",
        {
            "submission": draft.pk,
            "filename": "a.tar.gz",
            "size": len(data),
            "sha256": sha256_of(data),
            "transfer": "auto",
        },
        format="json",
    )
    assert (
        auto.status_code == 201 and auto.json()["transfer"] == "proxied"
    )  # local storage keeps today's protocol


def test_stale_multipart_uploads_nobody_owns_are_aborted(role_users, draft, bucket):
    client = api_client(role_users["submitter"])
    data = os.urandom(6 * MIB)
    kept = _start(client, draft, data, name="kept.tar.gz")
    s3, name = bucket["client"], bucket["bucket_name"]
    orphan = s3.create_multipart_upload(Bucket=name, Key="uploads/orphan/direct")["UploadId"]
    later = timezone.now() + timedelta(hours=30)
    assert uploads.multipart_uploads_sweep(now=timezone.now()) == []  # nothing is old enough yet
    # (the bucket is shared by this session's tests: earlier tests' uploads are orphans now, their rows flushed)
    swept = uploads.multipart_uploads_sweep(now=later)
    assert (
        orphan in swept and Upload.objects.get(pk=kept["id"]).multipart_id not in swept
    )  # the open one stays
    remaining = {
        item["UploadId"]
        for item in s3.list_multipart_uploads(Bucket=name, Prefix="uploads/").get("Uploads", [])
    }
    assert orphan not in remaining and Upload.objects.get(pk=kept["id"]).multipart_id in remaining
    # Aborting the upload aborts its multipart in the bucket too.
    assert client.delete(f"/api/v1/uploads/{kept['id']}/").status_code == 200
    remaining = {
        item["UploadId"]
        for item in s3.list_multipart_uploads(Bucket=name, Prefix="uploads/").get("Uploads", [])
    }
    assert Upload.objects.get(pk=kept["id"]).multipart_id not in remaining


class _SignGate:
    """Lets the live server sign parts until `stop_at`; that request waits (the test kills the client then)."""

    def __init__(self, monkeypatch, stop_at: int | None):
        self.signed: list[int] = []
        self.stop_at = stop_at
        self.reached = threading.Event()
        self.release = threading.Event()
        real = uploads.upload_sign

        def gated(*, upload, parts, actor):
            indices = [item["index"] for item in parts]
            if self.stop_at in indices:
                self.reached.set()
                self.release.wait(30)
            self.signed.extend(indices)
            return real(upload=upload, parts=parts, actor=actor)

        monkeypatch.setattr(uploads, "upload_sign", gated)


def test_portal_submit_killed_mid_upload_resumes_with_the_parts_the_bucket_lacks(
    role_users, bucket, live_server, settings, tmp_path, monkeypatch
):
    make_catalog(role_users["organisations"]["acme"])
    env = {
        **os.environ,
        "PORTAL_URL": live_server.url,
        "PORTAL_TOKEN": api_token_key(role_users["submitter"]),
    }
    big = tmp_path / "AX-8000_c1.tar.gz"
    big.write_bytes(os.urandom(16 * MIB))  # four parts of 5 MiB, the last 1 MiB
    command = [
        sys.executable,
        "-m",
        "checker.cli.main",
        "submit",
        str(big),
        "--system",
        "Acme_AX-8000",
        "--benchmark",
        "llama3_1-8b",
        "-q",
    ]
    gate = _SignGate(monkeypatch, stop_at=2)
    client = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert gate.reached.wait(120), client.communicate(timeout=5)
    client.send_signal(signal.SIGKILL)  # killed while asking for part 2's URL
    client.wait(timeout=30)
    gate.release.set()
    upload = Upload.objects.get()
    assert upload.transfer == Upload.Transfer.DIRECT and upload.status == Upload.Status.OPEN
    assert _held(upload) == [0, 1]  # what reached the bucket
    gate.signed.clear()
    gate.stop_at = None
    again = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert gate.signed == [2, 3]  # only what the bucket lacked was sent again
    upload.refresh_from_db()
    assert upload.status == Upload.Status.DONE
    version = upload.version
    assert version.sha256 == sha256_of(big.read_bytes()) and version.size_bytes == 16 * MIB
    stored = bucket["client"].get_object(Bucket=bucket["bucket_name"], Key=version.files.get().storage_key)
    assert hashlib.sha256(stored["Body"].read()).hexdigest() == version.sha256


def test_a_direct_upload_whose_verifying_worker_is_killed_is_aborted_and_uploaded_again(
    role_users, draft, bucket, live_pipeline, settings
):
    """kill -9 while a worker verifies a direct upload: the reconciler aborts it with a reason the submitter reads,
    its reserved space is freed, and the same file uploads again."""
    worker = live_pipeline(
        kinds=("unpack",),
        STORAGE_BACKEND="s3",
        AWS_STORAGE_BUCKET_NAME=bucket["bucket_name"],
        AWS_S3_ENDPOINT_URL=bucket["endpoint_url"],
        AWS_S3_REGION_NAME="us-east-1",
        AWS_ACCESS_KEY_ID=bucket["access_key"],
        AWS_SECRET_ACCESS_KEY=bucket["secret_key"],
    )
    s3_storages(settings, bucket)  # live_pipeline pointed this process at a folder
    client = api_client(role_users["submitter"])
    data = os.urandom(48 * MIB)  # long enough to verify that the kill lands mid-verification
    upload = _start(client, draft, data)
    for index in range(upload["parts_expected"]):
        chunk = _part(data, upload, index)
        assert _put(_sign(client, upload, index, chunk), chunk)[0] == 200
    finished = client.post(
        f"/api/v1/uploads/{upload['id']}/finish/", {"sha256": sha256_of(data)}, format="json"
    )
    assert finished.status_code == 202, finished.json()
    deadline = time.monotonic() + 60
    while "upload_verify_task" not in worker.log_path.read_text() and time.monotonic() < deadline:
        time.sleep(0.02)
    worker.kill()
    row = Upload.objects.get(pk=upload["id"])
    assert row.status == Upload.Status.VERIFYING, (
        "the verification finished before the kill: nothing to reconcile"
    )
    assert uploads.organisation_storage_used_bytes(draft.organisation) == len(data)  # still reserved

    assert jobs_reconcile()["upload"] == []  # not overdue yet
    _soft, hard = settings.PORTAL_TASK_TIME_LIMITS["unpack"]
    later = timezone.now() + timedelta(seconds=hard + 601)
    assert jobs_reconcile(now=later)["upload"] == [row.pk]
    assert jobs_reconcile(now=later)["upload"] == []  # ended once
    seen = client.get(f"/api/v1/uploads/{upload['id']}/").json()
    assert seen["status"] == "aborted" and "Upload the file again" in seen["error_message"]
    assert uploads.organisation_storage_used_bytes(draft.organisation) == 0  # the reservation is freed
    assert AuditEvent.objects.filter(action="upload.lost", data__code="upload-verify-lost").count() == 1
    assert _keys(bucket, f"uploads/{upload['id']}/") == []  # the staging object is gone

    # The submitter retries: the same file, a new upload (verified in-process here), fits and is kept.
    app.conf.task_always_eager = True
    again = _start(client, draft, data)
    for index in range(again["parts_expected"]):
        chunk = _part(data, again, index)
        assert _put(_sign(client, again, index, chunk), chunk)[0] == 200
    client.post(f"/api/v1/uploads/{again['id']}/finish/", {"sha256": sha256_of(data)}, format="json")
    assert Upload.objects.get(pk=again["id"]).status != Upload.Status.VERIFYING
    assert (
        Upload.objects.get(pk=again["id"]).storage_key
        == f"blobs/sha256/{sha256_of(data)[:2]}/{sha256_of(data)}"
    )
