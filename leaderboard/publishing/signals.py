"""What the publication workflow announces to the public board (leaderboard.board), which it may not import.

`public_changed`: what the public sees has changed (a publication, a revision, a challenge and its resolution, an
annotation, a retraction, a spot-check's re-measurement of a published result), sent once the writing transaction
commits; a rolled-back change sends nothing. The board listens (LeaderboardConfig.ready): its cache starts a new
generation and the publish worker is asked for the goodput tables of the new snapshot. The signal carries the fact
only, so the workflow never names a cache."""

from __future__ import annotations

from django.db import transaction
from django.dispatch import Signal

public_changed = Signal()  # no kwargs


def public_changed_on_commit() -> None:
    """Called inside the transaction of every service that changes what the public sees: `public_changed` is sent
    once it commits."""
    transaction.on_commit(lambda: public_changed.send(sender=None))
