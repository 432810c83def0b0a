"""Spot-check tasks: the measurement on its own `spotcheck` queue (its workers are the only ones that reach out,
through portal.egress), and the schedule's pass on housekeeping."""

from __future__ import annotations

from celery import shared_task

from portal.queues import task_kind


@shared_task(**task_kind("spotcheck"))
def spotcheck_run_task(spotcheck_id: int) -> None:
    from spotchecks.services import spotcheck_run

    spotcheck_run(spotcheck_id)


@shared_task(**task_kind("housekeeping"))
def spotchecks_schedule_task() -> list[int]:
    from spotchecks.services import spotchecks_schedule

    return spotchecks_schedule()
