"""The one reconciler of background jobs. Every kind of object a task moves through statuses (check runs, and the
re-check runs that are check runs; spot-checks; previews; direct uploads being verified) declares an `Overdue`
entry in its app's workflow module (`OVERDUE`, gathered like `POLICIES`): the model, its workflow table and the
action that ends it, the "in progress" states, the clock fields and the deadline, the finding code and the sentence
the user reads. One function, `overdue_end`, ends every overdue row of an entry by compare-and-set through the
kind's table (`Policy.advance`) with an audit event; one beat task (`check_runs_reconcile_task`, every minute) runs
every entry. A kind failing to reconcile never stops the others."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import reduce
from importlib import import_module
from importlib.util import find_spec
from operator import or_

from django.apps import apps
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.module_loading import import_string

from portal.policy import Policy

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Overdue:
    """One kind of job a lost worker or a lost message can leave unfinished, and how it ends."""

    kind: str  # "preview": the key of jobs_reconcile's answer (several entries may share one)
    model: type
    policy: Policy
    action: str  # the table's row that ends it
    target: str  # the final state it ends in
    states: tuple[str, ...]  # "in progress"
    since: tuple[str, ...]  # the clock: the first of these fields that is set
    limit_s: Callable[[], float]  # seconds in progress before it is overdue (read at each pass: settings)
    code: str  # the finding's stable code
    sentence: str  # what the user reads: what happened, and what to do
    record: Callable[[Overdue, datetime], dict]  # the fields that keep the reason where the user reads it
    event: str = ""  # the audit action: "<table>.lost" unless named
    extra: Callable[[], Q] = field(
        default=Q
    )  # more conditions (a message still waiting to be sent is not lost)
    # Instead of the plain transition (check runs: re-queue while attempts remain), a dotted function
    # (row, *, reason, only_if, code) -> the row or None, doing its own compare-and-set and audit.
    end: str = ""
    then: str = ""  # a dotted function (row) run in the same transaction after it ended (files, storage)

    def overdue_q(self, now: datetime) -> Q:
        """In progress, and its clock older than the deadline."""
        deadline = now - timedelta(seconds=self.limit_s())
        older = [
            Q(**{f"{name}__isnull": True for name in self.since[:i]}, **{f"{self.since[i]}__lt": deadline})
            for i in range(len(self.since))
        ]
        return Q(**{f"{self.policy.field}__in": self.states}) & reduce(or_, older) & self.extra()


def overdue_end(entry: Overdue, *, now: datetime | None = None) -> list:
    """End (or, with `end`, re-queue) every row of `entry` overdue at `now`; the ids handled. The condition is
    re-checked in the compare-and-set: a row that moved or beat meanwhile is left alone."""
    now = now or timezone.now()
    condition = entry.overdue_q(now)
    handled = []
    for row in entry.model.objects.filter(condition).order_by("pk"):
        with transaction.atomic():
            if entry.end:
                if (
                    import_string(entry.end)(row, reason=entry.sentence, only_if=condition, code=entry.code)
                    is not None
                ):
                    handled.append(row.pk)
                continue
            if not entry.policy.take(
                None,
                row,
                entry.action,
                target=entry.target,
                reason=entry.sentence,
                fields=entry.record(entry, now),
                queryset=entry.model.objects.filter(condition),
                event=entry.event or f"{entry.policy.name.replace('-', '')}.lost",
                data={"code": entry.code},
                quiet=True,
            ):
                continue
            row.refresh_from_db()
            if entry.then:
                import_string(entry.then)(row)
            handled.append(row.pk)
    return handled


def registered_overdue() -> tuple[Overdue, ...]:
    """Every app's entries (`OVERDUE` in its workflow module), in INSTALLED_APPS order."""
    found: list[Overdue] = []
    for config in apps.get_app_configs():
        name = f"{config.name}.workflow"
        if find_spec(name) is not None:
            found.extend(getattr(import_module(name), "OVERDUE", ()))
    return tuple(found)


def jobs_reconcile(*, now=None) -> dict[str, list]:
    """Run every entry once: {kind: ids ended or re-queued}."""
    handled: dict[str, list] = {}
    for entry in registered_overdue():
        ids = handled.setdefault(entry.kind, [])
        try:
            ids.extend(overdue_end(entry, now=now))
        except Exception:  # noqa: BLE001 - one kind's failure (its table locked, a bug) must not stop the rest
            logger.exception("reconciling %s failed", entry.kind)
    return handled
