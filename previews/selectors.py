"""Reads of previews: only the organisation's own members see one (auditors and the chair included only as
members: a preview is never a submission, so there is nothing to oversee), and what it is drawn beside."""

from __future__ import annotations

from django.db.models import QuerySet

from accounts.selectors import user_org_ids
from catalog.models import Benchmark
from leaderboard.board.selectors import publications_ranked_base
from leaderboard.models import Publication
from previews.models import Preview


def previews_visible_to(user) -> QuerySet[Preview]:
    if not getattr(user, "is_authenticated", False):
        return Preview.objects.none()
    return Preview.objects.filter(organisation_id__in=user_org_ids(user)).select_related(
        "system", "benchmark", "organisation"
    )


def published_beside(benchmark: Benchmark) -> list[Publication]:
    """The published results a preview of `benchmark` may be drawn beside (public: any organisation's)."""
    return list(
        publications_ranked_base()
        .filter(submission__benchmark=benchmark)
        .select_related("submission")
        .order_by("public_id")
    )


def drawable_siblings(preview: Preview) -> list[Preview]:
    """The organisation's other checked previews of the same benchmark (baselines and extra series)."""
    return list(
        Preview.objects.filter(
            Preview.states.q("drawable"),
            organisation_id=preview.organisation_id,
            benchmark_id=preview.benchmark_id,
        )
        .exclude(pk=preview.pk)
        .select_related("system")
    )
