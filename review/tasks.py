"""Celery tasks of the review app: the deadline job (beat)."""

from __future__ import annotations

from celery import shared_task

from portal.queues import task_kind
from review.services.deadlines import deadlines_run


@shared_task(**task_kind("notify"))
def review_deadlines_task() -> dict:
    """Every 15 minutes (beat): release overdue reviewers, remind and escalate objections and evidence requests."""
    return deadlines_run()
