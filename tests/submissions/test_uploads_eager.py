"""Uploads through the API with the check pipeline run in-process (eager Celery, local storage)."""

from __future__ import annotations

import io
import tarfile
import uuid
from datetime import timedelta

import pytest
from django.test import Client, override_settings
from django.utils import timezone

from submissions.models import CheckRun, PointMetric, Submission, SubmissionVersion, Upload
from tests.submissions.support import (
    ONE_ARCHIVE_ERRORS,
    RUN_ARCHIVES,
    SEVEN_ARCHIVES_ERRORS,
    api_client,
    api_upload,
    api_upload_run_archives,
    assert_failed_on,
    sha256_of,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("storage_dir")]


def test_seven_run_archives_make_one_version_with_seven_points(role_users, draft):
    client = api_client(role_users["submitter"])
    with override_settings(PORTAL_UPLOAD_PART_BYTES=64 * 1024):  # several parts per archive
        body = api_upload_run_archives(client, submission_id=draft.pk)
    version = SubmissionVersion.objects.get(pk=body["version"]["id"])
    assert version.kind == "run_archives" and version.files.count() == 7
    run = CheckRun.objects.get(version=version)
    assert_failed_on(run, SEVEN_ARCHIVES_ERRORS)
    assert PointMetric.objects.filter(check_run=run).count() == 7
    assert not run.findings.filter(rule__startswith="raw-log").exists()
    assert not run.findings.filter(rule__startswith="metric-consistency", severity="error").exists()
    detail = client.get(f"/api/v1/check-runs/{run.pk}/").json()
    assert len(detail["point_metrics"]) == 7
    assert detail["status"] == run.status
    # the official checker ran on the bundle the portal assembled from the archives, as the stored
    # official verdict says for AX-8000: 4 accuracy-sample-count errors, 7 + 7 duration/steady-state warnings
    official = run.report["official"]
    assert official["ran"] is True and (official["errors"], official["warnings"]) == (4, 14)
    browser = Client()
    browser.force_login(role_users["submitter"])
    page = browser.get(f"/submissions/{draft.pk}/").content.decode()
    assert "data-official-checker" in page and "4 errors, 14 warnings on the same files" in page


def test_parts_in_any_order_resume_and_byte_identical_download(role_users, draft):
    client = api_client(role_users["submitter"])
    biggest = max(RUN_ARCHIVES, key=lambda p: p.stat().st_size)
    data = biggest.read_bytes()
    with override_settings(PORTAL_UPLOAD_PART_BYTES=64 * 1024):
        started = client.post(
            "/api/v1/uploads/",
            {"submission": draft.pk, "filename": biggest.name, "size": len(data), "sha256": sha256_of(data)},
            format="json",
        )
    upload = started.json()
    size, count = upload["part_size"], upload["parts_expected"]
    assert count >= 2
    part = lambda i: data[i * size : (i + 1) * size]  # noqa: E731
    # The client sends the last part first, then is "interrupted".
    assert (
        client.put(
            f"/api/v1/uploads/{upload['id']}/parts/{count - 1}/",
            part(count - 1),
            content_type="application/octet-stream",
        ).status_code
        == 200
    )
    # Finishing early says which parts are missing.
    early = client.post(f"/api/v1/uploads/{upload['id']}/finish/", {"sha256": sha256_of(data)}, format="json")
    assert early.status_code == 409 and early.json()["code"] == "upload-incomplete"
    # Resuming: the status tells what is there; a repeated part with the same bytes is accepted.
    status = client.get(f"/api/v1/uploads/{upload['id']}/").json()
    assert status["missing_parts"] == list(range(count - 1))
    for index in [*status["missing_parts"], count - 1]:
        assert (
            client.put(
                f"/api/v1/uploads/{upload['id']}/parts/{index}/",
                part(index),
                content_type="application/octet-stream",
            ).status_code
            == 200
        )
    # Other bytes for a stored part are a conflict, never an overwrite.
    conflict = client.put(
        f"/api/v1/uploads/{upload['id']}/parts/0/",
        b"x" * len(part(0)),
        content_type="application/octet-stream",
    )
    assert conflict.status_code == 409 and conflict.json()["code"] == "upload-part-conflict"
    done = client.post(f"/api/v1/uploads/{upload['id']}/finish/", {"sha256": sha256_of(data)}, format="json")
    assert done.status_code == 200, done.json()
    version = done.json()["version"]
    download = client.get(f"/api/v1/versions/{version['id']}/files/0/")
    assert download.status_code == 200
    assert b"".join(download.streaming_content) == data


def test_wrong_hash_creates_no_version(role_users, draft):
    client = api_client(role_users["submitter"])
    data = RUN_ARCHIVES[0].read_bytes()
    claimed = sha256_of(data + b"!")
    upload = client.post(
        "/api/v1/uploads/",
        {"submission": draft.pk, "filename": "a.tar.gz", "size": len(data), "sha256": claimed},
        format="json",
    ).json()
    for index in range(upload["parts_expected"]):
        size = upload["part_size"]
        client.put(
            f"/api/v1/uploads/{upload['id']}/parts/{index}/",
            data[index * size : (index + 1) * size],
            content_type="application/octet-stream",
        )
    finished = client.post(f"/api/v1/uploads/{upload['id']}/finish/", {"sha256": claimed}, format="json")
    assert finished.status_code == 422
    body = finished.json()
    assert body["code"] == "upload-hash-mismatch" and body["received_sha256"] == sha256_of(data)
    assert not SubmissionVersion.objects.filter(submission=draft).exists()
    assert Upload.objects.get(pk=upload["id"]).status == Upload.Status.ABORTED


def test_size_caps_answer_413_and_the_quota_counts_bytes_received(role_users, draft, settings, storage_dir):
    client = api_client(role_users["submitter"])
    settings.PORTAL_MAX_UPLOAD_BYTES = 1_000_000
    settings.PORTAL_ORG_QUOTA_BYTES = 1_500_000
    settings.PORTAL_UPLOAD_PART_BYTES = 100_000
    too_big = client.post(
        "/api/v1/uploads/",
        {"submission": draft.pk, "filename": "big.tar.gz", "size": 1_000_001, "sha256": "0" * 64},
        format="json",
    )
    assert too_big.status_code == 413 and too_big.json()["code"] == "upload-too-large"
    # Announcing holds no space: many uploads of the largest size may be started, none sent yet.
    announced = [
        client.post(
            "/api/v1/uploads/",
            {"submission": draft.pk, "filename": f"{n}.tar.gz", "size": 900_000, "sha256": f"{n}" * 64},
            format="json",
        )
        for n in range(1, 9)
    ]
    assert {response.status_code for response in announced} == {201}
    first, second = announced[0].json(), announced[1].json()

    def put(upload, index, size=100_000):
        return client.put(
            f"/api/v1/uploads/{upload['id']}/parts/{index}/",
            b"z" * size,
            content_type="application/octet-stream",
        )

    for index in range(9):  # 900 000 bytes received
        assert put(first, index).status_code == 200
    for index in range(6):  # 1 500 000 bytes received: the quota is full
        assert put(second, index).status_code == 200
    refused = put(second, 6)
    assert refused.status_code == 413 and refused.json()["code"] == "quota-exceeded"
    assert refused.json()["used_bytes"] == 1_500_000
    assert put(second, 5).status_code == 200  # a part received already is a retry, not new bytes
    assert len(list((storage_dir / "uploads" / second["id"]).iterdir())) == 6  # the refused part is not kept
    # Too big for what is left: refused at start, before any byte is sent.
    late = client.post(
        "/api/v1/uploads/",
        {"submission": draft.pk, "filename": "late.tar.gz", "size": 10, "sha256": "f" * 64},
        format="json",
    )
    assert late.status_code == 413 and late.json()["code"] == "quota-exceeded"
    # Aborting frees what was received, and leaves no empty folder behind.
    assert client.delete(f"/api/v1/uploads/{second['id']}/").status_code == 200
    assert put(announced[2].json(), 0).status_code == 200
    assert not (storage_dir / "uploads" / second["id"]).exists()
    # An oversized part body is refused without storing anything.
    part = client.put(
        f"/api/v1/uploads/{announced[3].json()['id']}/parts/0/",
        b"z" * (settings.PORTAL_UPLOAD_PART_BYTES + 10),
        content_type="application/octet-stream",
    )
    assert part.status_code == 400 and part.json()["code"] == "upload-part-size"
    assert not (storage_dir / "uploads" / announced[3].json()["id"]).exists()


def test_finished_and_expired_uploads_leave_no_empty_folders(role_users, draft, storage_dir, settings):
    from submissions.uploads import uploads_expire

    client = api_client(role_users["submitter"])
    settings.PORTAL_UPLOAD_PART_BYTES = 64 * 1024
    finished = api_upload(
        client, submission_id=draft.pk, name=RUN_ARCHIVES[-1].name, data=RUN_ARCHIVES[-1].read_bytes()
    )
    data = RUN_ARCHIVES[0].read_bytes()
    started = client.post(
        "/api/v1/uploads/",
        {"submission": draft.pk, "filename": "idle.tar.gz", "size": len(data), "sha256": sha256_of(data)},
        format="json",
    ).json()
    assert (
        client.put(
            f"/api/v1/uploads/{started['id']}/parts/0/",
            data[: 64 * 1024],
            content_type="application/octet-stream",
        ).status_code
        == 200
    )
    assert (storage_dir / "uploads" / started["id"]).is_dir()
    Upload.objects.filter(pk=started["id"]).update(updated_at=timezone.now() - timedelta(days=2))
    assert uploads_expire() == [uuid.UUID(started["id"])]
    assert Upload.objects.get(pk=finished["upload"]["id"]).status == Upload.Status.DONE
    assert list((storage_dir / "uploads").iterdir()) == []  # no uploads/<id>/ left, finished or expired


def _hostile_archive() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        evil = tarfile.TarInfo("../../etc/evil.txt")
        payload = b"owned"
        evil.size = len(payload)
        tar.addfile(evil, io.BytesIO(payload))
        link = tarfile.TarInfo("c1/events.jsonl")
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc/passwd"
        tar.addfile(link)
    return buffer.getvalue()


def test_hostile_archive_gets_findings_and_is_kept_byte_identical(role_users, draft, storage_dir):
    client = api_client(role_users["submitter"])
    data = _hostile_archive()
    body = api_upload(client, submission_id=draft.pk, name="evil.tar.gz", data=data)
    run = CheckRun.objects.get(version_id=body["version"]["id"])
    assert run.status == CheckRun.Status.FAILED, run.error_message
    rules = set(run.findings.values_list("rule", flat=True))
    assert "archive-path-traversal" in rules and "archive-link" in rules
    assert not (storage_dir.parent / "etc").exists()
    download = client.get(f"/api/v1/versions/{body['version']['id']}/files/0/")
    assert b"".join(download.streaming_content) == data
    submit = client.post(f"/api/v1/submissions/{draft.pk}/submit/")
    assert submit.status_code == 409 and submit.json()["code"] == "check-not-passed"
    assert Submission.objects.get(pk=draft.pk).status == Submission.Status.DRAFT


def test_idempotency_key_replays_and_refuses_reuse(role_users, draft):
    client = api_client(role_users["submitter"])
    payload = {"submission": draft.pk, "filename": "a.tar.gz", "size": 10, "sha256": "a" * 64}
    first = client.post("/api/v1/uploads/", payload, format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    again = client.post("/api/v1/uploads/", payload, format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    assert first.status_code == again.status_code == 201
    assert first.json()["id"] == again.json()["id"] and again["Idempotent-Replayed"] == "true"
    assert Upload.objects.filter(submission=draft).count() == 1
    other = client.post(
        "/api/v1/uploads/", {**payload, "size": 11}, format="json", HTTP_IDEMPOTENCY_KEY="k-1"
    )
    assert other.status_code == 409 and other.json()["code"] == "idempotency-key-reused"
    # Keys belong to their user: another user's identical key is a different request.
    from tests.factories import MembershipFactory, UserFactory

    colleague = UserFactory(username="colleague")
    MembershipFactory(user=colleague, organisation=draft.organisation, role="submitter")
    theirs = api_client(colleague).post(
        "/api/v1/uploads/", payload, format="json", HTTP_IDEMPOTENCY_KEY="k-1"
    )
    assert theirs.status_code == 201 and theirs.json()["id"] != first.json()["id"]


def _upload_one_archive(role_users, draft) -> CheckRun:
    body = api_upload(
        api_client(role_users["submitter"]),
        submission_id=draft.pk,
        name=RUN_ARCHIVES[0].name,
        data=RUN_ARCHIVES[0].read_bytes(),
    )
    return CheckRun.objects.filter(version_id=body["version"]["id"]).latest("pk")


def test_a_single_run_archive_is_recorded_as_run_archives_as_the_registry_detects_it(role_users, draft):
    run = _upload_one_archive(role_users, draft)
    assert_failed_on(run, ONE_ARCHIVE_ERRORS[RUN_ARCHIVES[0].name])
    # one file used to be taken for a bundle; the registry of input kinds read it as a run archive
    assert SubmissionVersion.objects.get(pk=run.version_id).kind == "run_archives"


def test_a_broken_rule_suite_ends_the_run_in_error_naming_the_exception(
    role_users, draft, monkeypatch, settings
):
    settings.PORTAL_CHECK_MAX_ATTEMPTS = 2

    def broken_rules(*args, **kwargs):
        raise ImportError("cannot import name 'load_pattern' from 'checker.judge.rules'")

    monkeypatch.setattr("checker.cli.pipeline.run_rules", broken_rules)
    run = _upload_one_archive(role_users, draft)
    assert run.status == CheckRun.Status.ERROR
    assert "ImportError" in run.error_message and "load_pattern" in run.error_message
    assert "failed after 2 attempts" in run.error_message
    assert not run.findings.exists()  # never a report with every rule silently missing


def test_a_stored_file_whose_bytes_changed_fails_the_check_instead_of_being_judged(
    role_users, draft, storage_dir, settings, tmp_path
):
    settings.PORTAL_CHECK_CACHE_DIR = tmp_path / "cache"
    settings.PORTAL_CHECK_MAX_ATTEMPTS = 1
    run = _upload_one_archive(role_users, draft)
    assert_failed_on(run, ONE_ARCHIVE_ERRORS[RUN_ARCHIVES[0].name])
    stored = run.version.files.get()
    (storage_dir / stored.storage_key).write_bytes(b"not the uploaded archive")
    settings.PORTAL_CHECK_CACHE_DIR = tmp_path / "fresh-worker-cache"
    from submissions.checks.queue import check_run_requeue

    again = check_run_requeue(version=run.version, actor=role_users["chair"])
    again.refresh_from_db()
    assert again.status == CheckRun.Status.ERROR
    assert (
        "does not hash to its SHA-256" in again.error_message
        and stored.original_filename in again.error_message
    )


def test_a_re_check_on_the_same_worker_reads_the_files_from_its_cache(
    role_users, draft, storage_dir, settings, tmp_path
):
    settings.PORTAL_CHECK_CACHE_DIR = tmp_path / "cache"
    run = _upload_one_archive(role_users, draft)
    assert_failed_on(run, ONE_ARCHIVE_ERRORS[RUN_ARCHIVES[0].name])
    stored = run.version.files.get()
    assert (tmp_path / "cache" / stored.sha256).is_file()
    (storage_dir / stored.storage_key).unlink()  # storage unreachable for this blob: only the cache has it
    from submissions.checks.queue import check_run_requeue

    again = check_run_requeue(version=run.version, actor=role_users["chair"])
    again.refresh_from_db()
    assert_failed_on(again, ONE_ARCHIVE_ERRORS[RUN_ARCHIVES[0].name])
    assert sorted(again.findings.values_list("rule", "message")) == sorted(
        run.findings.values_list("rule", "message")
    )
