"""Celery tasks of the leaderboard app: the publication schedule (beat)."""

from __future__ import annotations

from celery import shared_task

from leaderboard.services import publications_publish_due
from portal.queues import task_kind


@shared_task(**task_kind("publish"))
def publications_publish_due_task() -> list[str]:
    """Every minute (beat): publish what is due (embargo ended, cohort reached), each exactly once."""
    return publications_publish_due()


@shared_task(**task_kind("publish"))
def goodput_table_build_task() -> list[str]:
    """After a publication, retraction or backfill commits: write the goodput tables of the new public snapshot
    (leaderboard.goodput), so that no web process builds one on a buyer's first SLO query."""
    from leaderboard.goodput.tables import goodput_tables_build
    from leaderboard.models import Publication

    return goodput_tables_build(Publication.objects.filter(Publication.states.q("published")))


@shared_task(**task_kind("housekeeping"))
def rechecks_start_if_due_task() -> int | None:
    """Hourly (beat), only with PORTAL_RECHECK_AUTOMATIC: start a re-check of the published revisions when the
    checker or a rule set changed version since they were checked."""
    from leaderboard.rechecks import recheck_start_if_due

    return recheck_start_if_due()


@shared_task(**task_kind("housekeeping"))
def rechecks_advance_task() -> list[int]:
    """Every minute (beat): write the report of each re-check whose runs all ended."""
    from leaderboard.rechecks import recheck_campaigns_advance

    return recheck_campaigns_advance()
