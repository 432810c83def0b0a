"""A system's public name may not pass for another organisation's published one (issue 25, "an organisation can
register a system named like another organisation's unreleased one").

Registration never compares names across organisations: a refusal there would tell anyone who probes that a
name exists before its owner publishes it. The comparison happens when a result is scheduled for publication,
and only against names already public (the published records' snapshots), so it reveals nothing that is not on
the board already. Two names clash when their skeletons are equal: case folded, separators dropped (`_`, `.`,
`-`), and the characters people read alike taken as one (0/o, 1/l/i, 5/s)."""

from __future__ import annotations

from leaderboard.models import Publication

_ALIKE = str.maketrans({"0": "o", "1": "l", "i": "l", "5": "s", "_": None, ".": None, "-": None})


def name_skeleton(name: str) -> str:
    return (name or "").casefold().translate(_ALIKE)


def published_name_like(name: str, *, organisation_id: int) -> str | None:
    """The published system name of another organisation that `name` would pass for, if any."""
    wanted = name_skeleton(name)
    rows = (
        Publication.objects.filter(Publication.states.q("published"), retracted_at__isnull=True)
        .exclude(submission__organisation_id=organisation_id)
        .values_list("snapshot__system__name", flat=True)
    )
    for published in rows.iterator():
        if isinstance(published, str) and name_skeleton(published) == wanted:
            return published
    return None
