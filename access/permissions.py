"""What a user may do: can(user, action, obj), one table of rules over the role lookups of accounts/.

Seeing comes first: "view" is access.visibility's table, and an action on an object the user cannot see
is refused by its 404 before any rule here is asked. The lifecycle actions (submit, withdraw, ...) are
review.lifecycle's table.
"""

from __future__ import annotations

from collections.abc import Callable

from access.visibility import visible_to
from accounts.actors import AUDITOR, CHAIR, OVERSEER
from review.selectors import user_is_reviewer
from submissions.models import System
from submissions.selectors import systems_submittable_by

# (action, type of obj or None) -> rule(user, obj); asked only for a signed-in, active user.
RULES: dict[tuple[str, type | None], Callable[[object, object], bool]] = {
    ("chair", None): CHAIR,
    ("audit", None): AUDITOR,
    # The chair's own doors: new organisations, global roles, assignments from the audit log.
    ("create_organisation", None): CHAIR,
    ("grant_global_roles", None): CHAIR,
    # Auditors and the chair see every non-draft submission of every organisation, and the audit log.
    ("oversee", None): OVERSEER,
    ("read_audit_log", None): OVERSEER,
    ("review", None): lambda user, obj: user_is_reviewer(user),
    ("describe", System): lambda user, system: systems_submittable_by(user).filter(pk=system.pk).exists(),
}


def can(user, action: str, obj=None) -> bool:
    """Whether the user may do `action` (on `obj`). "view" works for every model of access.visibility;
    an action the table does not know is an error, never a silent yes or no."""
    if action == "view":
        return visible_to(user, type(obj)).filter(pk=obj.pk).exists()
    rule = RULES.get((action, None if obj is None else type(obj)))
    if rule is None:
        raise LookupError(f"access.can has no rule for {action!r} on {type(obj).__name__}.")
    if user is None or not user.is_authenticated or not user.is_active:
        return False
    return rule(user, obj)
