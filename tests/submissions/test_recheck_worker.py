"""A re-check of what is published through real `celery worker`s on the queues per kind: the campaign's run fans
out like every check (start on unpack, points on point, the join on judge), and a re-check on the same rule set
reports that nothing changed."""

from __future__ import annotations

import time

import pytest

from leaderboard.models import RecheckCampaign
from leaderboard.publishing import rechecks
from portal.celery import app
from review.selectors import check_verdict
from submissions.models import CheckRun
from tests.leaderboard.extension_support import published_result
from tests.submissions.conftest import wait_for_run
from tests.submissions.support import RUN_ARCHIVES, make_catalog

pytestmark = pytest.mark.django_db(transaction=True)

FINISHED = (CheckRun.Status.PASSED, CheckRun.Status.FAILED, CheckRun.Status.ERROR)


def test_a_re_check_fans_out_on_the_workers_and_reports_no_change_on_the_same_rules(
    role_users, live_pipeline
):
    benchmark, system = make_catalog(role_users["organisations"]["acme"])
    app.conf.task_always_eager = True  # publish in-process (the same storage the workers read)
    try:
        published = published_result(role_users["submitter"], system, benchmark, list(RUN_ARCHIVES))
    finally:
        app.conf.task_always_eager = False
    points = live_pipeline(kinds=("point",))
    pipeline = live_pipeline(kinds=("unpack", "judge", "housekeeping"))
    campaign = rechecks.recheck_campaign_start(actor=role_users["chair"], everything=True)
    result = campaign.results.get()
    run = wait_for_run(result.check_run_id, statuses=FINISHED, workers=[points, pipeline])
    assert run.purpose == CheckRun.Purpose.RECHECK and run.point_metrics.count() == 7
    assert points.log_path.read_text().count("check_run_point_task[") >= 7
    pipeline_log = pipeline.log_path.read_text()
    assert "check_run_start_task[" in pipeline_log and "check_run_finish_task[" in pipeline_log
    # The worker's own judge step writes the report once the last run's end committed: no beat runs here.
    deadline = time.monotonic() + 60
    while (
        not RecheckCampaign.objects.get(pk=campaign.pk).in_state("reported") and time.monotonic() < deadline
    ):
        time.sleep(0.5)
    assert RecheckCampaign.objects.get(pk=campaign.pk).in_state("reported")
    assert rechecks.recheck_campaigns_advance() == []  # nothing left for the safety net
    result.refresh_from_db()
    assert result.changes["changed"] is False, result.changes
    assert result.changes["verdict"] == [
        check_verdict(published.version, published.check_run)["label"],
        check_verdict(published.version, run)["label"],
    ]
    assert campaign.results.get().status == "pending"
