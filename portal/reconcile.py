"""The one reconciler of background jobs: every kind of object a task moves through statuses (check runs, and the
re-check runs that are check runs; spot-checks; previews) registers the function that ends or re-queues what a
lost worker or a lost message left unfinished, and one beat task (`check_runs_reconcile_task`, every minute) runs
them all. A kind failing to reconcile never stops the others."""

from __future__ import annotations

import logging

from django.utils.module_loading import import_string

logger = logging.getLogger(__name__)

# kind -> the function (keyword `now`) that returns the ids it ended or re-queued. Named, not imported: the apps
# sit above this module.
JOB_RECONCILERS = {
    "check_run": "submissions.checks.recovery.check_runs_reconcile",
    "spot_check": "spotchecks.services.spotchecks_reconcile",
    "preview": "previews.services.previews_reconcile",
}


def jobs_reconcile(*, now=None) -> dict[str, list[int]]:
    """Run every kind's reconciler once: {kind: ids handled}."""
    handled: dict[str, list[int]] = {}
    for kind, path in JOB_RECONCILERS.items():
        try:
            handled[kind] = list(import_string(path)(now=now))
        except Exception:  # noqa: BLE001 - one kind's failure (its table locked, a bug) must not stop the rest
            logger.exception("reconciling %s failed", kind)
            handled[kind] = []
    return handled
