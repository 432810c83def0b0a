"""The public tables (benchmarks, results, points, curves) and the SLO and procurement answers, read from the
published snapshots (Publication.curve, .headline and .snapshot, the frozen record: one row per result), as rows
for JSON and CSV. Nothing here reads the live system or organisation; every row carries the verification level.

Callers pass the publications the public may see (access.visibility.publications_visible_to(None)); this
module narrows them further to published results of published submissions, so nothing else can reach a row.
Every row names the result (public id, its page) and the SHA-256 of the bundle its numbers come from, and says what
it is (`standing`): the rule set, official or preview, the verification level, the revision and its evidence pack;
every point row cites its own evidence (the revision, version and archive holding its raw log).
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import numpy as np
from django.db.models import Count, Max, Q, QuerySet

from catalog.models import Benchmark, ruleset_is_preview
from checker.judge.verification import FULLY_RECOMPUTED
from leaderboard.board.cache import public_cached, settle_large
from leaderboard.board.procurement import Costing, ModelRequirement, procurement_report
from leaderboard.board.slo import (
    CITED,
    SloIndex,
    SloTargets,
    interactivity_metric_for,
    node_count,
    number,
)
from leaderboard.board.systems import newest_per_system
from leaderboard.board.tender import joules_per_token, point_power, tokens_per_s_per_kw
from leaderboard.models import Annotation, Publication
from portal import csv_safe
from submissions.models import Submission
from submissions.verdicts import verdict

HEADLINE_FIELDS = (
    "points",
    "max_system_tps",
    "max_tps_per_user",
    "min_ttft_p90_ms",
    "max_system_tps_per_kw",
    "max_concurrency",
)
POINT_FIELDS = (
    "point",
    "basis",
    "verification",
    "concurrency",
    "system_tps",
    "tps_per_user",
    "e2e_interactivity",
    "ttft_p90_ms",
    "system_tps_per_kw",
    "region",
)


def result_url(public_id: str) -> str:
    return f"/results/{public_id}/"


def evidence_pack_url(public_id: str, revision: int) -> str:
    """Where revision `revision` of a result's evidence pack is downloaded (docs/published-record.md)."""
    return f"/results/{public_id}/revisions/{revision}/evidence-pack/"


def standing(publication: Publication) -> dict[str, Any]:
    """What a published result is, said by every export and API answer carrying it: its rule set, `preview` (a
    preview rule set, or none known: never official) and `standing` ("official" or "preview, not official"), its
    verification level, the revision shown and that revision's evidence pack."""
    record = publication.record
    preview = not record.ruleset or ruleset_is_preview(record.ruleset)
    revision = record.revision
    return {
        "ruleset": record.ruleset,
        "preview": preview,
        "standing": "preview, not official" if preview else "official",
        "verification": record.level,
        "revision": revision,
        "evidence_pack_url": evidence_pack_url(publication.public_id, revision),
    }


def point_citation(publication: Publication, point: dict) -> dict[str, Any]:
    """Where one published point's raw log is: the revision and version that measured it, the archive holding it
    (file name, SHA-256, its download), the path inside the archive and the raw log's SHA-256; the bundle SHA-256
    is that version's. Points of a record without per-point evidence cite the result's bundle."""
    evidence = publication.record.point_evidence.get(point.get("point")) or {}
    file = evidence.get("file") or {}
    revision = evidence.get("revision") or point.get("revision") or 1
    source = next((s for s in publication.record.sources if s.get("revision") == revision), {})
    return {
        "measured_in_revision": revision,
        "version": evidence.get("version"),
        "bundle_sha256": source.get("bundle_sha256") or publication.record.bundle_sha256,
        "archive": file.get("filename"),
        "archive_sha256": file.get("sha256"),
        "archive_url": (
            f"{result_url(publication.public_id)}files/{file['position']}/?revision={revision}"
            if file
            else None
        ),
        "raw_log_path": evidence.get("path") or None,
        "raw_log_sha256": evidence.get("raw_log_sha256"),
        "ruleset": source.get("ruleset") or publication.record.ruleset,
        "check": (source.get("check") or {}).get("label") or publication.record.check_label,
        "waivers": [w["rule"] for w in evidence.get("waivers") or []],
    }


def published_only(publications: QuerySet[Publication]) -> QuerySet[Publication]:
    """Published publications of published submissions, with what a row shows joined in (one query)."""
    return (
        publications.filter(
            Publication.states.q("published"), Submission.states.q("published", via="submission")
        )
        .select_related("submission__benchmark")
        .order_by("-published_at", "-id")
    )


def result_row(publication: Publication) -> dict[str, Any]:
    """The summary of one published result (its headline figures, not its points)."""
    record = publication.record
    headline = publication.headline or {}
    return {
        "public_id": publication.public_id,
        "result_url": result_url(publication.public_id),
        "benchmark": publication.submission.benchmark.model_id,
        "system": record.system_name,
        "organisation": record.organisation_name,
        "division": record.division,
        "availability": record.availability,
        "accelerators": record.accelerator_count,
        "verification": record.level,
        "recomputed_points": record.verification.recomputed_points,
        "ranked_by_default": record.verification.ranks_by_default and publication.retracted_at is None,
        "check": record.check_label,
        **standing(publication),
        "published_at": publication.published_at.isoformat() if publication.published_at else None,
        "retracted": publication.retracted_at is not None,
        "retracted_at": publication.retracted_at.isoformat() if publication.retracted_at else None,
        "retraction_reason": publication.retraction_reason or None,
        "bundle_sha256": record.bundle_sha256,
        **{name: headline.get(name) for name in HEADLINE_FIELDS},
    }


def _point_row(publication: Publication, point: dict, measured: dict | None = None) -> dict[str, Any]:
    record = publication.record
    power_kw, power_source = point_power(point, measured)
    system_tps = number(point.get("system_tps"))
    citation = point_citation(publication, point)
    row = {
        "public_id": publication.public_id,
        "result_url": result_url(publication.public_id),
        "bundle_sha256": citation.pop("bundle_sha256"),
        "benchmark": publication.submission.benchmark.model_id,
        "system": record.system_name,
        "organisation": record.organisation_name,
        "retracted": publication.retracted_at is not None,
    }
    for name in POINT_FIELDS:
        value = point.get(name)
        row[name] = value if name in ("point", "basis", "verification", "region") else number(value)
    row["revision"] = point.get("revision") or 1
    row["stack"] = point.get("stack") or ""
    # the tender desk's energy figures (leaderboard.board.tender): measured power where a trace exists, else provisioned
    row["accelerators"] = record.accelerator_count
    row["nodes"] = node_count(record.description)
    row["power_source"] = power_source
    row["system_power_kw"] = power_kw
    row["joules_per_token"] = joules_per_token(power_kw, system_tps)
    row["tokens_per_s_per_kw"] = tokens_per_s_per_kw(power_kw, system_tps)
    return {**row, **citation, "standing": standing(publication)["standing"]}


def point_rows(publication: Publication, measured: dict[int, dict] | None = None) -> list[dict[str, Any]]:
    """The published points of a result; `measured` (per concurrency, selectors.measured_power_of_results) gives
    the power of the points with a trace."""
    measured = measured or {}
    return [
        _point_row(publication, point, measured.get(point.get("concurrency")))
        for point in (publication.curve or {}).get("points") or []
    ]


def curve_rows(publication: Publication) -> list[dict[str, Any]]:
    """The published step functions as a table: one row per vertex, per interactivity axis. Every vertex has
    the x of one measured point and the y of one measured point (checker.recompute.curve.step_vertices)."""
    rows = []
    for axis, front in sorted(((publication.curve or {}).get("pareto") or {}).items()):
        for index, (x, y) in enumerate(front.get("steps") or []):
            rows.append(
                {
                    "public_id": publication.public_id,
                    "result_url": result_url(publication.public_id),
                    "bundle_sha256": publication.record.bundle_sha256,
                    "benchmark": publication.submission.benchmark.model_id,
                    "system": publication.record.system_name,
                    "retracted": publication.retracted_at is not None,
                    "x_metric": axis,
                    "y_metric": front.get("y", "system_tps"),
                    "vertex": index,
                    "x": number(x),
                    "y": number(y),
                }
            )
    return rows


def revision_rows(publication: Publication, revisions: list) -> list[dict[str, Any]]:
    """The result's published revisions: number, date, stack, declared changes, bundle hash, what each replaced."""
    return [
        {
            "revision": revision.number,
            "url": f"/api/v1/public/results/{publication.public_id}/?revision={revision.number}",
            "published_at": revision.published_at.isoformat() if revision.published_at else None,
            "stack": revision.stack,
            "changes": revision.changes or {},
            "bundle_sha256": revision.record.bundle_sha256 or revision.version.sha256,
            "verification": revision.record.level,
            "points": len((revision.curve or {}).get("points") or []),
            "max_system_tps": (revision.headline or {}).get("max_system_tps"),
            "replaced": revision.replaced or [],
        }
        for revision in revisions
    ]


def result_detail(
    publication: Publication, annotations: list[Annotation], revisions: list | None = None
) -> dict[str, Any]:
    curve = publication.curve or {}
    record = publication.record
    return {
        **result_row(publication),
        "revision": curve.get("revision") or 1,
        "revisions": revision_rows(publication, revisions or []),
        "system_description": record.description,
        "stack": record.stack,
        "verification_detail": record.verification.as_dict(),
        "check_detail": record.check,
        "waivers": record.waivers,
        "checker_version": record.checker_version,
        "official": curve.get("official"),
        "official_verdict": record.check.get("official")
        or verdict(None, official=curve.get("official"))["official"],
        "ruleset": curve.get("ruleset"),
        "annotations": [{"text": a.text, "created_at": a.created_at.isoformat()} for a in annotations],
        "points": point_rows(publication),
        "pareto": curve.get("pareto") or {},
    }


def benchmark_rows(benchmarks: QuerySet[Benchmark], publications: QuerySet[Publication]) -> list[dict]:
    """Benchmarks with their counts of published results (retracted ones counted apart) in one query."""
    visible = published_only(publications).values("pk")
    in_view = Q(submissions__publication__in=visible)
    annotated = benchmarks.annotate(
        published_results=Count("submissions__publication", filter=in_view),
        ranked_results=Count(
            "submissions__publication",
            filter=in_view & Q(submissions__publication__retracted_at__isnull=True),
        ),
        latest_published_at=Max("submissions__publication__published_at", filter=in_view),
    ).order_by("model_id")
    return [
        {
            "model_id": b.model_id,
            "display_name": b.display_name,
            "workload": b.workload,
            "interactivity_metric": interactivity_metric_for(b.workload),
            "published_results": b.published_results,
            "ranked_results": b.ranked_results,
            "latest_published_at": b.latest_published_at.isoformat() if b.latest_published_at else None,
        }
        for b in annotated
    ]


# --- The SLO finder and the procurement report over the snapshots -----------------------------------------


def snapshot_results(publications: QuerySet[Publication], model_id: str) -> list[dict]:
    """The ranked (non-retracted) results of one benchmark as leaderboard.board.slo reads them: the newest per system
    (leaderboard.board.systems), so the SLO finder and the procurement report count systems as the board does."""
    rows = newest_per_system(
        published_only(publications).filter(
            submission__benchmark__model_id=model_id, retracted_at__isnull=True
        )
    )
    return [
        {
            "public_id": publication.public_id,
            "system": publication.record.system_name,
            "organisation": publication.record.organisation_name,
            "accelerators": publication.record.accelerator_count,
            "accelerator_label": publication.record.accelerator_label,
            "nodes": node_count(publication.record.description),
            "bundle_sha256": publication.record.bundle_sha256,
            **standing(publication),
            "retracted": False,
            "points": [
                {**point, "evidence": point_citation(publication, point)}
                for point in (publication.curve or {}).get("points") or []
            ],
        }
        for publication in rows
    ]


def snapshot_results_cached(publications: QuerySet[Publication], model_id: str) -> list[dict]:
    """snapshot_results under the public cache generation (publication and retraction start a new one)."""
    return public_cached(f"snapshot:public:{model_id}", lambda: snapshot_results(publications, model_id))


# model_id -> (the snapshot list it was built from, its index), in this process.
_slo_indexes: dict[str, tuple[list[dict], SloIndex]] = {}


def slo_index(publications: QuerySet[Publication], model_id: str) -> SloIndex:
    """The SLO index of a benchmark's public snapshot, built once per snapshot object: the snapshot is kept in
    this process per generation (public_cached), so a publication or retraction (a new generation, a new
    snapshot) builds a new index, and every SLO query in between is a vectorised lookup."""
    results = snapshot_results_cached(publications, model_id)
    entry = _slo_indexes.get(model_id)
    if entry is None or entry[0] is not results:
        entry = (results, SloIndex(results))
        _slo_indexes[model_id] = entry
        settle_large(results)
    return entry[1]


def slo_query(
    publications: QuerySet[Publication],
    benchmark: Benchmark,
    targets: SloTargets,
    *,
    decorate: Callable[[dict], None] | None = None,
) -> SloRows:
    """Results meeting the targets: the fully recomputed ones ranked (1, 2, ...), then the partly recomputed or
    claimed ones, listed with their level and no rank (the board's rule, checker.judge.verification). `decorate`
    adds to a row when it is built (the buyer's prices, the point's energy)."""
    index = slo_index(publications, benchmark.model_id)
    positions = np.asarray(index.ranking(targets), dtype=np.int64)
    fully = index.results_where(positions, "verification", FULLY_RECOMPUTED)
    ranked = positions[fully].tolist()
    return SloRows(index, ranked + positions[~fully].tolist(), len(ranked), decorate)


class SloRows:
    """slo_query's rows as a read-only sequence, each row built (and decorated) when it is read: of 10,000
    qualifying results the page shows 25 and the API a page of them (docs/performance.md, issue 37)."""

    def __init__(
        self,
        index: SloIndex,
        positions: list[int],
        ranked: int,
        decorate: Callable[[dict], None] | None = None,
    ) -> None:
        self.index, self.positions, self.ranked, self.decorate = index, positions, ranked, decorate

    def __len__(self) -> int:
        return len(self.positions)

    def __bool__(self) -> bool:
        return bool(self.positions)

    def _built(self, which: slice) -> list[dict]:
        rows = []
        for at in range(*which.indices(len(self.positions))):
            row = self.index.row(self.positions[at])
            rank = at + 1 if at < self.ranked else None
            built = {
                **row,
                "rank": rank,
                "ranked": rank is not None,
                "result_url": result_url(row["public_id"]),
            }
            if self.decorate is not None:
                self.decorate(built)
            rows.append(built)
        return rows

    def __getitem__(self, item):
        if isinstance(item, slice):
            return self._built(item)
        position = range(len(self))[item]  # IndexError past the end, negative positions from the end
        return self._built(slice(position, position + 1))[0]

    def __iter__(self):
        return iter(self._built(slice(None)))


def procurement_query(
    publications: QuerySet[Publication],
    requirements: list[ModelRequirement],
    *,
    measured_by_model: dict[str, dict[str, dict[int, dict]]] | None = None,
    costing: Costing | None = None,
) -> list[dict]:
    """The procurement report; `measured_by_model` (per model, selectors.measured_power_of_benchmark) gives the
    evidence's measured power where a trace exists, `costing` the buyer's prices and PUE."""
    models = sorted({r.model for r in requirements})
    workloads = dict(Benchmark.objects.filter(model_id__in=models).values_list("model_id", "workload"))
    results = {model: snapshot_results_cached(publications, model) for model in workloads}
    return procurement_report(
        requirements, results, workloads, measured_by_model=measured_by_model, costing=costing
    )


def procurement_rows(report: list[dict]) -> list[dict]:
    """The report as one table (a row per model and system; a model nobody meets gets one empty row); each phase's
    requirements and evidence flattened into prefixed columns (required_expansion_ttft_p90_ms_max,
    expansion_point, expansion_meets, ...)."""
    rows = []
    for section in report:
        requirements = {f"required_{k}": v for k, v in section["requirements"].items()}
        for phase, wanted in section["phases"].items():
            for key, value in (wanted or {}).items():
                requirements[f"required_{phase}_{key}"] = value
        for system in section["systems"] or [{"model": section["model"]}]:
            flat = {k: v for k, v in system.items() if k not in ("delivery", "expansion")}
            for phase in ("delivery", "expansion"):
                evidence = system.get(phase) or {}
                for key in ("meets", "point", "concurrency", "point_url", "ttft_p90_ms", "tpot_p90_ms",
                            "interactivity", "system_tps", "system_tps_per_kw", "power_source",
                            "system_power_kw", "joules_per_token", "cost_per_million_tokens", *CITED):  # fmt: skip
                    flat[f"{phase}_{key}"] = evidence.get(key)
            rows.append({**requirements, **flat, "model": section["model"]})
    return rows


# --- CSV ---------------------------------------------------------------------------------------------------


def rows_to_csv(rows: list[dict]) -> str:
    """A table as CSV: columns in first-seen order, nested values as JSON, None as an empty cell."""
    columns: dict[str, None] = {}
    for row in rows:
        columns.update(dict.fromkeys(row))
    out = io.StringIO()
    writer = csv_safe.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_cell(row.get(column)) for column in columns])
    return out.getvalue()


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, dict | list):
        value = json.dumps(value, sort_keys=True)
    return value  # formulas are neutralised by the writer (portal.csv_safe)
