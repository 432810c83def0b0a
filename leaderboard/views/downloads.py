"""A published result's downloads: its points as JSON or CSV and its bundle's files. Public, like the result page."""

from __future__ import annotations

import io
import json

from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_GET

from leaderboard.board import selectors
from leaderboard.board.exports import point_citation, result_url, standing
from leaderboard.models import Publication
from leaderboard.views.public import POINT_COLUMNS
from portal import csv_safe
from portal.downloads import stored_download
from submissions.uploads import version_file_chunks

# What each point row of the CSV cites of its own evidence (leaderboard.board.exports.point_citation).
CITATION_COLUMNS = (
    "version",
    "archive",
    "archive_sha256",
    "archive_url",
    "raw_log_path",
    "raw_log_sha256",
    "check",
)


def _data_rows(publication: Publication) -> list[dict]:
    return sorted((publication.curve or {}).get("points") or [], key=lambda p: p.get("concurrency") or 0)


@require_GET
def result_data(request, public_id: str, fmt: str):
    """The result's points as JSON (with where they come from) or CSV, one row per measured point; ?revision=N
    serves that revision of the result."""
    revision = selectors.parse_revision(request.GET.get("revision"))
    publication = selectors.publication_at_revision(selectors.publication_public(public_id), revision)
    rows = _data_rows(publication)
    name = f"{publication.public_id}{f'-r{revision}' if revision else ''}-points.{fmt}"
    if fmt == "json":
        body = {
            "public_id": publication.public_id,
            "url": request.build_absolute_uri(result_url(publication.public_id)),
            "organisation": publication.record.organisation_name,
            "system": publication.record.system_name,
            "benchmark": publication.submission.benchmark.model_id,
            "published_at": publication.published_at.isoformat() if publication.published_at else None,
            "retracted": publication.is_retracted,
            "retraction_reason": publication.retraction_reason or None,
            "bundle_sha256": publication.record.bundle_sha256,
            **standing(publication),
            "verification": publication.record.verification.as_dict(),
            "check": publication.record.check,
            "headline": publication.headline,
            "pareto": (publication.curve or {}).get("pareto") or {},
            "points": [{**row, "evidence": point_citation(publication, row)} for row in rows],
        }
        response = HttpResponse(json.dumps(body, indent=2), content_type="application/json")
    else:
        out = io.StringIO()
        writer = csv_safe.writer(out)
        writer.writerow(
            [
                "public_id",
                "system",
                "standing",
                "ruleset",
                "bundle_sha256",
                *(key for key, _ in POINT_COLUMNS),
                "point",
                "revision",
                "stack",
                *CITATION_COLUMNS,
            ]
        )
        what = standing(publication)
        for row in rows:
            citation = point_citation(publication, row)
            writer.writerow(
                [
                    publication.public_id,
                    publication.record.system_name,
                    what["standing"],
                    citation["ruleset"],
                    citation["bundle_sha256"],
                    *("" if row.get(key) is None else row.get(key) for key, _ in POINT_COLUMNS),
                    row.get("point", ""),
                    row.get("revision") or 1,
                    row.get("stack") or "",
                    *("" if citation[key] is None else citation[key] for key in CITATION_COLUMNS),
                ]
            )
        response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@require_GET
def result_file(request, public_id: str, position: int):
    """One file of the published bundle, exactly as uploaded (?revision=N: of that revision's bundle)."""
    revision = selectors.parse_revision(request.GET.get("revision"))
    publication = selectors.publication_at_revision(selectors.publication_public(public_id), revision)
    version_file = get_object_or_404(publication.version.files, position=position)
    return stored_download(version_file_chunks(version_file), version_file)
