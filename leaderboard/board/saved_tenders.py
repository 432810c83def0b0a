"""Writes of a buyer's saved tenders (docs/tender-desk.md): save, edit, share, unshare, delete, each through the
tender's workflow table (leaderboard.workflow.TENDER: the policy's `take` and `create`, with its audit event). On the
board's side: a tender's definition is read by the board's one reader of a tender's inputs."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from accounts.selectors import user_org_ids
from leaderboard.board.tender_inputs import tender_from_query, tender_name
from leaderboard.models import SavedTender
from leaderboard.workflow import TENDER
from portal.errors import NotAllowedError


@transaction.atomic
def tender_save(*, actor, query, name: str, organisation_id: int | None = None) -> SavedTender:
    """Save a tender's definition (a query string, read as the scoring page reads it) under a name, private to the
    author's organisation (the one given, else the author's first). Raises RequirementsError (a 400 naming each
    bad field) and NotAllowedError for a user of no organisation or of another one."""
    organisations = sorted(user_org_ids(actor)) if actor is not None else []
    if not organisations:
        raise NotAllowedError("Only members of an organisation can save a tender.")
    if organisation_id is None:
        organisation_id = organisations[0]
    elif organisation_id not in organisations:
        raise NotAllowedError("Only members of an organisation can save a tender for it.")
    definition = tender_from_query(query)
    tender = SavedTender(
        organisation_id=organisation_id,
        created_by=actor,
        name=tender_name(name),
        definition=definition.parameters,
    )
    return TENDER.create(
        actor,
        tender,
        "save",
        data={"uuid": str(tender.uuid), "name": tender.name, "definition": tender.definition},
    )


@transaction.atomic
def tender_edit(*, actor, tender: SavedTender, query, name: str | None = None) -> SavedTender:
    """Replace a saved tender's definition (and its name, when one is given); its address stays."""
    definition = tender_from_query(query)
    new_name = tender.name if name is None else tender_name(name)
    TENDER.take(
        actor,
        tender,
        "edit",
        fields={"name": new_name, "definition": definition.parameters, "updated_at": timezone.now()},
        data={"uuid": str(tender.uuid), "name": new_name, "definition": definition.parameters},
    )
    tender.refresh_from_db()
    return tender


@transaction.atomic
def tender_transition(*, actor, tender: SavedTender, action: str) -> SavedTender:
    """Share a saved tender (everyone may read it at its address) or make it private again."""
    TENDER.take(
        actor,
        tender,
        action,
        fields={"updated_at": timezone.now()},
        data={"uuid": str(tender.uuid), "name": tender.name},
    )
    tender.refresh_from_db()
    return tender


@transaction.atomic
def tender_delete(*, actor, tender: SavedTender) -> None:
    """Delete a saved tender: its address answers 404 from then on (the audit log keeps what it was)."""
    TENDER.take(  # the guard and the event; then the row goes
        actor,
        tender,
        "delete",
        data={"uuid": str(tender.uuid), "name": tender.name, "definition": tender.definition},
    )
    SavedTender.objects.filter(pk=tender.pk).delete()
