"""Named sets of a model's states: the one place that says which statuses "published", "active" or "open for
review" mean. Queries, pages and services ask by name (`Submission.states.q("published")`,
`assignment.in_state("active")`); no code outside the models and the workflow policy compares a status itself
(tests/test_status_comparisons.py keeps it so).

A set is declared on the model beside its status choices:

    states = States(Status, reviewable=(Status.SUBMITTED, Status.IN_REVIEW))

and reached from a related model's query with `via` (`ReviewAssignment.states.q("active",
via="review_assignments")`).
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Q


class States:
    def __init__(self, choices: Iterable[str] = (), *, field: str = "status", **sets: Iterable[str]):
        self.field = field
        # Every single state is a set of its own ("in_review"), beside the named ones.
        self.sets = {str(state): (str(state),) for state in choices}
        self.sets.update({name: tuple(str(state) for state in states) for name, states in sets.items()})

    def of(self, name: str) -> tuple[str, ...]:
        try:
            return self.sets[name]
        except KeyError:
            raise KeyError(
                f"no state or state set {name!r} (known: {', '.join(sorted(self.sets))})"
            ) from None

    def q(self, name: str, *, via: str = "") -> Q:
        """The filter "its status is one of `name`" (on the model, or through the relation path `via`)."""
        path = f"{via}__{self.field}" if via else self.field
        return Q(**{f"{path}__in": self.of(name)})

    def q_any(self, names: Iterable[str], *, via: str = "") -> Q:
        """The filter "its status is in any of the sets `names`" (states or named sets, e.g. the ones an operator
        chose on the command line; an unknown name is a KeyError naming the known ones)."""
        states = sorted({state for name in names for state in self.of(name)})
        path = f"{via}__{self.field}" if via else self.field
        return Q(**{f"{path}__in": states})

    def holds(self, obj, name: str) -> bool:
        return getattr(obj, self.field) in self.of(name)


class StatefulModel:
    """Mixin for a model with a `states` table: `obj.in_state("published")`."""

    states: States

    def in_state(self, name: str) -> bool:
        return type(self).states.holds(self, name)
