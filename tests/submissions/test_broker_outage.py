"""The broker (Redis) down while a version is finished: the version and its queued check are committed together,
finish answers 202, and the check starts by itself once the broker is back (the outbox and its beat task).
Real services: PostgreSQL, gunicorn, a celery worker and celery beat, and a redis-server of the test's own
that the test stops and starts again."""

from __future__ import annotations

import time

import pytest

from submissions.models import CheckOutbox, CheckRun, SubmissionVersion
from tests.submissions.conftest import wait_for_run
from tests.submissions.live_http import LiveClient
from tests.submissions.support import ONE_ARCHIVE_ERRORS, RUN_ARCHIVES, assert_failed_on

pytestmark = pytest.mark.django_db(transaction=True)

FINISHED = (CheckRun.Status.PASSED, CheckRun.Status.FAILED, CheckRun.Status.ERROR)


def test_finish_while_the_broker_is_down_answers_202_and_the_check_starts_when_it_is_back(
    role_users, draft, private_redis, live_pipeline, live_portal, live_beat
):
    archive = RUN_ARCHIVES[0]
    data = archive.read_bytes()
    worker = live_pipeline(redis_url=private_redis.url)
    beat = live_beat(redis_url=private_redis.url)  # the portal's own schedule: the outbox every 10 s
    web = live_portal(redis_url=private_redis.url)
    client = LiveClient(web.url, role_users["submitter"])
    upload = client.start_upload(submission_id=draft.pk, name=archive.name, data=data)
    client.send_parts(upload, data)

    private_redis.stop()
    status, body = client.finish(upload, data)
    assert status == 202, body
    assert "check queue cannot be reached" in body["detail"]
    version = SubmissionVersion.objects.get(pk=body["version"]["id"])  # committed, with its queued check
    run = CheckRun.objects.get(version=version)
    assert run.status == CheckRun.Status.QUEUED
    message = CheckOutbox.objects.get(check_run=run)
    assert message.attempt == 1 and "Error" in message.last_error
    # The same finish again (a client retrying) gets the same version, still 202 while the broker is down.
    again_status, again = client.finish(upload, data)
    assert (again_status, again["version"]["id"]) == (202, version.pk)

    time.sleep(12)  # a beat pass or more fails meanwhile; the message stays
    assert CheckRun.objects.get(pk=run.pk).status == CheckRun.Status.QUEUED
    assert CheckOutbox.objects.filter(check_run=run).exists()

    private_redis.start()  # an empty Redis: nothing of before survived
    back = time.monotonic()
    deadline = back + 60
    while time.monotonic() < deadline:
        run = CheckRun.objects.get(pk=run.pk)
        if run.started_at is not None or run.status != CheckRun.Status.QUEUED:
            break
        time.sleep(0.25)
    started_after = time.monotonic() - back
    print(f"\nbroker back -> check started: {started_after:.1f} s")
    assert run.status != CheckRun.Status.QUEUED, (
        f"still queued 60 s after the broker came back;\nworker: {worker.tail()}\nbeat: {beat.tail()}"
    )
    run = wait_for_run(run.pk, statuses=FINISHED, workers=[worker])
    assert_failed_on(run, ONE_ARCHIVE_ERRORS[archive.name])
    assert run.attempts == 1 and run.error_message == ""
    assert not CheckOutbox.objects.exists()
    assert "Internal Server Error" not in web.tail()
