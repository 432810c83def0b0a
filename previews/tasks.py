"""The preview check, on the judge queue (it reads every request of the files once, like a point's judge)."""

from __future__ import annotations

from celery import shared_task

from portal.queues import task_kind


@shared_task(**task_kind("judge"))
def preview_check_task(preview_id: int) -> None:
    from previews.services import preview_check

    preview_check(preview_id)
