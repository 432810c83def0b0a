"""Celery queues per kind of task: names, routing, time limits, and the broker visibility check.

Every task declares its kind in its decorator (`@shared_task(**task_kind("point"))`); the router sends it to
`<PORTAL_QUEUE_PREFIX><kind>` at send time (so a test's or a deployment's prefix applies to every message,
chord callbacks and beat entries included), and the kind's soft and hard time limits ride on the task.
docs/deploy.md says which workers consume which queues and how to size them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from celery import current_app
from django.conf import settings
from django.db import transaction

from portal.env import EnvError

# Kind -> what its tasks do. The order is the order of `-Q` lists and of docs/deploy.md's table.
QUEUE_KINDS: dict[str, str] = {
    "unpack": "open a version's stored files and list its load points; verify a direct upload's SHA-256",
    "point": "recompute one load point from its raw log (the heavy one: minutes per GB of events.jsonl)",
    "judge": "run the rules over a whole version and end its check run",
    "notify": "e-mail digests and review deadline reminders",
    "publish": "publish what is due (embargo ended, cohort reached)",
    "spotcheck": "measure one point again against a declared endpoint (GuideLLM through the egress guard)",
    "housekeeping": "reconcile stuck checks, send the check outbox, expire uploads, audit checkpoints",
}

# (soft, hard) seconds per kind; the environment may change each (PORTAL_<KIND>_SOFT_TIME_LIMIT_S and
# PORTAL_<KIND>_TIME_LIMIT_S). A point of a 20-minute run at high concurrency is GBs of log: an hour.
DEFAULT_TIME_LIMITS_S: dict[str, tuple[int, int]] = {
    "unpack": (1800, 1900),
    "point": (3600, 3900),
    "judge": (900, 1000),
    "notify": (300, 360),
    "publish": (300, 360),
    # GuideLLM for PORTAL_SPOTCHECK_DURATION_S (30 s; at most 3600) plus its start-up and the import.
    "spotcheck": (1200, 1260),
    "housekeeping": (600, 660),
}

# The long, idempotent kinds (their services compare-and-set on status and attempt): acknowledged after they
# ran, so a message whose worker died is delivered again.
ACKS_LATE_KINDS = frozenset({"unpack", "point", "judge"})


def time_limits_from_env(env_int) -> dict[str, tuple[int, int]]:
    """Read every kind's (soft, hard) limits with the settings' strict reader; the hard one must be longer."""
    limits: dict[str, tuple[int, int]] = {}
    for kind, (soft_default, hard_default) in DEFAULT_TIME_LIMITS_S.items():
        soft_name, hard_name = (
            f"PORTAL_{kind.upper()}_SOFT_TIME_LIMIT_S",
            f"PORTAL_{kind.upper()}_TIME_LIMIT_S",
        )
        soft = env_int(soft_name, soft_default, minimum=1)
        hard = env_int(hard_name, hard_default, minimum=1)
        if hard <= soft:
            raise EnvError(f"{hard_name} ({hard} s) must be greater than {soft_name} ({soft} s).")
        limits[kind] = (soft, hard)
    return limits


def visibility_timeout_check(
    *, visibility_timeout_s: int, time_limits: Mapping[str, tuple[int, int]]
) -> None:
    """Stop start-up when the broker could re-deliver a task that is still running.

    Redis hands an unacknowledged (acks_late) message to another worker after the visibility timeout; one
    shorter than the longest hard limit makes a long point run twice at once, and again, forever."""
    kind, (_soft, hard) = max(time_limits.items(), key=lambda item: item[1][1])
    if visibility_timeout_s <= hard:
        raise EnvError(
            f"CELERY_BROKER_VISIBILITY_TIMEOUT_S ({visibility_timeout_s} s) must be longer than the longest hard "
            f"task time limit, PORTAL_{kind.upper()}_TIME_LIMIT_S ({hard} s): raise it (or lower that limit), "
            "or Redis re-delivers running tasks to a second worker."
        )


def queue_name(kind: str, *, prefix: str) -> str:
    if kind not in QUEUE_KINDS:
        raise KeyError(f"unknown queue kind {kind!r}")
    return f"{prefix}{kind}"


def queue_names(*, prefix: str, kinds: tuple[str, ...] | None = None) -> list[str]:
    """The queues of `kinds` (all by default), for a worker's `-Q`."""
    return [queue_name(kind, prefix=prefix) for kind in (kinds or tuple(QUEUE_KINDS))]


def task_kind(kind: str, **options: Any) -> dict[str, Any]:
    """The decorator options of a task of this kind: its kind (read by the router), its time limits, and
    acks_late with reject_on_worker_lost for the long idempotent kinds."""

    soft, hard = settings.PORTAL_TASK_TIME_LIMITS[kind]
    values: dict[str, Any] = {"queue_kind": kind, "soft_time_limit": soft, "time_limit": hard}
    if kind in ACKS_LATE_KINDS:
        values.update(acks_late=True, reject_on_worker_lost=True)
    values.update(options)
    return values


def route_task(name, args, kwargs, options, task=None, **kw):
    """Celery router (CELERY_TASK_ROUTES): the queue of the task's kind, under the prefix set now."""

    task = task or current_app.tasks.get(name)
    kind = getattr(task, "queue_kind", None) or "housekeeping"
    return {"queue": queue_name(kind, prefix=settings.PORTAL_QUEUE_PREFIX)}


def task_send(task_name: str, *args: Any, **options: Any) -> None:
    """Send a task by its registered name now (the broker's queue, or in-process without a broker): the one way
    the portal queues work, so no service imports a tasks module (which imports the services back)."""
    current_app.signature(task_name, args=list(args)).apply_async(**options)


def task_send_on_commit(task_name: str, *args: Any) -> None:
    """Send a task by name once the caller's transaction commits (never for a row a rollback takes back). A check
    run's start goes through its outbox as well (submissions.checks.queue), which sends with `task_send`."""
    transaction.on_commit(lambda: task_send(task_name, *args))
