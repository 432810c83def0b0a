"""Workers per queue (docs/deploy.md): one real `celery worker` consumes only the point queue, another only unpack
and judge; a curve's check still ends, each task ran on the worker of its kind, and nothing is left queued."""

from __future__ import annotations

import pytest
import redis

from portal.queues import queue_names
from submissions.models import CheckRun
from tests.submissions.conftest import wait_for_run
from tests.submissions.support import (
    SEVEN_ARCHIVES_ERRORS,
    api_client,
    api_upload_run_archives,
    assert_failed_on,
)

pytestmark = pytest.mark.django_db(transaction=True)

FINISHED = (CheckRun.Status.PASSED, CheckRun.Status.FAILED, CheckRun.Status.ERROR)


def test_points_run_on_the_point_workers_and_the_rest_on_the_pipeline_worker(
    role_users, draft, live_pipeline, redis_url
):
    points = live_pipeline(kinds=("point",))
    pipeline = live_pipeline(kinds=("unpack", "judge"))
    body = api_upload_run_archives(api_client(role_users["submitter"]), submission_id=draft.pk)
    run = CheckRun.objects.get(version_id=body["version"]["id"])
    run = wait_for_run(run.pk, statuses=FINISHED, workers=[points, pipeline])
    assert_failed_on(run, SEVEN_ARCHIVES_ERRORS)
    assert run.point_metrics.count() == 7
    # Received lines name the task and its id ("Task <name>[<id>] received"); the start-up banner lists names only.
    points_log, pipeline_log = points.log_path.read_text(), pipeline.log_path.read_text()
    assert points_log.count("check_run_point_task[") >= 7
    assert "check_run_start_task[" not in points_log and "check_run_finish_task[" not in points_log
    assert "check_run_start_task[" in pipeline_log and "check_run_finish_task[" in pipeline_log
    assert "check_run_point_task[" not in pipeline_log
    client = redis.Redis.from_url(redis_url)
    try:
        assert all(client.llen(name) == 0 for name in queue_names(prefix=live_pipeline.queue_prefix))
    finally:
        client.close()
