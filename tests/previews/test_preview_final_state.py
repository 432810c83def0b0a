"""Every preview reaches a final state: an error in its check ends it `failed` with a finding a user can act on,
and the one reconciler (portal.reconcile) ends a preview whose check was lost; a failed preview is re-checked or
deleted by its organisation."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.core.files.storage import default_storage
from django.utils import timezone

from portal.reconcile import jobs_reconcile
from previews import services
from previews.models import Preview
from tests.previews.support import GUIDELLM, files_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def acme_system(role_users, sample_catalog, storage_dir):
    return sample_catalog


def test_a_check_that_raises_ends_the_preview_failed_and_it_can_be_deleted(
    role_users, acme_system, django_capture_on_commit_callbacks
):
    benchmark, system = acme_system
    submitter = role_users["submitter"]
    with django_capture_on_commit_callbacks(execute=False):
        preview = services.preview_create(
            actor=submitter, system=system, benchmark=benchmark, name="lost file", files=files_of([GUIDELLM])
        )
    default_storage.delete(preview.files[0]["storage_key"])  # the storage lost the file: reading it raises
    preview = services.preview_check(preview.pk)
    assert preview.in_state("failed")
    (finding,) = preview.findings
    assert finding["rule"] == "preview-check-error" and "FileNotFoundError" in finding["message"]
    assert "Re-check" in finding["fix"]
    services.preview_delete(actor=submitter, preview=preview)
    assert not Preview.objects.exists()


def test_a_preview_whose_check_was_lost_is_ended_by_the_reconciler_and_rechecked(
    role_users, acme_system, django_capture_on_commit_callbacks, settings
):
    benchmark, system = acme_system
    submitter = role_users["submitter"]
    with django_capture_on_commit_callbacks(execute=False):  # the message never reaches a worker
        preview = services.preview_create(
            actor=submitter,
            system=system,
            benchmark=benchmark,
            name="lost message",
            files=files_of([GUIDELLM]),
        )
    assert jobs_reconcile()["preview"] == []  # not yet overdue
    _soft, hard = settings.PORTAL_TASK_TIME_LIMITS["judge"]
    later = timezone.now() + timedelta(seconds=hard + 601)
    assert jobs_reconcile(now=later)["preview"] == [preview.pk]
    preview.refresh_from_db()
    assert preview.in_state("failed")
    assert [f["rule"] for f in preview.findings] == ["preview-check-lost"]
    assert jobs_reconcile(now=later)["preview"] == []  # ended once
    with django_capture_on_commit_callbacks(execute=True):
        preview = services.preview_recheck(actor=submitter, preview=preview)
    preview.refresh_from_db()
    assert preview.in_state("checked") and preview.tool == "guidellm"


@pytest.mark.django_db(transaction=True)
def test_a_preview_whose_worker_is_killed_mid_check_ends_in_a_final_state(
    role_users, sample_catalog, live_pipeline, settings
):
    benchmark, system = sample_catalog
    worker = live_pipeline(kinds=("judge",))
    preview = services.preview_create(
        actor=role_users["submitter"],
        system=system,
        benchmark=benchmark,
        name="killed mid-check",
        files=files_of([GUIDELLM]),
    )
    # The worker takes the check; kill -9 it while the preview is still `checking`.
    deadline = time.monotonic() + 60
    while (
        "preview_check_task" not in worker.tail() + worker.log_path.read_text()
        and time.monotonic() < deadline
    ):
        time.sleep(0.05)
    worker.kill()
    preview.refresh_from_db()
    assert preview.in_state("checking"), "the check finished before the kill: nothing to reconcile"
    _soft, hard = settings.PORTAL_TASK_TIME_LIMITS["judge"]
    jobs_reconcile(now=timezone.now() + timedelta(seconds=hard + 601))
    preview.refresh_from_db()
    assert preview.in_state("failed")
    assert [f["rule"] for f in preview.findings] == ["preview-check-lost"]
