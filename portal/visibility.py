"""`Model.objects.visible_to(user)`: the rows of a model a user may see, asked of the model itself.

DESIGN.md's visibility table is written once, in `access.visibility` (one rule per model). The rules need
every app (a submission's visibility depends on review's assignments and conflicts, which sit above it), so
they cannot live beside each model; instead `access` registers them here when the apps are ready, and every
model's manager asks this registry (netbox's `restrict()` pattern). A selector in any app can then write
`Publication.objects.visible_to(None)` (what the public sees) without importing `access`, and there is no second
copy of a rule to drift. A model without a rule raises LookupError: never all rows.

- `Model.objects.visible_to(user)` is the rule's queryset itself;
- `queryset.visible_to(user)` narrows an already filtered queryset to the visible rows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from django.db import models

Rule = Callable[[Any], models.QuerySet]

_RULES: dict[type[models.Model], Rule] = {}


def register(rules: Mapping[type[models.Model], Rule]) -> None:
    """Install the visibility rules (access.apps does, once the apps are loaded)."""
    _RULES.update(rules)


def rule_for(model: type[models.Model]) -> Rule:
    try:
        return _RULES[model]
    except KeyError:
        raise LookupError(
            f"No visibility rule for {model._meta.label}: add one to access.visibility.VISIBLE_TO."
        ) from None


class VisibleQuerySet(models.QuerySet):
    def visible_to(self, user) -> models.QuerySet:
        """These rows, narrowed to the ones the user may see."""
        return self.filter(pk__in=rule_for(self.model)(user).values("pk"))


class _VisibleManagerBase(models.Manager):
    def visible_to(self, user) -> models.QuerySet:
        """The rows the user may see (access.visibility's rule for this model)."""
        return rule_for(self.model)(user)


def visible_manager(queryset: type[VisibleQuerySet]) -> models.Manager:
    """A manager with `visible_to` over a model's own queryset class (which derives from VisibleQuerySet)."""
    return _VisibleManagerBase.from_queryset(queryset)()


VisibleManager = _VisibleManagerBase.from_queryset(VisibleQuerySet)
