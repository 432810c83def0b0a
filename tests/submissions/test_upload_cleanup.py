"""Aborting and expiring uploads (parts deleted, quota freed), Idempotency-Key expiry, and queued check runs
whose start message was lost (PostgreSQL, Redis, local storage; the check pipeline eager or not queued)."""

from __future__ import annotations

import io
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from audit.models import AuditEvent
from portal.reconcile import jobs_reconcile
from submissions.models import CheckRun, IdempotencyKey, SubmissionVersion, Upload
from submissions.uploads import organisation_storage_used_bytes, upload_part
from tests.submissions.support import RUN_ARCHIVES, api_client, api_upload, sha256_of

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("storage_dir")]
PART = 64 * 1024
BIGGEST = max(RUN_ARCHIVES, key=lambda p: p.stat().st_size)  # four parts of PART


@pytest.fixture(autouse=True)
def part_size(settings):
    settings.PORTAL_UPLOAD_PART_BYTES = PART


def _start(client, draft, data: bytes, name="a.tar.gz") -> dict:
    response = client.post(
        "/api/v1/uploads/",
        {"submission": draft.pk, "filename": name, "size": len(data), "sha256": sha256_of(data)},
        format="json",
    )
    assert response.status_code == 201, response.json()
    return response.json()


def _put(client, upload: dict, data: bytes, index: int):
    return client.put(
        f"/api/v1/uploads/{upload['id']}/parts/{index}/",
        data[index * PART : (index + 1) * PART],
        content_type="application/octet-stream",
    )


def _stored_parts(storage_dir, upload_id) -> list[str]:
    folder = storage_dir / "uploads" / str(upload_id)
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def _idle(upload_id, hours: float) -> None:
    Upload.objects.filter(pk=upload_id).update(updated_at=timezone.now() - timedelta(hours=hours))


def test_abort_deletes_parts_frees_quota_and_replays(role_users, draft, storage_dir):
    client = api_client(role_users["submitter"])
    data = BIGGEST.read_bytes()
    upload = _start(client, draft, data)
    assert upload["parts_expected"] >= 3
    for index in (0, 1):
        assert _put(client, upload, data, index).status_code == 200
    assert len(_stored_parts(storage_dir, upload["id"])) == 2
    assert organisation_storage_used_bytes(draft.organisation) == 2 * PART  # what was received

    aborted = client.delete(f"/api/v1/uploads/{upload['id']}/", HTTP_IDEMPOTENCY_KEY="abort-1")
    assert aborted.status_code == 200, aborted.json()
    assert aborted.json()["status"] == "aborted" and aborted.json()["missing_parts"] == []
    assert _stored_parts(storage_dir, upload["id"]) == []
    assert organisation_storage_used_bytes(draft.organisation) == 0
    replay = client.delete(f"/api/v1/uploads/{upload['id']}/", HTTP_IDEMPOTENCY_KEY="abort-1")
    assert replay.status_code == 200 and replay["Idempotent-Replayed"] == "true"
    assert client.delete(f"/api/v1/uploads/{upload['id']}/").json()["status"] == "aborted"  # harmless again
    events = AuditEvent.objects.filter(action="upload.aborted", object_id=upload["id"])
    assert events.count() == 1 and events.get().actor == role_users["submitter"]
    # A late part is refused; finishing is refused; nothing is stored again.
    late = _put(client, upload, data, 2)
    assert late.status_code == 409 and late.json()["code"] == "upload-closed"
    finish = client.post(
        f"/api/v1/uploads/{upload['id']}/finish/", {"sha256": sha256_of(data)}, format="json"
    )
    assert finish.status_code == 409 and finish.json()["code"] == "upload-closed"
    assert _stored_parts(storage_dir, upload["id"]) == []


def test_abort_is_for_the_organisations_submitters_and_never_touches_a_version(role_users, draft):
    client = api_client(role_users["submitter"])
    data = RUN_ARCHIVES[0].read_bytes()
    upload = _start(client, draft, data)
    assert api_client(role_users["reviewer"]).delete(f"/api/v1/uploads/{upload['id']}/").status_code == 404
    assert api_client(None).delete(f"/api/v1/uploads/{upload['id']}/").status_code in (401, 403)
    assert Upload.objects.get(pk=upload["id"]).status == Upload.Status.OPEN
    done = api_upload(client, submission_id=draft.pk, name="b.tar.gz", data=RUN_ARCHIVES[1].read_bytes())
    refused = client.delete(f"/api/v1/uploads/{done['upload']['id']}/")
    assert refused.status_code == 409 and refused.json()["code"] == "upload-done"
    assert Upload.objects.get(pk=done["upload"]["id"]).status == Upload.Status.DONE


def test_a_part_that_lands_after_the_abort_is_not_kept(role_users, draft, storage_dir):
    client = api_client(role_users["submitter"])
    data = BIGGEST.read_bytes()
    upload = _start(client, draft, data)
    in_flight = Upload.objects.get(pk=upload["id"])  # the part's request read the upload while it was open
    client.delete(f"/api/v1/uploads/{upload['id']}/")
    from portal.errors import ConflictError

    with pytest.raises(ConflictError) as closed:
        upload_part(upload=in_flight, index=0, data_stream=io.BytesIO(data[:PART]))
    assert closed.value.code == "upload-closed"
    assert not in_flight.parts.exists() and _stored_parts(storage_dir, upload["id"]) == []


def test_cleanup_expires_idle_uploads_only_and_quota_counts_open_uploads_and_versions(
    role_users, draft, storage_dir, settings
):
    from submissions.tasks import uploads_cleanup_task

    settings.PORTAL_UPLOAD_EXPIRY_HOURS = 24
    client = api_client(role_users["submitter"])
    big, small = BIGGEST.read_bytes(), RUN_ARCHIVES[0].read_bytes()
    idle_open = _start(client, draft, big, "idle.tar.gz")
    assert _put(client, idle_open, big, 0).status_code == 200
    busy_open = _start(client, draft, big + b"x", "busy.tar.gz")
    idle_verified = api_upload(
        client, submission_id=draft.pk, name="waiting.tar.gz", data=small, create_version=False
    )["upload"]
    versioned = api_upload(
        client, submission_id=draft.pk, name="kept.tar.gz", data=RUN_ARCHIVES[1].read_bytes()
    )
    version_bytes = SubmissionVersion.objects.get(pk=versioned["version"]["id"]).size_bytes
    # Quota: parts received of open uploads, verified uploads and stored version files; a finished upload is
    # counted once (as its file); bytes only announced count nothing.
    assert organisation_storage_used_bytes(draft.organisation) == PART + len(small) + version_bytes

    _idle(idle_open["id"], 25)
    _idle(idle_verified["id"], 25)
    _idle(busy_open["id"], 30)
    assert _put(client, busy_open, big + b"x", 1).status_code == 200  # a part now: not idle any more
    _idle(versioned["upload"]["id"], 100)
    # the test runs in no task, so it may wait for the result whatever Celery's process-wide flag says (tests/conftest.py)
    result = uploads_cleanup_task.delay().get(disable_sync_subtasks=False)
    assert sorted(result["uploads_expired"]) == sorted([idle_open["id"], idle_verified["id"]])
    statuses = dict(Upload.objects.values_list("id", "status"))
    assert statuses[uuid.UUID(idle_open["id"])] == statuses[uuid.UUID(idle_verified["id"])] == "aborted"
    assert statuses[uuid.UUID(busy_open["id"])] == "open"
    assert statuses[uuid.UUID(versioned["upload"]["id"])] == "done"
    assert (
        _stored_parts(storage_dir, idle_open["id"]) == []
        and len(_stored_parts(storage_dir, busy_open["id"])) == 1
    )
    assert organisation_storage_used_bytes(draft.organisation) == PART + version_bytes  # busy_open's part 1
    expired = AuditEvent.objects.filter(action="upload.expired")
    assert expired.count() == 2 and all(event.actor is None for event in expired)
    assert "idle for more than 24 h" in expired.first().data["reason"]
    # The client that comes back learns why: the upload is aborted, start again.
    status = client.get(f"/api/v1/uploads/{idle_open['id']}/").json()
    assert status["status"] == "aborted"
    assert (
        uploads_cleanup_task.delay().get(disable_sync_subtasks=False)["uploads_expired"] == []
    )  # safe to run twice


def test_idempotency_keys_expire(role_users, draft, settings):
    from submissions.tasks import uploads_cleanup_task

    settings.PORTAL_IDEMPOTENCY_KEY_TTL_HOURS = 24
    client = api_client(role_users["submitter"])
    payload = {"submission": draft.pk, "filename": "a.tar.gz", "size": 10, "sha256": "a" * 64}
    first = client.post("/api/v1/uploads/", payload, format="json", HTTP_IDEMPOTENCY_KEY="old-key")
    fresh = client.post("/api/v1/uploads/", payload, format="json", HTTP_IDEMPOTENCY_KEY="fresh-key")
    assert first.status_code == fresh.status_code == 201
    IdempotencyKey.objects.filter(key="old-key").update(created_at=timezone.now() - timedelta(hours=25))
    # An expired key is a new request: the same key with another body is no longer "reused".
    again = client.post(
        "/api/v1/uploads/", {**payload, "size": 11}, format="json", HTTP_IDEMPOTENCY_KEY="old-key"
    )
    assert again.status_code == 201 and again.json()["id"] != first.json()["id"]
    IdempotencyKey.objects.filter(key="old-key").update(created_at=timezone.now() - timedelta(hours=25))
    assert uploads_cleanup_task.delay().get(disable_sync_subtasks=False)["idempotency_keys_deleted"] == 1
    assert list(IdempotencyKey.objects.values_list("key", flat=True)) == ["fresh-key"]
    replay = client.post("/api/v1/uploads/", payload, format="json", HTTP_IDEMPOTENCY_KEY="fresh-key")
    assert replay["Idempotent-Replayed"] == "true" and replay.json()["id"] == fresh.json()["id"]


def _queued_run(submission, user, *, age_s: float) -> CheckRun:
    version = SubmissionVersion.objects.create(
        submission=submission,
        number=submission.versions.count() + 1,
        kind="bundle",
        size_bytes=1,
        sha256="b" * 64,
        uploader=user,
    )
    run = CheckRun.objects.create(version=version, max_attempts=3)  # created, never enqueued
    CheckRun.objects.filter(pk=run.pk).update(created_at=timezone.now() - timedelta(seconds=age_s))
    return run


def test_queued_runs_whose_message_was_lost_are_resent_then_failed(role_users, draft, settings):
    settings.PORTAL_CHECK_QUEUED_TIMEOUT_S = 600
    settings.PORTAL_QUEUE_PREFIX = f"test-void-{uuid.uuid4().hex}."  # nobody consumes the re-sent start
    from portal.celery import app

    lost = _queued_run(draft, role_users["submitter"], age_s=700)
    waiting = _queued_run(draft, role_users["submitter"], age_s=60)
    app.conf.task_always_eager, was = False, app.conf.task_always_eager
    try:
        assert jobs_reconcile()["check_run"] == [lost.pk]
        lost.refresh_from_db()
        assert lost.status == CheckRun.Status.QUEUED and lost.attempts == 2
        assert (
            lost.error_message
            == "the check never started (its queue message was lost); re-queued (attempt 2 of 3)"
        )
        assert jobs_reconcile()["check_run"] == []  # the re-sent attempt gets its own deadline
        for _ in (2, 3):  # attempt 2 lost too (re-queued as 3), then attempt 3 (failed)
            CheckRun.objects.filter(pk=lost.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=700))
            assert jobs_reconcile()["check_run"] == [lost.pk]
    finally:
        app.conf.task_always_eager = was
    lost.refresh_from_db()
    assert lost.status == CheckRun.Status.ERROR and lost.attempts == 3 and lost.finished_at is not None
    assert (
        lost.error_message == "the check never started (its queue message was lost); failed after 3 attempts"
    )
    assert CheckRun.objects.get(pk=waiting.pk).status == CheckRun.Status.QUEUED
    assert CheckRun.objects.get(pk=waiting.pk).attempts == 1
    detail = api_client(role_users["submitter"]).get(f"/api/v1/check-runs/{lost.pk}/").json()
    assert detail["status"] == "error" and "queue message was lost" in detail["error_message"]
    assert AuditEvent.objects.filter(action="check.retried", object_id=str(lost.pk)).count() == 2
    assert AuditEvent.objects.filter(action="check.errored", object_id=str(lost.pk)).count() == 1
    assert AuditEvent.objects.filter(object_id=str(lost.pk), data__code="check-never-started").count() == 3


def test_beat_runs_the_cleanup_and_the_reconciler():
    from django.conf import settings

    from portal.celery import app

    schedule = {entry["task"]: entry["schedule"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert schedule["submissions.tasks.uploads_cleanup_task"] <= 3600
    assert schedule["submissions.tasks.check_runs_reconcile_task"] <= 60
    app.loader.import_default_modules()
    assert {"submissions.tasks.uploads_cleanup_task", "submissions.tasks.check_runs_reconcile_task"} <= set(
        app.tasks
    )
