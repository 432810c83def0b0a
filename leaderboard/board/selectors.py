"""Reads for the public leaderboard: only published results, whoever asks (what the public sees is the
visibility table's anonymous row, `Model.objects.visible_to(None)`, not a rule of this module).

Every public page reads Publication rows and their snapshot (curve, headline, and the frozen record: system,
organisation, description, verification level, check verdict, provenance; leaderboard.publishing.snapshot) with the
benchmark joined in, so the number of queries never grows with the number of results; nothing here reads the live
system or organisation. A retracted result keeps its page (`publication_public`) and history entry, but leaves the
rankings. By default only fully recomputed results rank (checker.judge.verification); a filter shows the others.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from django.db.models import Count, Exists, OuterRef, Q, QuerySet
from django.http import Http404

from accounts.selectors import user_org_ids
from catalog.models import Benchmark, ruleset_is_preview
from catalog.selectors import benchmark_list
from checker.judge.verification import CLAIMED, FULLY_RECOMPUTED, PARTLY_RECOMPUTED, Verification
from leaderboard.board.cache import public_cached
from leaderboard.board.systems import newest_per_system
from leaderboard.models import Annotation, Challenge, Publication, PublicationRevision, SavedTender
from review.models import Attestation, Review
from review.selectors import check_verdict
from submissions.models import PointMetric, Submission

COMPARE_MIN, COMPARE_MAX = 2, 4
POWER_MEASURED, POWER_PROVISIONED, POWER_NONE = "measured", "provisioned", "none"
LEVEL_ALL = "all"  # the verification filter's value that shows every level (the default ranks only full ones)
LEVEL_CHOICES = {
    FULLY_RECOMPUTED: "fully",
    PARTLY_RECOMPUTED: "partly",
    CLAIMED: "claimed",
}
LEVEL_OF_QUERY = {query: level for level, query in LEVEL_CHOICES.items()}


def leaderboard_benchmarks():
    """Benchmarks that have (or will have) a public leaderboard."""
    return benchmark_list()


def benchmark_public(model_id: str) -> Benchmark:
    """One benchmark of the public catalog by its model id, or a 404."""
    benchmark = Benchmark.objects.filter(model_id=model_id).first()
    if benchmark is None:
        raise Http404("No such benchmark.")
    return benchmark


def publications_public() -> QuerySet[Publication]:
    """Every published result (retracted ones included), with what a page shows of it joined in: one query."""
    has_measured_power = Exists(
        PointMetric.objects.filter(check_run_id=OuterRef("check_run_id"), extra__power__has_key="measured")
    )
    return (
        Publication.objects.visible_to(None)
        .select_related("submission__benchmark", "version", "check_run")
        .defer(
            "check_run__report", "check_run__curves", "check_run__point_files", "check_run__points_expected"
        )
        .annotate(has_measured_power=has_measured_power)
    )


def publications_ranked_base() -> QuerySet[Publication]:
    """Published and not retracted: what rankings, counts and the SLO finder read."""
    return publications_public().filter(retracted_at__isnull=True)


# --- Filters -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class LeaderboardFilters:
    """What a buyer narrows a leaderboard by; empty strings mean "any"."""

    division: str = ""
    availability: str = ""
    organisation: str = ""  # the organisation's slug
    accelerator: str = ""  # an accelerator model name as the system description gives it
    power: str = ""  # measured | provisioned | none
    level: str = ""  # "" (fully recomputed only: the ranking), all, fully, partly or claimed

    @classmethod
    def from_query(cls, query) -> LeaderboardFilters:
        def one(name: str) -> str:
            return (query.get(name) or "").strip()[:200]

        return cls(
            division=one("division"),
            availability=one("availability"),
            organisation=one("organisation"),
            accelerator=one("accelerator"),
            power=one("power"),
            level=one("level"),
        )

    @property
    def active(self) -> bool:
        return any(
            (self.division, self.availability, self.organisation, self.accelerator, self.power, self.level)
        )

    @property
    def levels(self) -> tuple[str, ...]:
        """The verification levels shown: fully recomputed only unless the filter asks for others."""
        if self.level == LEVEL_ALL:
            return (FULLY_RECOMPUTED, PARTLY_RECOMPUTED, CLAIMED)
        if self.level in LEVEL_OF_QUERY:
            return (LEVEL_OF_QUERY[self.level],)
        return (FULLY_RECOMPUTED,)

    def as_query(self) -> dict[str, str]:
        return {k: v for k, v in self.__dict__.items() if v}


def publication_accelerators(publication: Publication) -> list[str]:
    """Accelerator model names of the result's system as published (the frozen description), distinct, in order."""
    return publication.record.accelerators


def publication_power_kind(publication: Publication) -> str:
    """measured (a power trace per point), provisioned (system_power.json only) or none."""
    if getattr(publication, "has_measured_power", False):
        return POWER_MEASURED
    if (publication.headline or {}).get("max_system_tps_per_kw") is not None:
        return POWER_PROVISIONED
    return POWER_NONE


def _matches(publication: Publication, filters: LeaderboardFilters) -> bool:
    record = publication.record
    if record.level not in filters.levels:
        return False
    if filters.division and record.division != filters.division:
        return False
    if filters.availability and record.availability != filters.availability:
        return False
    if filters.organisation and record.organisation_slug != filters.organisation:
        return False
    if filters.accelerator and filters.accelerator not in publication_accelerators(publication):
        return False
    if filters.power == POWER_MEASURED:
        return publication_power_kind(publication) == POWER_MEASURED
    if filters.power == POWER_PROVISIONED:  # any official provisioned figure, measured results included
        return (publication.headline or {}).get("max_system_tps_per_kw") is not None
    if filters.power == POWER_NONE:
        return publication_power_kind(publication) == POWER_NONE
    return True


def _rank_key(publication: Publication):
    """Fully recomputed results first (they are the ranking), then by peak throughput."""
    peak = (publication.headline or {}).get("max_system_tps")
    return (
        not publication.record.verification.ranks_by_default,
        peak is None,
        -(peak or 0.0),
        publication.public_id,
    )


@dataclass
class Leaderboard:
    """One benchmark's ranked results after the filters, and the choices the filter form offers."""

    benchmark: Benchmark
    filters: LeaderboardFilters
    results: list[Publication]
    total: int
    options: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    unranked: int = 0  # results left out by the default verification filter (not fully recomputed)


def leaderboard_for(
    benchmark: Benchmark, filters: LeaderboardFilters | None = None, *, with_curves: bool = True
) -> Leaderboard:
    """The benchmark's published, not retracted results, the newest per system (leaderboard.board.systems), ranked by
    peak system throughput, filtered; by default only fully recomputed ones (`filters.level` shows the others,
    after them). One query: every filter reads the frozen record of rows already loaded. `with_curves=False` leaves the
    curves (the bulk of a row) in the database: `publication_curves` reads those a page draws."""
    filters = filters or LeaderboardFilters()
    rows = publications_ranked_base().filter(submission__benchmark=benchmark)
    if not with_curves:
        rows = rows.defer("curve")
    every = list(rows)
    if not benchmark.is_preview:  # an official board never ranks a result checked under a preview rule set
        every = [p for p in every if not ruleset_is_preview(getattr(p.check_run, "ruleset", "") or "")]
    every = newest_per_system(every)  # one row per system: older results are in its history
    options = {
        "division": sorted({(p.record.division, p.record.division_display) for p in every}),
        "availability": sorted({(p.record.availability, p.record.availability_display) for p in every}),
        "organisation": sorted(
            {(p.record.organisation_slug, p.record.organisation_name) for p in every},
            key=lambda o: o[1].lower(),
        ),
        "accelerator": sorted({(a, a) for p in every for a in publication_accelerators(p)}),
        "power": [
            (POWER_MEASURED, "Measured power"),
            (POWER_PROVISIONED, "Provisioned power"),
            (POWER_NONE, "No power figures"),
        ],
        "level": [
            ("", "Fully recomputed (ranked)"),
            (LEVEL_ALL, "Every verification level"),
            (LEVEL_CHOICES[PARTLY_RECOMPUTED], "Partly recomputed only"),
            (LEVEL_CHOICES[CLAIMED], "Claimed only"),
        ],
    }
    results = sorted((p for p in every if _matches(p, filters)), key=_rank_key)
    return Leaderboard(
        benchmark=benchmark,
        filters=filters,
        results=results,
        total=len(every),
        options=options,
        unranked=sum(1 for p in every if not p.record.verification.ranks_by_default),
    )


def publication_curves(publications: list[Publication]) -> dict[int, dict]:
    """The curves of a few publications by id, in one query (for rows loaded without them)."""
    if not publications:
        return {}
    return dict(Publication.objects.filter(pk__in=[p.pk for p in publications]).values_list("pk", "curve"))


def publications_ranked(benchmark: Benchmark, filters: LeaderboardFilters | None = None) -> list[Publication]:
    """The ranked results only (see leaderboard_for)."""
    return leaderboard_for(benchmark, filters).results


# --- Home, one result, history, compare -----------------------------------------------------------


def publications_latest(limit: int = 8) -> list[Publication]:
    """The most recently published results (retracted ones left out)."""
    return list(publications_ranked_base().order_by("-published_at", "-id")[:limit])


def publication_counts() -> dict[int, int]:
    """Ranked (published, not retracted) results per benchmark id."""
    rows = (
        Publication.objects.visible_to(None)
        .filter(retracted_at__isnull=True)
        .values("submission__benchmark_id")
        .annotate(n=Count("id"))
    )
    return {row["submission__benchmark_id"]: row["n"] for row in rows}


def benchmarks_with_counts() -> list[Benchmark]:
    """The public catalog, each benchmark carrying `published_count`."""
    counts = publication_counts()
    benchmarks = list(leaderboard_benchmarks())
    for benchmark in benchmarks:
        benchmark.published_count = counts.get(benchmark.pk, 0)
    return benchmarks


def publication_public(public_id: str) -> Publication:
    """One published result by its public id, retracted included (it keeps its page); a 404 otherwise, also
    for a result still under embargo or waiting for its cohort."""
    publication = publications_public().filter(public_id=public_id).first()
    if publication is None:
        raise Http404("No such published result.")
    return publication


def system_history(system_id: int) -> list[Publication]:
    """A system's published results over time, oldest first (retracted ones included and marked), or a 404 when
    the system has none (a system with only unpublished work does not exist for the public)."""
    history = list(
        publications_public().filter(snapshot__system__id=system_id).order_by("published_at", "id")
    )
    if not history:
        raise Http404("No published results for this system.")
    return history


def publications_compare(benchmark: Benchmark, public_ids: list[str]) -> list[Publication]:
    """2-4 published results of one benchmark, in the order asked; ValueError says what is wrong."""
    wanted = list(dict.fromkeys(i.strip() for i in public_ids if i.strip()))
    if not COMPARE_MIN <= len(wanted) <= COMPARE_MAX:
        raise ValueError(f"Choose {COMPARE_MIN} to {COMPARE_MAX} results to compare.")
    found = {
        p.public_id: p
        for p in publications_public().filter(public_id__in=wanted, submission__benchmark=benchmark)
    }
    missing = [i for i in wanted if i not in found]
    if missing:
        raise ValueError(f"No published result of this benchmark: {', '.join(missing)}.")
    return [found[i] for i in wanted]


# --- What a result page shows beyond the snapshot ---------------------------------------------------


@dataclass
class Provenance:
    """Where a published result's numbers come from and who checked them (frozen parts from the snapshot)."""

    bundle_sha256: str
    checker_version: str
    ruleset: str
    verification: Verification
    check: dict
    official: dict | None
    waivers: list[dict]
    reviewing_organisations: int
    audited_at: object | None
    files: list
    annotations: list[Annotation]
    measured_power: dict[int, dict]  # concurrency -> measured power of that point

    @property
    def recomputed_points(self) -> int:
        return self.verification.recomputed_points

    @property
    def total_points(self) -> int:
        return self.verification.total_points

    @property
    def recomputation(self) -> str:
        return self.verification.sentence


def publication_provenance(publication: Publication) -> Provenance:
    """The provenance block of a result page: a fixed handful of queries whatever the result's size. What was
    frozen when published (bundle, checker, rule set, level, verdict, waivers) comes from the snapshot."""
    record = publication.record
    check_run = publication.check_run
    official = None
    measured: dict[int, dict] = {}
    if check_run is not None:
        official = (
            record.check.get("official")
            or check_verdict(publication.version, check_run, official=True)["official"]
        )
        for concurrency, extra in PointMetric.objects.filter(
            check_run=check_run, extra__power__has_key="measured"
        ).values_list("concurrency", "extra"):
            measured[concurrency] = (extra.get("power") or {}).get("measured") or {}
    # The submission that made the revision shown (an extension's reviews and attestation for its revision).
    made_by = publication.version.submission_id
    organisations = (
        Review.objects.filter(assignment__submission_id=made_by, decision=Review.Decision.APPROVE)
        .values("assignment__organisation_id")
        .distinct()
        .count()
    )
    attestation = (
        Attestation.objects.filter(submission_id=made_by, version=publication.version)
        .order_by("-created_at")
        .first()
    )
    return Provenance(
        bundle_sha256=record.bundle_sha256,
        checker_version=record.checker_version,
        ruleset=record.ruleset,
        verification=record.verification,
        check=record.check,
        official=official,
        waivers=record.waivers,
        reviewing_organisations=organisations,
        audited_at=attestation.created_at if attestation else None,
        files=list(publication.version.files.order_by("position")),
        annotations=list(publication.annotations.order_by("created_at", "id")),
        measured_power=measured,
    )


def measured_power_of_results(public_ids: list[str]) -> dict[str, dict[int, dict]]:
    """Per published result (by public id), per concurrency, the measured power of that point (a power trace was
    submitted): one query for a page of results, read from the check run the result's numbers come from, as the
    result page reads it (Provenance.measured_power). Results without a trace are absent."""
    runs = dict(
        publications_public()
        .filter(public_id__in=list(public_ids), check_run__isnull=False)
        .values_list("check_run_id", "public_id")
        .order_by()
    )
    rows = (
        PointMetric.objects.filter(check_run_id__in=list(runs), extra__power__has_key="measured")
        .values_list("check_run_id", "concurrency", "extra")
        .order_by()
    )
    measured: dict[str, dict[int, dict]] = {}
    for run_id, concurrency, extra in rows:
        power = (extra.get("power") or {}).get("measured") or {}
        if power:
            measured.setdefault(runs[run_id], {})[concurrency] = power
    return measured


def measured_power_of_benchmark(model_id: str) -> dict[str, dict[int, dict]]:
    """measured_power_of_results for every published result of a benchmark, kept per public generation: what the
    SLO finder shows beside its rows is the same whatever the targets, so it is read once, not per answer."""

    def build() -> dict[str, dict[int, dict]]:
        public_ids = publications_public().filter(submission__benchmark__model_id=model_id)
        return measured_power_of_results(list(public_ids.values_list("public_id", flat=True)))

    return public_cached(f"measured-power:{model_id}", build)


def submission_publication(submission: Submission) -> Publication | None:
    """The submission's publication record (scheduled or published), for the submitter's page."""
    return Publication.objects.filter(submission=submission).first()


# --- Revisions of a result (incremental submissions, docs/extensions.md) ----------------------------------


def publication_revisions_public(publication: Publication) -> list[PublicationRevision]:
    """The result's published revisions, oldest first (a result published before revisions were recorded has
    none: it is its own revision 1)."""
    return list(
        PublicationRevision.objects.visible_to(None)
        .filter(publication=publication)
        .select_related("version", "submission")
        .order_by("number")
    )


def parse_revision(value) -> int | None:
    """?revision=N as a number; None when absent; Http404 when it is not a revision number."""
    if value in (None, ""):
        return None
    text = str(value).strip()
    if not (text.isascii() and text.isdigit()) or len(text) > 6 or int(text) < 1:
        raise Http404("No such revision.")
    return int(text)


def publication_at_revision(publication: Publication, number: int | None) -> Publication:
    """The result as revision `number` published it (its curve, headline, version, check run, date and the
    submission that made it), an unsaved copy; the newest revision (the result itself) when `number` is None.
    Http404 for a revision that is not published."""
    if number is None:
        return publication
    revision = (
        PublicationRevision.objects.visible_to(None)
        .filter(publication=publication, number=number)
        .select_related("version", "check_run")
        .first()
    )
    if revision is None:
        if number == 1 and not PublicationRevision.objects.filter(publication=publication).exists():
            return publication
        raise Http404("No such revision of this result.")
    shown = copy.copy(publication)
    shown.curve = revision.curve
    shown.headline = revision.headline
    shown.snapshot = revision.snapshot
    shown.version = revision.version
    shown.check_run = revision.check_run
    shown.published_at = revision.published_at
    shown.shown_revision = revision
    shown.revision_submission_id = revision.submission_id
    return shown


def challenges_open() -> list[Challenge]:
    """Challenges of published results the chair has not resolved, oldest first (the chair sees them all)."""
    return list(
        Challenge.objects.filter(Challenge.states.q("open"))
        .select_related("publication__submission__system", "organisation", "raised_by")
        .order_by("created_at", "pk")
    )


def saved_tenders_visible_to(user) -> QuerySet[SavedTender]:
    """A saved tender is its organisation's members' while it is private, and everyone's (read-only) once shared
    (docs/tender-desk.md); auditors and the chair see no other organisation's private tender: it is no
    submission, there is nothing to oversee."""
    visible = SavedTender.states.q("shared")
    if getattr(user, "is_authenticated", False):
        organisations = user_org_ids(user)
        if organisations:
            visible |= Q(organisation_id__in=organisations)
    return SavedTender.objects.filter(visible).select_related("organisation")


def saved_tenders_of(user) -> QuerySet[SavedTender]:
    """The saved tenders of the user's organisations (private and shared), for the scoring page's list."""
    if not getattr(user, "is_authenticated", False):
        return SavedTender.objects.none()
    return SavedTender.objects.filter(organisation_id__in=user_org_ids(user)).select_related("organisation")


def point_token_counts(publication: Publication) -> dict[str, dict]:
    """Per point key of a published result, its recomputed input and output token totals (the raw log's prompts and
    answers as the checker counted them), from the check run its numbers come from: the cost per million output
    tokens with a price per million input tokens reads them (leaderboard.board.normalised.point_rows). A point without a
    recomputation is absent."""
    if publication.check_run_id is None:
        return {}
    out = {}
    rows = PointMetric.objects.filter(check_run_id=publication.check_run_id).values_list("key", "recomputed")
    for key, recomputed in rows.order_by():
        summary = recomputed or {}
        inputs = (summary.get("input_sequence_lengths") or {}).get("total")
        outputs = (summary.get("output_sequence_lengths") or {}).get("total")
        if inputs is not None and outputs is not None:
            out[key] = {"input_tokens": inputs, "output_tokens": outputs}
    return out


def public_ids_of_submissions(*, submission_ids: list[int], **_) -> dict[int, str]:
    """The public id of the published result each submission made: its own publication (a result's first
    submission) or the publication a published revision of it belongs to (an extension). Answers
    submissions.signals.published_as."""
    found = dict(
        Publication.objects.filter(
            Publication.states.q("published"), submission_id__in=submission_ids
        ).values_list("submission_id", "public_id")
    )
    for submission_id, public_id in PublicationRevision.objects.filter(
        PublicationRevision.states.q("published"),
        Publication.states.q("published", via="publication"),
        submission_id__in=submission_ids,
    ).values_list("submission_id", "publication__public_id"):
        found.setdefault(submission_id, public_id)
    return found
