"""The review part of `manage.py seed_demo`: every state of the lifecycle, reached through the real services.

| title (the marker) | state | how |
|---|---|---|
| AX-4000 from the sample bundle | draft | submissions.demo_submissions |
| AX-8000 from its seven run archives | audited | waivers granted by the chair, two approvals, evidence asked for and given, attested |
| AX-8000 waiting for reviewers | submitted | the chair draws two reviewers (least-loaded organisations); nobody answered yet |
| AX-8000 in review, objection open | in_review | one approval and an open objection whose answer is due the next business day |
| AX-8000 changes requested | changes_requested | version 1 lacked the c64 run; version 2 (all seven) uploaded and checked |
| AX-8000 peer reviewed | peer_reviewed | two approvals: waits for the auditor |
| AX-8000 rejected | rejected | the chair rejects it |
| Unreleased-Z9 | in_review | Zephyr Silicon's embargoed system, reviewed by demo-reviewer and demo-reviewer2 (a stand-in: the AX-8000 runs renamed, never published) |

The sample runs are short, so their checks fail on `accuracy-sample-count` (32 accuracy samples): the submitter
asks for a waiver of each such finding and the chair grants them, as docs/review.md describes. Each step is
skipped when it was already taken, so the command is safe to run again (and resumes a half-seeded database).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.test.utils import override_settings

from catalog.models import Benchmark
from review.lifecycle import SUBMISSION
from review.models import Comment, Conflict, EvidenceRequest, Review, ReviewAssignment, Waiver
from review.services.assignments import assignment_accept, assignment_create, assignments_draw
from review.services.attestations import attestation_record, evidence_answer, evidence_request
from review.services.conflicts import conflict_declare
from review.services.reviews import review_submit
from review.services.thread import comment_post
from review.services.waivers import waiver_decide, waiver_request
from submissions.demo import DemoSeed
from submissions.demo_submissions import (
    DEMO_MODEL_ID,
    DemoFile,
    run_archive_files,
    run_archives_renamed,
    system_description_of,
    upload_files,
)
from submissions.models import Submission, System
from submissions.selectors import check_run_latest, version_latest
from submissions.services import submission_create, system_register

Status = Submission.Status

Z9_SYSTEM = "Unreleased-Z9"
Z9_TITLE = "Zephyr's first results (embargoed until launch)"

WAIVER_REASONS = {
    "accuracy-sample-count": "The demo's sample runs are short: an accuracy probe of 32 samples instead of the full "
    "set. The full accuracy run is attached to the thread.",
    "accuracy-coverage": "The c64 run is being repeated after a power-meter fault; it follows in the next version.",
    "offline-point-present": "The c64 run is being repeated after a power-meter fault; it follows in the next "
    "version.",
    "point-count": "Six of seven points: the c64 run follows in the next version.",
    # Unreleased-Z9 is a stand-in (the demo has no run of it): its archives are the AX-8000 runs renamed, which the
    # portal's raw-log-reused rule catches. The waiver stays asked for, never granted: the Z9 is never published.
    "raw-log-reused": "A stand-in: the demo has no run of the unreleased Z9, so these are AcmeCompute's AX-8000 "
    "sample runs under its name, as the check says. It shows the embargo, and is never to be published.",
}
NEVER_GRANTED = {"raw-log-reused"}


@dataclass(frozen=True)
class DemoStage:
    """One demo submission: its title (the marker), the state it is taken to, and its versions' files."""

    title: str
    state: str
    versions: tuple  # callables returning list[DemoFile], one per version
    # The official checker's verdict is read at the review and the audit; where nobody reads it, the demo saves
    # its run (about a second and a half per version).
    official: bool = True


SEVEN = run_archive_files
AUDITED_TITLE = (
    "Demo: AX-8000 from its seven run archives (raw logs, recomputed)"  # submissions.demo_submissions
)

STAGES = (
    DemoStage(AUDITED_TITLE, Status.AUDITED, (SEVEN,)),
    DemoStage("Demo: AX-8000 peer reviewed, waiting for the auditor", Status.PEER_REVIEWED, (SEVEN,)),
    DemoStage("Demo: AX-8000 in review, an objection open", Status.IN_REVIEW, (SEVEN,)),
    DemoStage(
        "Demo: AX-8000 changes requested, version 2 uploaded",
        Status.CHANGES_REQUESTED,
        (lambda: run_archive_files()[:6], SEVEN),
    ),
    DemoStage("Demo: AX-8000 rejected by the chair", Status.REJECTED, (SEVEN,), official=False),
    # Last: the draw then finds Tessera AI the least loaded organisation, next to one of the other two.
    DemoStage("Demo: AX-8000 waiting for reviewers", Status.SUBMITTED, (SEVEN,), official=False),
)


def demo_submission(*, system: System, title: str, actor, model_id: str = DEMO_MODEL_ID) -> Submission:
    """The demo submission of that title (created as a draft through the service the first time)."""
    submission = Submission.objects.filter(
        organisation=system.organisation, system=system, title=title
    ).first()
    if submission is None:
        submission = submission_create(
            actor=actor,
            system=system,
            benchmark=Benchmark.objects.get(model_id=model_id),
            title=title,
        )
    return submission


def _version(
    submission: Submission, number: int, files, actor, *, official: bool = True, kind: str = "run_archives"
):
    """Version `number`, uploaded (and checked, in-process) when missing."""
    version = submission.versions.filter(number=number).first()
    if version is None:
        with override_settings(PORTAL_CHECK_OFFICIAL=official and settings.PORTAL_CHECK_OFFICIAL):
            version = upload_files(submission=submission, files=files(), actor=actor, kind=kind)
    check_run = check_run_latest(version)
    if check_run is None or not check_run.in_state("judged"):
        raise RuntimeError(
            f"The demo's check of {submission.title!r} version {version.number} did not finish "
            f"({check_run.status if check_run else 'not started'}): seed_demo runs the checks in-process, "
            "so run it without REDIS_URL (make demo does)."
        )
    return version


def _ask_waivers(version, actor) -> None:
    """The submitter asks for a waiver of each error finding of the version's latest check."""
    check_run = check_run_latest(version)
    asked = set(Waiver.objects.filter(version=version).values_list("rule", "point", "file"))
    for finding in check_run.findings.filter(severity="error").order_by("rule", "point", "file"):
        if (finding.rule, finding.point or "", finding.file or "") in asked:
            continue
        waiver_request(
            version=version,
            actor=actor,
            rule=finding.rule,
            point=finding.point or "",
            file=finding.file or "",
            reason=WAIVER_REASONS.get(finding.rule, "The demo's sample data cannot meet this rule."),
        )


def _grant_waivers(version, chair) -> None:
    """The chair grants the waivers the short sample runs need (never one of NEVER_GRANTED: it stays pending)."""
    requested = Waiver.objects.filter(Waiver.states.q("requested"), version=version).exclude(
        rule__in=NEVER_GRANTED
    )
    for waiver in requested.order_by("pk"):
        waiver_decide(
            waiver=waiver,
            actor=chair,
            grant=True,
            reason="Granted for this version: the sample runs are short by design (a demo).",
        )


def _submit(submission: Submission, actor) -> Submission:
    if submission.in_state("draft"):
        SUBMISSION.take(actor, submission, "submit")
    return submission


def _assign(submission: Submission, reviewers: list, chair) -> list[ReviewAssignment]:
    assignments = []
    for reviewer in reviewers:
        assignment = ReviewAssignment.objects.filter(submission=submission, reviewer=reviewer).first()
        if assignment is None:
            assignment = assignment_create(submission=submission, reviewer=reviewer, actor=chair)
        assignments.append(assignment)
    return assignments


def _accept(assignments: list[ReviewAssignment]) -> None:
    for assignment in assignments:
        assignment.refresh_from_db()
        if assignment.in_state("invited"):
            assignment_accept(assignment=assignment, actor=assignment.reviewer)


def _review(assignment: ReviewAssignment, decision: str, body: str = "", objection_type: str = "") -> None:
    submission = Submission.objects.get(pk=assignment.submission_id)
    if not submission.in_state("in_review"):
        return
    if Review.objects.filter(assignment=assignment, version_id=submission.submitted_version_id).exists():
        return
    review_submit(
        assignment=assignment,
        actor=assignment.reviewer,
        decision=decision,
        body=body,
        objection_type=objection_type,
    )


def _comment_once(submission: Submission, actor, body: str, **kwargs) -> Comment:
    existing = Comment.objects.filter(submission=submission, author=actor, body=body).first()
    return existing or comment_post(submission=submission, actor=actor, body=body, **kwargs)


def _reviewed_in_review(submission: Submission, submitter, reviewers: list, chair) -> list[ReviewAssignment]:
    """Version 1's waivers asked for, submitted, the reviewers assigned and accepted, the waivers granted."""
    version = submission.versions.get(number=1)
    _ask_waivers(version, submitter)
    submission = _submit(submission, submitter)
    assignments = _assign(submission, reviewers, chair)
    _accept(assignments)
    _grant_waivers(version, chair)
    return assignments


# --- One flow per state ---------------------------------------------------------------------------


# Who submits an organisation's demo results and which two reviewers (of other organisations) review them.
TEAMS = {
    "acmecompute": ("demo-submitter", ("demo-reviewer", "demo-reviewer2")),
    "nimbuscloud": ("demo-nimbus", ("demo-reviewer2", "demo-reviewer3")),
    "zephyr-silicon": ("demo-zephyr", ("demo-reviewer", "demo-reviewer2")),  # not Tessera AI: in conflict
}


def submitter_of(submission: Submission, users):
    return users[TEAMS[submission.organisation.slug][0]]


def _audited(submission, users) -> None:
    chair, auditor = users["demo-chair"], users["demo-auditor"]
    submitter_name, reviewer_names = TEAMS[submission.organisation.slug]
    submitter = users[submitter_name]
    first, second = _reviewed_in_review(
        submission, submitter, [users[name] for name in reviewer_names], chair
    )
    _review(first, Review.Decision.APPROVE, "Curve and recomputed metrics agree with the claims.")
    _review(second, Review.Decision.APPROVE)
    submission.refresh_from_db()
    if not submission.in_state("peer_reviewed"):
        return
    request = EvidenceRequest.objects.filter(submission=submission).first()
    if request is None:
        request = evidence_request(
            submission=submission,
            actor=auditor,
            question="Which power meter measured the c64 run, and when was it last calibrated?",
        )
    if request.in_state("open"):
        evidence_answer(
            request=request,
            actor=submitter,
            answer="A Yokogawa WT333E, calibrated in September (certificate attached in the thread).",
        )
    attestation_record(
        submission=submission,
        actor=auditor,
        notes="Frozen version re-read; waivers of accuracy-sample-count are justified for the sample runs.",
    )


def _peer_reviewed(submission, users) -> None:
    first, second = _reviewed_in_review(
        submission,
        users["demo-submitter"],
        [users["demo-reviewer"], users["demo-reviewer2"]],
        users["demo-chair"],
    )
    _review(first, Review.Decision.APPROVE, "Reproduced the c16 point from the raw log.")
    _review(second, Review.Decision.APPROVE)


def _in_review(submission, users) -> None:
    first, second = _reviewed_in_review(
        submission,
        users["demo-submitter"],
        [users["demo-reviewer"], users["demo-reviewer2"]],
        users["demo-chair"],
    )
    _review(first, Review.Decision.APPROVE, "Looks consistent to me.")
    # The objection's answer is due the next business day ("tomorrow" on a weekday), so the dashboard shows a
    # deadline about to pass and `deadlines_run` a reminder to send.
    with override_settings(PORTAL_OBJECTION_ANSWER_BUSINESS_DAYS=1):
        _review(
            second,
            Review.Decision.OBJECT,
            "The c32 point's warm-up ran with a different seed set than the other points. Which one is "
            "right, and was the run repeated?",
            Comment.ObjectionType.REPRODUCIBILITY,
        )


def _changes_requested(submission, users, stage: DemoStage) -> None:
    submitter = users["demo-submitter"]
    first, _ = _reviewed_in_review(
        submission, submitter, [users["demo-reviewer"], users["demo-reviewer2"]], users["demo-chair"]
    )
    _review(
        first,
        Review.Decision.REQUEST_CHANGES,
        "The c64 point is missing: the curve stops at c32. Upload all seven runs.",
    )
    submission.refresh_from_db()
    if submission.in_state("changes_requested"):
        version = _version(submission, 2, stage.versions[1], submitter)
        _ask_waivers(version, submitter)


def _rejected(submission, users) -> None:
    chair = users["demo-chair"]
    _reviewed_in_review(submission, users["demo-submitter"], [users["demo-reviewer"]], chair)
    submission.refresh_from_db()
    if submission.in_state("submitted") or submission.in_state("in_review"):
        SUBMISSION.take(
            chair,
            submission,
            "reject",
            reason="A duplicate of the AX-8000 result already in review (same runs, same version).",
        )


def _submitted(submission, users) -> None:
    submitter, chair = users["demo-submitter"], users["demo-chair"]
    _ask_waivers(version_latest(submission), submitter)
    submission = _submit(submission, submitter)
    if not ReviewAssignment.objects.filter(submission=submission).exists():
        assignments_draw(submission=submission, actor=chair)


def demo_version(
    submission: Submission, number: int, files, actor, *, official: bool = True, kind: str = "run_archives"
):
    """Version `number` of a demo submission, uploaded and checked when missing (for leaderboard.demo)."""
    return _version(submission, number, files, actor, official=official, kind=kind)


def extension_in_review(submission: Submission, users) -> None:
    """An extension taken into review: waivers asked for and granted, two reviewers, one approval of the delta."""
    first, _ = _reviewed_in_review(
        submission,
        users["demo-submitter"],
        [users["demo-reviewer"], users["demo-reviewer2"]],
        users["demo-chair"],
    )
    _review(
        first,
        Review.Decision.APPROVE,
        "The new c48 point recomputes from its raw log and sits between the published c32 and c64 steps.",
    )


def audited_through_review(submission: Submission, users, files, *, kind: str, official: bool) -> Submission:
    """Version 1 uploaded and checked, waivers asked for and granted, two approvals, evidence, attestation: the
    audited flow above, for the results leaderboard.demo publishes."""
    _version(submission, 1, files, submitter_of(submission, users), official=official, kind=kind)
    _audited(submission, users)
    submission.refresh_from_db()
    return submission


FLOWS = {
    Status.AUDITED: _audited,
    Status.PEER_REVIEWED: _peer_reviewed,
    Status.IN_REVIEW: _in_review,
    Status.REJECTED: _rejected,
    Status.SUBMITTED: _submitted,
}


def seed_demo_z9(seed: DemoSeed) -> Submission:
    """Zephyr Silicon's Unreleased-Z9: in review by demo-reviewer and demo-reviewer2; Tessera AI (a competitor,
    pinned by the chair) may not review it. Its name stays with Zephyr, its reviewers, the auditors and the chair.

    A stand-in: the demo has no run of the Z9, so its archives are the AX-8000 runs renamed. Seeded last, after every
    published result, so that only the Z9's own check says `raw-log-reused` (naming the AX-8000 submissions whose
    raw logs they are); that waiver is asked for and never granted, and the Z9 is never published."""
    users = seed.users
    zephyr, tessera = seed.organisations["zephyr-silicon"], seed.organisations["tessera-ai"]
    submitter, chair = users["demo-zephyr"], users["demo-chair"]
    if not Conflict.objects.filter(organisation=zephyr, other=tessera).exists():
        conflict_declare(
            organisation=zephyr,
            other=tessera,
            kind=Conflict.Kind.COMPETITOR,
            reason="Tessera AI resells a competing accelerator; it may not see Zephyr's embargoed results.",
            actor=chair,
        )
    files = _z9_files
    system = System.objects.filter(organisation=zephyr, name=Z9_SYSTEM).first()
    if system is None:
        system = system_register(
            organisation=zephyr, name=Z9_SYSTEM, description=system_description_of(files()), actor=submitter
        )
    seed.systems[Z9_SYSTEM] = system
    submission = demo_submission(system=system, title=Z9_TITLE, actor=submitter)
    _version(submission, 1, files, submitter)
    first, _ = _reviewed_in_review(
        submission, submitter, [users["demo-reviewer"], users["demo-reviewer2"]], chair
    )
    _comment_once(
        submission,
        first.reviewer,
        f"{Z9_SYSTEM} keeps about 100 tokens/s per user from c1 to c64: is speculative decoding on? The system "
        "description does not say.",
    )
    submission.refresh_from_db()
    if not submission.in_state("in_review"):
        raise RuntimeError(f"Demo submission {Z9_TITLE!r} is {submission.status}, not {Status.IN_REVIEW}.")
    return submission


def _z9_files() -> list[DemoFile]:
    return run_archives_renamed(
        system_id=Z9_SYSTEM, system_name=Z9_SYSTEM, organisation_name="Zephyr Silicon"
    )


def seed_demo_review(seed: DemoSeed) -> dict[str, Submission]:
    """Take the demo submissions through review and audit (see the module docstring); title -> submission, the
    sample drafts included."""
    users = seed.users
    system = seed.systems["Acme_AX-8000"]
    made = {
        submission.title: submission
        for submission in Submission.objects.filter(
            Submission.states.q("draft"), organisation=system.organisation, title__startswith="Demo: "
        ).order_by("pk")
    }
    for stage in STAGES:
        submission = demo_submission(system=system, title=stage.title, actor=users["demo-submitter"])
        _version(submission, 1, stage.versions[0], users["demo-submitter"], official=stage.official)
        if stage.state == Status.CHANGES_REQUESTED:
            _changes_requested(submission, users, stage)
        else:
            FLOWS[stage.state](submission, users)
        submission.refresh_from_db()
        made[stage.title] = submission
    for title, submission in made.items():
        submission.refresh_from_db()
        expected = next(
            (stage.state for stage in STAGES if stage.title == title),
            Status.DRAFT,
        )
        if not submission.in_state(expected):
            raise RuntimeError(f"Demo submission {title!r} is {submission.status}, not {expected}.")
    return made
