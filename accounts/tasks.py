"""Celery tasks of accounts: the daily notification digest (beat)."""

from __future__ import annotations

from celery import shared_task

from accounts.services.notifications import notifications_digest_send
from portal.queues import task_kind


@shared_task(**task_kind("notify"))
def notifications_digest_task() -> dict:
    """Once a day (beat): one e-mail per digest user with their un-e-mailed notifications; safe to run twice."""
    return notifications_digest_send()
