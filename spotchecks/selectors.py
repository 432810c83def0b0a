"""Reads of spot-checks: the claim a spot-check compares with (the published curve, else the latest check run),
its points, a submission's spot-checks and a published result's re-measurements. Which rows a user may see is
access.visibility.spotchecks_visible_to; what of the endpoint a user may see is submissions.endpoints's rule."""

from __future__ import annotations

from dataclasses import dataclass

from checker.judge.remeasure_stats import HIGHER_IS_BETTER, INCONCLUSIVE, MARGIN_ANOTHER_PARTY
from leaderboard.models import Publication
from spotchecks.acceptance import AcceptancePlan, acceptance_verdict
from spotchecks.models import SpotCheck
from submissions.endpoints import endpoint_visible_to
from submissions.models import CheckRun, Submission
from submissions.selectors import check_run_latest

# The figures frozen from the claim and read from the re-measurement; the first three are judged (goodput depends on
# the spot-check's SLO and the prompts' sizes, so it is shown, never judged).
FIGURES = ("system_tps", "tps_per_user", "ttft_p90_ms", "goodput")
JUDGED = tuple(HIGHER_IS_BETTER)
FIGURE_LABELS = {
    "system_tps": "System throughput (tokens/s)",
    "tps_per_user": "Interactivity (tokens/s per user)",
    "ttft_p90_ms": "TTFT P90 (ms)",
    "goodput": "Goodput (requests/s within the SLO)",
}


@dataclass(frozen=True)
class Claim:
    """What a spot-check of this submission compares with now."""

    source: str  # SpotCheck.Source
    publication: Publication | None
    check_run: CheckRun | None
    points: list[dict]  # the curve's points, by concurrency


def _curve_points(curves: list, submission: Submission) -> list[dict]:
    for curve in curves or []:
        if (
            curve.get("system") == submission.system.name
            and curve.get("model") == submission.benchmark.model_id
        ):
            return list(curve.get("points") or [])
    return list((curves[0].get("points") if curves else None) or [])


def claim_of(submission: Submission) -> Claim:
    """The published curve when the result is published (what the public reads), else the curve of the latest
    check run of the version submitted."""
    publication = (
        Publication.objects.filter(Publication.states.q("published"), submission=submission)
        .select_related("check_run")
        .first()
    )
    if publication is not None:
        points = list((publication.curve or {}).get("points") or [])
        source, check_run = SpotCheck.Source.PUBLICATION, publication.check_run
    else:
        check_run = check_run_latest(submission.submitted_version)
        points = _curve_points(check_run.curves if check_run is not None else [], submission)
        source = SpotCheck.Source.CHECK_RUN
    usable = [
        p
        for p in points
        if isinstance(p.get("concurrency"), int) and not isinstance(p.get("concurrency"), bool)
    ]
    return Claim(source, publication, check_run, sorted(usable, key=lambda p: p["concurrency"]))


def claimed_figures(point: dict) -> dict:
    return {figure: point.get(figure) for figure in FIGURES}


def spotchecks_of(queryset, submission: Submission) -> list[SpotCheck]:
    """The submission's spot-checks among `queryset` (the user's visible ones), newest first."""
    return list(queryset.filter(submission=submission).select_related("started_by", "challenge"))


def remeasurements_public(publication: Publication) -> list[SpotCheck]:
    """The finished re-measurements of a published result's curve, newest first (its public page shows them)."""
    return list(
        SpotCheck.objects.filter(SpotCheck.states.q("public"), publication=publication).order_by(
            "-finished_at", "-id"
        )
    )


def _run_length(seconds: float | None) -> str:
    if seconds is None:
        return "no run length decides it (the shortfall sits on the margin)"
    minutes = seconds / 60
    return f"run at least {seconds:,.0f} s" if seconds < 600 else f"run at least {minutes:,.0f} min"


def spotcheck_rows(spot_check: SpotCheck) -> list[dict]:
    """Claim beside re-measurement, one row per judged figure: the shortfall, its 95 % interval, the margin and the
    verdict (with the run length that would decide an inconclusive one), for pages and API."""
    lines = {line["figure"]: line for line in spot_check.comparison or []}
    rows = []
    for figure in JUDGED:
        line = lines.get(figure) or {
            "figure": figure,
            "claimed": (spot_check.claimed or {}).get(figure),
            "measured": (spot_check.measured or {}).get(figure),
            "shortfall": None,
            "low": None,
            "high": None,
            "margin": MARGIN_ANOTHER_PARTY,
            "verdict": None,
            "run_longer_s": None,
        }
        verdict = line.get("verdict")
        rows.append(
            {
                **line,
                "label": FIGURE_LABELS[figure],
                "higher_is_better": HIGHER_IS_BETTER[figure],
                "verdict": verdict or "not compared",
                "verdict_text": {
                    "within": "within",
                    "outside": "outside",
                    INCONCLUSIVE: f"inconclusive: {_run_length(line.get('run_longer_s'))}",
                }.get(verdict, "not compared"),
            }
        )
    return rows


def spotcheck_basis(spot_check: SpotCheck) -> str:
    """Which requests the intervals drew, in a sentence (pages)."""
    bases = {line.get("basis") for line in spot_check.comparison or []}
    if bases == {"both"}:
        return "Intervals drawn from both sides' requests: the published point's raw log and the re-measurement's."
    if bases == {"remeasurement"}:
        return (
            "The published point kept no per-request samples: its figures are held fixed and the intervals draw "
            "the re-measurement's requests only."
        )
    return ""


def spotcheck_run_longer(spot_check: SpotCheck) -> str:
    """An inconclusive spot-check's advice: the run length that would decide every inconclusive figure."""
    lengths = [
        line.get("run_longer_s")
        for line in spot_check.comparison or []
        if line.get("verdict") == INCONCLUSIVE
    ]
    if not lengths:
        return ""
    if any(length is None for length in lengths):
        return "Run longer: at least one figure's shortfall sits on the margin, so no run length is sure to decide it."
    return f"Run longer to decide: {_run_length(max(lengths))} at this concurrency (the present run lasted {spot_check.duration_s} s)."


def endpoint_url_shown(user, spot_check: SpotCheck) -> str | None:
    """The endpoint URL as the user may see it: where the submission's endpoint is visible to them (its
    organisation, auditors and the chair; the public only when made public and published), else None."""
    if endpoint_visible_to(user, spot_check.submission) is None:
        return None
    return spot_check.endpoint_url


def acceptance_at_90(spot_check: SpotCheck) -> dict | None:
    """The 90 % acceptance verdict of a re-measurement of a published point (docs/tender-desk.md): the plan is the
    published point at the spot-check's concurrency (required = 0.9 x its system_tps), judged on the measured
    figures with the arithmetic. The SLO is the buyer's: without one, the throughput test alone (the acceptance
    page, linked, takes the SLO). None when it measured no published point (before publication, or a point the
    published curve does not have) or measured nothing."""
    publication = spot_check.publication
    if publication is None or not spot_check.measured:
        return None
    point = next(
        (
            p
            for p in (publication.curve or {}).get("points") or []
            if p.get("concurrency") == spot_check.concurrency and isinstance(p.get("system_tps"), int | float)
        ),
        None,
    )
    if point is None:
        return None
    plan = AcceptancePlan(
        point=f"r{point['concurrency']}",
        concurrency=int(point["concurrency"]),
        published_system_tps=float(point["system_tps"]),
        ttft_p90_ms_max=None,
        interactivity_min=None,
    )
    return {
        "plan": plan.as_dict(),
        "verdict": acceptance_verdict(plan, concurrency=spot_check.concurrency, measured=spot_check.measured),
        "url": f"/results/{publication.public_id}/acceptance/?point={plan.point}",
    }
