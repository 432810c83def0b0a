"""The one place a test puts a row in a state without walking the workflow to it (issue 36).

Production code changes a state only through a table's `take` (portal/policy.py). A test often needs a world the
policy would take many steps to reach (a submission already published, a check run that errored an hour ago) and is
not about those steps: it arranges that world here, by name, so that `tests/test_status_comparisons.py` can hold every
other test module to the same rule as the code, and a reader sees at a glance which rows a test put in place by hand.
"""

from __future__ import annotations

from django.db.models import Model, QuerySet


def put(target: Model | QuerySet, state: str, *, field: str = "status", **fields) -> Model | int:
    """Write `state` (and `fields`) to one row, or to every row of a queryset, with no guard and no audit event.

    A saved row is written by its primary key and read back, so the test holds what the database holds; an unsaved row
    is only changed in memory (a page reading it as it would after a decision)."""
    values = {field: state, **fields}
    if isinstance(target, QuerySet):
        return target.update(**values)
    if target.pk is None:
        for name, value in values.items():
            setattr(target, name, value)
        return target
    type(target)._default_manager.filter(pk=target.pk).update(**values)
    target.refresh_from_db()
    return target
