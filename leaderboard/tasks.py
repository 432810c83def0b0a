"""Celery tasks of the leaderboard app: the publication schedule (beat)."""

from __future__ import annotations

from celery import shared_task

from leaderboard.services import publications_publish_due
from portal.queues import task_kind


@shared_task(**task_kind("publish"))
def publications_publish_due_task() -> list[str]:
    """Every minute (beat): publish what is due (embargo ended, cohort reached), each exactly once."""
    return publications_publish_due()
