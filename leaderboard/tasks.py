"""Celery tasks of the leaderboard app: the publication schedule and the re-checks (beat), and the goodput tables
the publish worker writes after a publication. It runs both halves (leaderboard.publishing, leaderboard.board); the
registered names (`leaderboard.tasks.<function>`) are what beat and queued messages hold."""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings

from leaderboard.publishing.services import publications_publish_due
from portal.queues import task_kind, task_send


@shared_task(**task_kind("publish"))
def publications_publish_due_task() -> list[str]:
    """Every minute (beat): publish what is due (embargo ended, cohort reached), each exactly once."""
    return publications_publish_due()


@shared_task(**task_kind("publish"))
def goodput_table_build_task() -> list[str]:
    """After a publication, retraction or backfill commits: write the goodput tables of the new public snapshot
    (leaderboard.board.goodput), so that no web process builds one on a buyer's first SLO query."""
    from leaderboard.board.goodput.tables import goodput_tables_build
    from leaderboard.models import Publication

    return goodput_tables_build(Publication.objects.filter(Publication.states.q("published")))


def goodput_tables_schedule(sender=None, **kwargs) -> None:
    """leaderboard.publishing.signals.public_changed (connected in LeaderboardConfig.ready): ask the publish worker
    to write the goodput tables of the new snapshot (PORTAL_GOODPUT_TABLE_ON_PUBLISH); if it cannot be asked, the
    first SLO query builds them, so a failure here is logged and nothing more."""
    if not settings.PORTAL_GOODPUT_TABLE_ON_PUBLISH:
        return
    try:
        task_send("leaderboard.tasks.goodput_table_build_task")
    except Exception:  # noqa: BLE001 - the broker or, when eager, the build itself: the query builds it instead
        logging.getLogger(__name__).warning("goodput tables not scheduled", exc_info=True)


@shared_task(**task_kind("housekeeping"))
def rechecks_start_if_due_task() -> int | None:
    """Hourly (beat), only with PORTAL_RECHECK_AUTOMATIC: start a re-check of the published revisions when the
    checker or a rule set changed version since they were checked."""
    from leaderboard.publishing.rechecks import recheck_start_if_due

    return recheck_start_if_due()


@shared_task(**task_kind("housekeeping"))
def rechecks_advance_task() -> list[int]:
    """Every minute (beat): write the report of each re-check whose runs all ended."""
    from leaderboard.publishing.rechecks import recheck_campaigns_advance

    return recheck_campaigns_advance()
