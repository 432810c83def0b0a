"""One row per system: a ranking shows the newest published result per (organisation, system, benchmark,
division); older results (and their revisions) stay in that system's history, one click away."""

from __future__ import annotations

from collections.abc import Iterable

from leaderboard.models import Publication


def system_identity(publication: Publication) -> tuple:
    """What makes two published results "the same system" on a ranking."""
    submission = publication.submission
    return (submission.organisation_id, submission.system_id, submission.benchmark_id, submission.division)


def _newness(publication: Publication) -> tuple:
    return (publication.published_at is not None, publication.published_at, publication.pk)


def newest_per_system(publications: Iterable[Publication]) -> list[Publication]:
    """The newest of each system's results, in the order given; each kept one carries `older_results`, the
    number of its system's other results among those given (0 when it is the only one)."""
    rows = list(publications)
    newest: dict[tuple, Publication] = {}
    counts: dict[tuple, int] = {}
    for publication in rows:
        key = system_identity(publication)
        counts[key] = counts.get(key, 0) + 1
        kept = newest.get(key)
        if kept is None or _newness(publication) > _newness(kept):
            newest[key] = publication
    out = []
    for publication in rows:
        key = system_identity(publication)
        if newest[key] is publication:
            publication.older_results = counts[key] - 1
            out.append(publication)
    return out
