"""The S3 path (SeaweedFS) and the `portal submit` / `portal status` command line against a live server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from submissions.models import CheckRun, Submission, SubmissionVersion
from tests.submissions.conftest import s3_storages
from tests.submissions.support import (
    ONE_ARCHIVE_ERRORS,
    RUN_ARCHIVES,
    api_client,
    api_upload,
    assert_failed_on,
    sha256_of,
)

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def s3_storage(seaweedfs, settings):
    s3_storages(settings, seaweedfs)
    settings.CELERY_TASK_ALWAYS_EAGER = True
    return seaweedfs


def test_upload_check_and_download_through_s3(role_users, draft, s3_storage, settings):
    settings.PORTAL_UPLOAD_PART_BYTES = 64 * 1024
    client = api_client(role_users["submitter"])
    archive = max(RUN_ARCHIVES, key=lambda p: p.stat().st_size)
    data = archive.read_bytes()
    body = api_upload(client, submission_id=draft.pk, name=archive.name, data=data, part_order=[3, 0, 2, 1])
    version = SubmissionVersion.objects.get(pk=body["version"]["id"])
    stored = version.files.get()
    assert stored.storage_key == f"blobs/sha256/{sha256_of(data)[:2]}/{sha256_of(data)}"
    obj = s3_storage["client"].get_object(Bucket=s3_storage["bucket_name"], Key=stored.storage_key)
    assert obj["Body"].read() == data
    # Temporary parts are gone from the bucket once the blob is assembled.
    listed = s3_storage["client"].list_objects_v2(Bucket=s3_storage["bucket_name"], Prefix="uploads/")
    assert listed.get("KeyCount", 0) == 0
    run = CheckRun.objects.get(version=version)
    assert_failed_on(run, ONE_ARCHIVE_ERRORS[archive.name])
    assert run.point_metrics.count() == 1
    download = client.get(f"/api/v1/versions/{version.pk}/files/0/")
    assert b"".join(download.streaming_content) == data


def _portal(*args, env=None, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "checker.cli.main", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def test_cli_submits_run_archives_waits_and_reports(role_users, draft, live_server, storage_dir, settings):
    from tests.submissions.support import api_token_key

    settings.PORTAL_UPLOAD_PART_BYTES = 64 * 1024
    token = api_token_key(role_users["submitter"])
    result = _portal(
        "submit",
        *map(str, RUN_ARCHIVES[:3]),
        "--submission",
        str(draft.pk),
        "--wait",
        "--timeout",
        "240",
        env={"PORTAL_URL": live_server.url, "PORTAL_TOKEN": token},
    )
    version = SubmissionVersion.objects.get(submission=draft)
    run = CheckRun.objects.get(version=version)
    assert result.returncode == {"passed": 0, "failed": 1}[run.status], result.stderr
    assert version.files.count() == 3
    assert f"check run {run.pk}: {run.status}" in result.stdout
    assert "AX-8000" in result.stdout  # the per-point table
    status = _portal("status", str(draft.pk), "--url", live_server.url, "--token", token)
    assert status.returncode == result.returncode and f"check run {run.pk}" in status.stdout
    # A new draft from --system/--benchmark (--new-draft: the open one would take the version), a folder packed
    # on the fly.
    new = _portal(
        "submit",
        str(ROOT / "tests/checker/fixtures/bundle/AcmeCompute"),
        "--system",
        "Acme_AX-8000",
        "--benchmark",
        "llama3_1-8b",
        "--new-draft",
        "--url",
        live_server.url,
        "--token",
        token,
    )
    assert new.returncode == 0, new.stderr
    assert Submission.objects.filter(organisation=draft.organisation).count() == 2


def test_cli_cannot_reach_another_organisations_submission(role_users, draft, live_server, storage_dir):
    from tests.factories import MembershipFactory, UserFactory
    from tests.submissions.support import api_token_key

    outsider = UserFactory(username="outsider")
    MembershipFactory(user=outsider, organisation=role_users["organisations"]["nimbus"], role="submitter")
    token = api_token_key(outsider)
    status = _portal("status", str(draft.pk), "--url", live_server.url, "--token", token)
    assert status.returncode == 2 and "HTTP 404" in status.stderr
    submit = _portal(
        "submit",
        str(RUN_ARCHIVES[0]),
        "--submission",
        str(draft.pk),
        "--url",
        live_server.url,
        "--token",
        token,
    )
    assert submit.returncode == 2 and "HTTP 404" in submit.stderr
    assert not SubmissionVersion.objects.filter(submission=draft).exists()


def test_cli_usage_errors_exit_2():
    assert _portal("submit", "/nonexistent.tar.gz", "--url", "http://x", "--token", "t").returncode == 2
    # Two systems in the files and no --system: asked before anything is sent.
    bundle = str(ROOT / "tests/checker/fixtures/bundle/AcmeCompute")
    no_target = _portal("submit", bundle, "--url", "http://x", "--token", "t")
    assert no_target.returncode == 2 and "--system" in no_target.stderr and "--submission" in no_target.stderr
    unreachable = _portal(
        "submit",
        str(RUN_ARCHIVES[0]),
        "--submission",
        "1",
        "--url",
        "http://127.0.0.1:9",
        "--token",
        "t",
        env={"PORTAL_TEST": "1"},
        timeout=120,
    )
    assert unreachable.returncode == 2
