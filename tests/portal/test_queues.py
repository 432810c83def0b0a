"""Queues per kind of task: every portal task is routed to its kind's queue with its kind's time limits, and a
broker visibility timeout shorter than the longest task stops start-up naming the settings."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

from portal.celery import app
from portal.queues import ACKS_LATE_KINDS, QUEUE_KINDS, queue_names

ROOT = Path(__file__).resolve().parents[2]

# Written from the issue, not read from the code: which task is which kind.
EXPECTED_KINDS = {
    "submissions.tasks.check_run_start_task": "unpack",
    "submissions.tasks.check_run_point_task": "point",
    "submissions.tasks.check_run_finish_task": "judge",
    "submissions.tasks.check_runs_reconcile_task": "housekeeping",
    "submissions.tasks.check_outbox_send_task": "housekeeping",
    "submissions.tasks.uploads_cleanup_task": "housekeeping",
    "submissions.tasks.upload_verify_task": "unpack",
    "submissions.tasks.multipart_uploads_sweep_task": "housekeeping",
    "audit.tasks.audit_checkpoint_task": "housekeeping",
    "audit.tasks.audit_chain_verify_task": "housekeeping",
    "review.tasks.review_deadlines_task": "notify",
    "accounts.tasks.notifications_digest_task": "notify",
    "leaderboard.tasks.publications_publish_due_task": "publish",
    # the only task that reaches outside, through the egress guard, on workers of its own (docs/remeasurement.md)
    "spotchecks.tasks.spotcheck_run_task": "spotcheck",
    "spotchecks.tasks.spotchecks_schedule_task": "housekeeping",
}


def _portal_tasks() -> dict:
    app.loader.import_default_modules()
    return {name: task for name, task in app.tasks.items() if not name.startswith("celery.")}


def test_every_portal_task_has_a_kind_and_is_routed_to_its_queue(settings):
    settings.PORTAL_QUEUE_PREFIX = "prod."
    tasks = _portal_tasks()
    assert set(EXPECTED_KINDS) <= set(tasks)
    for name, task in tasks.items():
        kind = EXPECTED_KINDS.get(name, getattr(task, "queue_kind", None))
        assert kind in QUEUE_KINDS, f"{name} declares no queue kind"
        route = app.amqp.router.route({}, name, (), {}, task)
        assert route["queue"].name == f"prod.{kind}", name
        soft, hard = settings.PORTAL_TASK_TIME_LIMITS[kind]
        assert (task.soft_time_limit, task.time_limit) == (soft, hard), name
        assert bool(task.acks_late) == (kind in ACKS_LATE_KINDS), name
        if kind in ACKS_LATE_KINDS:
            assert task.reject_on_worker_lost, name


def test_a_task_sent_by_name_and_the_beat_entries_follow_the_prefix(settings):
    settings.PORTAL_QUEUE_PREFIX = "other."
    _portal_tasks()
    for entry in settings.CELERY_BEAT_SCHEDULE.values():
        assert "queue" not in entry.get("options", {}), entry  # routed by kind, never pinned
        route = app.amqp.router.route(dict(entry.get("options", {})), entry["task"], (), {})
        assert route["queue"].name.startswith("other."), entry
    route = app.amqp.router.route({}, "submissions.tasks.check_run_start_task", (), {})
    assert route["queue"].name == "other.unpack"


def test_the_point_kind_has_the_longest_limit_and_the_broker_waits_longer():
    limits = settings.PORTAL_TASK_TIME_LIMITS
    assert max(limits, key=lambda kind: limits[kind][1]) == "point"
    visibility = settings.CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"]
    assert visibility > max(hard for _soft, hard in limits.values())
    assert queue_names(prefix="p.") == [f"p.{kind}" for kind in QUEUE_KINDS]


def _start(**env) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "PORTAL_", "CELERY_"))}
    # a deployment's other required secrets are set (CI exports SECRET_KEY, which makes the endpoint key required)
    environ.update({"DJANGO_SETTINGS_MODULE": "portal.settings", "PORTAL_ENDPOINT_KEY": "e" * 40, **env})
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"CELERY_BROKER_VISIBILITY_TIMEOUT_S": "3000"},
            "CELERY_BROKER_VISIBILITY_TIMEOUT_S (3000 s) must be longer than the longest hard task time limit, "
            "PORTAL_POINT_TIME_LIMIT_S (3900 s)",
        ),
        (
            {"PORTAL_JUDGE_TIME_LIMIT_S": "9000", "PORTAL_JUDGE_SOFT_TIME_LIMIT_S": "8000"},
            # a longer judge limit raises the derived timeout with it: start-up succeeds
            None,
        ),
        (
            {"PORTAL_JUDGE_TIME_LIMIT_S": "9000", "CELERY_BROKER_VISIBILITY_TIMEOUT_S": "5000"},
            "PORTAL_JUDGE_TIME_LIMIT_S (9000 s)",
        ),
        (
            {"PORTAL_NOTIFY_TIME_LIMIT_S": "100", "PORTAL_NOTIFY_SOFT_TIME_LIMIT_S": "100"},
            "PORTAL_NOTIFY_TIME_LIMIT_S (100 s) must be greater than PORTAL_NOTIFY_SOFT_TIME_LIMIT_S (100 s)",
        ),
    ],
)
def test_start_up_stops_with_a_message_naming_the_settings(env, message):
    result = _start(**env)
    if message is None:
        assert result.returncode == 0, result.stderr[-2000:]
    else:
        assert result.returncode != 0
        assert message in result.stderr, result.stderr[-2000:]


def test_a_worker_started_without_a_queue_list_consumes_every_kind():
    # `celery -A portal worker` as README.md starts it: no -Q, so the configured queues are all the kinds'.
    assert [queue.name for queue in app.conf.task_queues] == queue_names(prefix=settings.PORTAL_QUEUE_PREFIX)


def test_docker_compose_runs_a_worker_for_every_queue():
    """A queue no compose worker consumes leaves its tasks queued forever (a spot-check, a notification)."""
    import yaml

    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    consumed = set()
    for service in services.values():
        command = service.get("command") or ""
        if "celery -A portal worker" in command:
            consumed |= set(command.split(" -Q ", 1)[1].split()[0].rstrip(';"').split(","))
    assert {f"portal.{kind}" for kind in QUEUE_KINDS} <= consumed, sorted(consumed)
