"""What templates ask about an object's state, so that none compares a status itself (tests/test_status_comparisons.py):

- `{% allowed waiver "grant" as may_decide %}`: may the request's user take this action on this object now? The
  workflow policy answers (`Policy.allowed`: who and state; a missing precondition is the service's refusal). Every
  form or button that changes a state is shown through it.
- `{% if run|in_state:"running" %}`: is the object in this state or named set of states (`portal.states`)? For
  wording and styles only. A verdict's words (`submissions.verdicts`, a dict whose `status` is the verdict, kept in
  snapshots and the API) answer the same question about their own `status`.

The policy of an object is the installed table whose states are the choices of the model's state field
(`registered_policies`, so this module imports no app's table).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache

from django import template
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import FieldDoesNotExist

from portal.policy import Policy, registered_policies

register = template.Library()


@cache
def _policy(model: type, action: str) -> Policy:
    for policy in registered_policies():
        try:
            field = model._meta.get_field(policy.field)
        except FieldDoesNotExist:
            continue
        choices = {str(value) for value, _ in (field.choices or ()) if value}
        if choices == set(policy.states) and any(rule.action == action for rule in policy.rules):
            return policy
    raise LookupError(f"no workflow table of {model.__name__} has an action {action!r}")


def policy_of(obj, action: str) -> Policy:
    """The workflow table that governs `action` on `obj`."""
    return _policy(type(obj), action)


@register.simple_tag(takes_context=True)
def allowed(context, obj, action: str) -> bool:
    """May the request's user take `action` on `obj` now (the object's workflow table; False for no object)."""
    if obj is None or obj == "":
        return False
    request = context.get("request")
    user = getattr(request, "user", None) or context.get("user") or AnonymousUser()  # never the portal itself
    return policy_of(obj, action).allowed(user, obj, action)


@register.filter
def in_state(obj, name: str) -> bool:
    """Is `obj` in the state (or named set of states) `name`? False for no object."""
    if obj is None or obj == "":
        return False
    if isinstance(obj, Mapping):  # a verdict's words: its `status` is one of the verdict's own names
        return obj.get("status") == name
    return obj.in_state(name)
