"""The workflow policy's machinery: a table per object with a status (state -> action -> who may, and what it needs)
and the one door every state change goes through: `take` (who may, in which state, a compare-and-set and the audit
event the row names, in one call; `create` for a row born in a state). Pages and the API ask `allowed` and
`allowed_actions` for their buttons; `require` is the guard alone, for a write beside the object that is not a
change of its state (a comment, a part of an upload). Only the models (their defaults), the migrations and these
tables write a status (tests/test_status_comparisons.py).

This module knows no app: each table lives in the lowest app that knows every rule it names (the submission's in
review/, which knows assignments, conflicts and the quorum; the publication's in leaderboard/; the upload's and the
check run's in submissions/), so the layers stay one way and nothing is plugged in at start-up. Each app declares
its own tables in `POLICIES` of its workflow module; `registered_policies` gathers them from the installed apps
(no app lists another's). docs/portal.md says why; docs/lifecycle.md is generated from every table
(`manage.py lifecycle_doc --write`). The audit log is the one app this module writes to (`audit.services`, the
lowest app, imported at the write).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import import_module
from importlib.util import find_spec

from django.apps import apps
from django.db import transaction
from django.db.models import Q

from portal.errors import ApplicationError, ConflictError, NotAllowedError


@dataclass(frozen=True)
class Actor:
    """A kind of person a table names in its "who may" column; `may(user, obj)` is judged at the moment of the
    action (membership, role and conflict as they are now)."""

    name: str
    description: str  # plural, for messages and docs: "Only {description} can withdraw."
    may: Callable[[object, object], bool]
    system: bool = False  # the portal itself (a scheduled job), acting with no user

    def __call__(self, user, obj) -> bool:
        if self.system:
            return user is None
        if user is None or not getattr(user, "is_authenticated", False) or not user.is_active:
            return False
        return bool(self.may(user, obj))


@dataclass(frozen=True)
class Ready:
    """A precondition that holds: the extra fields a transition writes and what its audit event records."""

    fields: dict = field(default_factory=dict)
    audit_data: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Rule:
    """One row: `action` may be taken on an object in one of `sources` by one of `actors`; with a `target` it
    moves the object there (a transition), without one it writes beside it (a comment, a waiver request)."""

    action: str
    sources: tuple[str, ...]
    actors: tuple[Actor, ...]
    label: str  # the button
    target: str = ""
    done: str = ""  # past participle for messages: "Submission #3 withdrawn."
    reason_required: bool = False
    precondition: Callable[[object], Ready] | None = None
    needs: str = ""  # the precondition in words, for docs/lifecycle.md
    # Taken by a service as the consequence of another step (an acceptance, a decision, a schedule), never by a
    # bare button: no route and no allowed action of its own.
    automatic: bool = False
    event: str = ""  # the audit action, when it is not "<object>.<done>"
    # False for a row whose move is recorded by another event of the same step (an upload joining a version is in
    # the version's `version.uploaded`), or too frequent to be worth one (a worker starting a check run).
    audited: bool = True
    # A row that brings an object into being in `target` (a published revision recorded as it is published, an
    # objection raised): taken by `Policy.create`, never by `take`.
    creates: bool = False

    @property
    def who(self) -> str:
        return " or ".join(actor.description for actor in self.actors)

    def actor_may(self, user, obj) -> bool:
        return any(actor(user, obj) for actor in self.actors)


@dataclass(frozen=True)
class AllowedAction:
    """An action the user may take on the object in its current state; `blocked` when a precondition is missing
    (the button is shown disabled, with why)."""

    action: str
    label: str
    target: str
    reason_required: bool
    done: str
    blocked_code: str = ""
    blocked_detail: str = ""

    @property
    def enabled(self) -> bool:
        return not self.blocked_code


@dataclass(frozen=True)
class Policy:
    """The table of one kind of object: its states (the model's status choices) and its rules."""

    name: str  # "submission", "waiver": the object in messages and docs
    states: tuple[str, ...]
    rules: tuple[Rule, ...]
    state_of: Callable[[object], str] = lambda obj: obj.status
    description: str = ""
    field: str = "status"  # the model field holding the state (for `take` and querysets)
    event_name: str = ""  # the object in audit actions ("check" -> "check.finished"); else `name`, dotted
    # Fields every move of this table writes beside the state, from the reason given (the submission's
    # `status_changed_at`, `status_reason`).
    stamp: Callable[[str], dict] | None = None

    def __post_init__(self):
        actions = [rule.action for rule in self.rules]
        if len(set(actions)) != len(actions):
            raise ValueError(f"{self.name}: one row per action")
        for rule in self.rules:
            if rule.creates and (rule.sources or not rule.target):
                raise ValueError(f"{self.name}.{rule.action}: a row that creates has a target and no source")
            unknown = (set(rule.sources) | ({rule.target} if rule.target else set())) - set(self.states)
            if unknown:
                raise ValueError(f"{self.name}.{rule.action}: unknown states {sorted(unknown)}")

    def rule(self, action: str) -> Rule:
        for rule in self.rules:
            if rule.action == action:
                return rule
        raise ApplicationError(f"No {self.name} action {action!r}.", code="unknown-action")

    def _noun(self, obj) -> str:
        pk = getattr(obj, "pk", None)
        return f"{self.name.capitalize()} #{pk}" if pk is not None else f"This {self.name}"

    def refuse_state(self, rule: Rule, obj, current: str) -> ConflictError:
        if not rule.target:  # a write beside the object: say when it is open
            states = ", ".join(rule.sources) or "never"
            detail = (
                f"{self._noun(obj)} is {current}: {rule.label.lower()} is closed in that state "
                f"(open while it is {states})."
            )
        elif len(rule.sources) == 1:
            detail = f"{self._noun(obj)} is {current}, not {rule.sources[0]}."
        else:
            detail = (
                f"{self._noun(obj)} is {current}: it cannot be {rule.done or rule.action.replace('_', ' ')}."
            )
        return ConflictError(detail, code="state-conflict", extra={"status": current, "action": rule.action})

    def require(self, user, obj, action: str, *, reason: str = "", precondition: bool = True) -> Ready:
        """The row's guards in order: who (403 `permission_denied`), state (409 `state-conflict`), reason (400),
        precondition (its own 409 code). Raises the refusal; returns what the precondition found."""
        rule = self.rule(action)
        if not rule.actor_may(user, obj):
            what = rule.action.replace("_", " ") if rule.target else rule.label.lower()
            raise NotAllowedError(f"Only {rule.who} can {what}.", extra={"action": rule.action})
        current = self.state_of(obj)
        if current not in rule.sources:
            raise self.refuse_state(rule, obj, current)
        if rule.reason_required and not (reason or "").strip():
            raise ApplicationError(f"Say why the {self.name} is {rule.done or 'changed'}.", code="invalid")
        if precondition and rule.precondition is not None:
            return rule.precondition(obj)
        return Ready()

    def event_of(self, rule: Rule) -> str:
        """The audit action a row writes: its own `event`, else "<object>.<done>"."""
        noun = self.event_name or re.sub(r"[^a-z0-9]+", "_", self.name.lower())
        return rule.event or f"{noun}.{re.sub(r'[^a-z0-9]+', '_', (rule.done or rule.action).lower())}"

    def take(
        self,
        user,
        obj,
        action: str,
        *,
        reason: str = "",
        target: str = "",
        fields: dict | None = None,
        data: dict | None = None,
        event: str = "",
        queryset=None,
        quiet: bool = False,
        caused_by=None,
    ) -> bool:
        """The one door for a state change and every write the table governs, in the caller's transaction: the
        row's guards (`require`: who, state, reason, precondition), then a compare-and-set that moves the row
        from one of the row's source states to its target (or `target`, for a row with several outcomes) writing
        `fields` beside, then the audit event the table names. A row without a target writes `fields` the same
        way, only while the object is still in a source state.

        `queryset` narrows the compare-and-set (a worker's attempt number, an expiry's idle time). When another
        request moved the object first, the refusal is a 409 `state-conflict`; with `quiet` it is False (a
        worker's stale message, a sweep that lost the race). A step the portal takes as the consequence of a
        person's (`user` None: a release after a declared conflict) names that person in its event
        (`caused_by`). Updates `obj` in memory."""
        with transaction.atomic():
            return self._take(
                user, obj, action, reason, target, fields, data, event, queryset, quiet, caused_by
            )

    def _take(
        self, user, obj, action, reason, target, fields, data, event, queryset, quiet, caused_by
    ) -> bool:
        rule = self.rule(action)
        if rule.creates:
            raise ValueError(f"{self.name}.{action} creates: use Policy.create")
        reason = (reason or "").strip()
        try:
            ready = self.require(user, obj, action, reason=reason)
        except ConflictError as exc:
            if quiet and exc.code == "state-conflict":
                return False
            raise
        to = target or rule.target
        if to and to not in self.states:
            raise ValueError(f"{self.name}.{action}: unknown state {to!r}")
        seen = self.state_of(obj)
        written = {**(self.stamp(reason) if self.stamp and to else {}), **ready.fields, **(fields or {})}
        if to:
            written[self.field] = to
        if written:
            rows = queryset if queryset is not None else type(obj)._base_manager
            moved = rows.filter(pk=obj.pk, **{f"{self.field}__in": rule.sources}).update(**written)
            if not moved:
                if quiet:
                    return False
                current = type(obj)._base_manager.filter(pk=obj.pk).values_list(self.field, flat=True).first()
                raise ConflictError(
                    f"{self._noun(obj)} is {current}, not {seen}: it changed meanwhile. Reload and try again.",
                    code="state-conflict",
                    extra={"status": current, "action": rule.action},
                )
            for name, value in written.items():
                if not hasattr(value, "resolve_expression"):
                    setattr(obj, name, value)
        if rule.audited:
            self._record(
                user if caused_by is None else caused_by,
                obj,
                event or self.event_of(rule),
                {
                    **({"from": seen, "to": to} if to else {}),
                    **ready.audit_data,
                    **({"reason": reason} if reason else {}),
                    **(data or {}),
                },
            )
        return True

    def create(self, user, obj, action: str, *, data: dict | None = None, event: str = ""):
        """Bring `obj` (an unsaved row the caller built and validated) into being in the row's target state, as
        one of the row's actors, with the audit event the table names; the saved row."""
        rule = self.rule(action)
        if not rule.creates:
            raise ValueError(f"{self.name}.{action} does not create")
        if not rule.actor_may(user, obj):
            raise NotAllowedError(
                f"Only {rule.who} can {rule.action.replace('_', ' ')}.", extra={"action": action}
            )
        setattr(obj, self.field, rule.target)
        with transaction.atomic():
            obj.save()
            if rule.audited:
                self._record(user, obj, event or self.event_of(rule), {"to": rule.target, **(data or {})})
        return obj

    @staticmethod
    def _record(user, obj, action: str, data: dict) -> None:
        from audit.services import audit_event_record  # the lowest app: imported when a write records

        audit_event_record(actor=user, action=action, obj=obj, data=data)

    def sources_q(self, action: str, *, via: str = ""):
        """The filter "in a state where `action` may be taken" (for a queryset of candidates)."""

        path = f"{via}__{self.field}" if via else self.field
        return Q(**{f"{path}__in": self.rule(action).sources})

    def state_allows(self, obj, action: str) -> bool:
        """Is `obj` in a state where `action` may happen at all (whoever asks)? For the steps a service takes as
        the consequence of another (the first acceptance starts the review)."""
        return self.state_of(obj) in self.rule(action).sources

    def allowed(self, user, obj, action: str) -> bool:
        """May `user` take `action` on `obj` now (who and state; a missing precondition shows as a disabled
        button through `allowed_actions`)."""
        rule = self.rule(action)
        return self.state_of(obj) in rule.sources and rule.actor_may(user, obj)

    def allowed_actions(self, user, obj, *, automatic: bool = False) -> list[AllowedAction]:
        """The rows this user may take on this object now, in table order (buttons: not the automatic ones)."""
        out = []
        current = self.state_of(obj)
        for rule in self.rules:
            if (
                (rule.automatic and not automatic)
                or current not in rule.sources
                or not rule.actor_may(user, obj)
            ):
                continue
            blocked_code = blocked_detail = ""
            if rule.precondition is not None:
                try:
                    rule.precondition(obj)
                except ApplicationError as exc:
                    blocked_code, blocked_detail = exc.code, exc.detail
            out.append(
                AllowedAction(
                    action=rule.action,
                    label=rule.label,
                    target=rule.target,
                    reason_required=rule.reason_required,
                    done=rule.done,
                    blocked_code=blocked_code,
                    blocked_detail=blocked_detail,
                )
            )
        return out

    def table_markdown(self) -> str:
        """The table as docs/lifecycle.md shows it."""
        lines = [
            f"### {self.name}",
            "",
            *([self.description, ""] if self.description else []),
            "States: " + ", ".join(f"`{state}`" for state in self.states) + ".",
            "",
            "| action | from | to | who may | needs | audit event |",
            "|---|---|---|---|---|---|",
        ]
        for rule in self.rules:
            sources = ", ".join(f"`{status}`" for status in rule.sources) or "(new)"
            target = f"`{rule.target}`" if rule.target else "(stays)"
            event = f"`{self.event_of(rule)}`" if rule.audited else "(in the step's own event)"
            needs = rule.needs or ("a reason" if rule.reason_required else "—")
            auto = " (automatic)" if rule.automatic else ""
            lines.append(f"| `{rule.action}`{auto} | {sources} | {target} | {rule.who} | {needs} | {event} |")
        return "\n".join(lines)


def states_where(policy: Policy, action: str) -> tuple[str, ...]:
    """The states in which `action` may be taken (for querysets: `status__in=states_where(...)`)."""
    return policy.rule(action).sources


# --- Every table of the installed apps -----------------------------------------------------------------------

# The modules of an app that declare its workflow tables, each in a tuple `POLICIES` of its own tables only
# (review/ keeps the submission's table in `lifecycle`, the others in `workflow`).
POLICY_MODULES = ("workflow", "lifecycle")

DOC_START = (
    "<!-- lifecycle-table:start (generated from the workflow tables: manage.py lifecycle_doc --write) -->"
)
DOC_END = "<!-- lifecycle-table:end -->"


def registered_policies() -> tuple[Policy, ...]:
    """Every app's tables, in INSTALLED_APPS order (the upload and check run, then the submission and the review's
    objects, then the publication's, then the preview's), each table once."""

    found: list[Policy] = []
    for config in apps.get_app_configs():
        for module_name in POLICY_MODULES:
            name = f"{config.name}.{module_name}"
            if find_spec(name) is None:
                continue
            for policy in getattr(import_module(name), "POLICIES", ()):
                if policy not in found:
                    found.append(policy)
    names = [policy.name for policy in found]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(f"two workflow tables named {duplicates}: a table's name is the object it governs")
    return tuple(found)


def tables_markdown() -> str:
    """Every table, as docs/lifecycle.md shows them (between DOC_START and DOC_END)."""
    return "\n\n".join(policy.table_markdown() for policy in registered_policies())
