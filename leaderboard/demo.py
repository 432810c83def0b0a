"""The publication part of `manage.py seed_demo`: results on the public leaderboard, through the real process.

| title (the marker) | state | how |
|---|---|---|
| AX-8000 from its seven run archives | audited, awaiting its cohort | review.demo's audited flow; `cohort` chosen |
| AX-8000 first results, annotated | published | audited, published now; Zephyr challenges, the chair annotates |
| AX-8000 published | published | audited (waivers granted, attested), published now |
| AX-4000 preview, retracted | published, retracted | bundle; published now; challenged, the chair retracts |
| AX-4000 published | published | the sample bundle, audited, published now |
| AX-8000 extension: acme-serve 1.0 | published as revision 2 of AX-8000 published | re-measures r16 and r32 |
| AX-8000 extension: acme-serve 1.1 | in review | adds r48 to the same result (revision 3 once published) |

Every step goes through review.services and leaderboard.services (waiver requests and grants, two approvals,
evidence, attestation, publication_schedule, challenge_raise, challenge_resolve), in publication order, so the
systems' histories read oldest first. Each step is skipped when it was already taken: safe to run again.
Unreleased-Z9 stays in review, unpublished.
"""

from __future__ import annotations

from leaderboard import extensions, services
from leaderboard.models import Challenge, Publication
from review.demo import (
    AUDITED_TITLE,
    audited_through_review,
    demo_submission,
    demo_version,
    extension_in_review,
)
from submissions.demo_submissions import bundle_archive_for_system, run_archive_files, run_archive_remeasured
from submissions.models import Submission

Status = Submission.Status

ANNOTATED_TITLE = "Demo: AX-8000 first results (annotated after a challenge)"
AX8000_TITLE = "Demo: AX-8000 published"
RETRACTED_TITLE = "Demo: AX-4000 preview (retracted after a challenge)"
AX4000_TITLE = "Demo: AX-4000 published from the sample bundle"

CHALLENGES = {
    ANNOTATED_TITLE: (
        "The c64 point's TTFT P90 is lower than at c32: was the c64 run warmed up differently?",
        Challenge.Status.ANNOTATED,
        "The c64 run used a longer warm-up, disclosed in the system description; the numbers stand, read them "
        "with that in mind.",
    ),
    RETRACTED_TITLE: (
        "The preview's bundle carries no raw logs: its metrics cannot be recomputed.",
        Challenge.Status.RETRACTED,
        "Retracted: a preview without raw logs should not have been ranked. The AX-4000 result published "
        "afterwards replaces it.",
    ),
}


def _bundle_ax4000():
    return [bundle_archive_for_system("Acme_AX-4000")]


# title, system, files, upload kind, official checker verdict read (about 1.5 s a version), publication mode
RESULTS = (
    (ANNOTATED_TITLE, "Acme_AX-8000", run_archive_files, "run_archives", False, Publication.Mode.NOW),
    (RETRACTED_TITLE, "Acme_AX-4000", _bundle_ax4000, "bundle", False, Publication.Mode.NOW),
    (AX8000_TITLE, "Acme_AX-8000", run_archive_files, "run_archives", True, Publication.Mode.NOW),
    (AX4000_TITLE, "Acme_AX-4000", _bundle_ax4000, "bundle", True, Publication.Mode.NOW),
)


def _publish(submission: Submission, actor, mode: str) -> Publication:
    publication = Publication.objects.filter(submission=submission).first()
    if publication is None:
        publication = services.publication_schedule(submission=submission, actor=actor, mode=mode)
    return publication


def _challenge(publication: Publication, users, reason: str, outcome: str, resolution: str) -> None:
    """Zephyr Silicon's member challenges the result; the chair resolves it in public."""
    challenge = Challenge.objects.filter(publication=publication).order_by("pk").first()
    if challenge is None:
        challenge = services.challenge_raise(
            publication=publication, actor=users["demo-zephyr"], reason=reason
        )
    if challenge.status == Challenge.Status.OPEN:
        services.challenge_resolve(
            challenge=challenge, actor=users["demo-chair"], outcome=outcome, text=resolution
        )


REVISION_2_TITLE = "Demo: AX-8000 extension: acme-serve 1.0 re-measures r16 and r32"
IN_REVIEW_EXTENSION_TITLE = "Demo: AX-8000 extension: acme-serve 1.1 adds r48"
STACK_1_0 = {
    "serving_framework": "acme-serve 1.0 (stand-in: guidellm 0.8.1 mock-server)",
    "inference_backend": "acme-serve 1.0",
}
STACK_1_1 = {
    "serving_framework": "acme-serve 1.1 (stand-in: guidellm 0.8.1 mock-server)",
    "inference_backend": "acme-serve 1.1",
}
# title, stack label, declared software and configuration changes, run archives, the state it is taken to
EXTENSIONS = (
    (
        REVISION_2_TITLE,
        "acme-serve 1.0",
        "acme-serve 0.9 -> 1.0: continuous batching v2",
        "batch 256 -> 512",
        lambda: [
            run_archive_remeasured(measured_at=32, as_concurrency=16, descriptors_of=16, software=STACK_1_0),
            run_archive_remeasured(measured_at=64, as_concurrency=32, descriptors_of=32, software=STACK_1_0),
        ],
        Status.PUBLISHED,
    ),
    (
        IN_REVIEW_EXTENSION_TITLE,
        "acme-serve 1.1",
        "acme-serve 1.0 -> 1.1: prefix caching",
        "",
        lambda: [
            run_archive_remeasured(measured_at=64, as_concurrency=48, descriptors_of=64, software=STACK_1_1)
        ],
        Status.IN_REVIEW,
    ),
)


def seed_demo_extensions(publication: Publication, users) -> dict[str, Submission]:
    """The AX-8000 result grows: an extension published as its revision 2, another in review (see the module
    docstring). Each goes through the real services: extension_open, upload and check (judged with the published
    curve), waivers, review, audit, publication."""
    submitter = users["demo-submitter"]
    made = {}
    for title, stack, software, configuration, files, state in EXTENSIONS:
        extension = Submission.objects.filter(extends=publication.submission, title=title).first()
        if extension is None:
            extension = extensions.extension_open(
                publication=publication,
                actor=submitter,
                stack=stack,
                software=software,
                configuration=configuration,
                title=title,
            )
        if extension.status == Status.DRAFT:
            demo_version(extension, 1, files, submitter, official=False)
        if state == Status.PUBLISHED and extension.status != Status.PUBLISHED:
            extension = audited_through_review(extension, users, files, kind="run_archives", official=False)
            _publish(extension, submitter, Publication.Mode.NOW)
        elif state == Status.IN_REVIEW and extension.status == Status.DRAFT:
            extension_in_review(extension, users)
        extension.refresh_from_db()
        if extension.status != state:
            raise RuntimeError(f"Demo extension {title!r} is {extension.status}, not {state}.")
        made[title] = extension
    return made


def seed_demo_publications(seed) -> dict[str, Submission]:
    """Publish the demo results (see the module docstring); title -> submission."""
    users = seed.users
    submitter = users["demo-submitter"]
    made = {}
    for title, system_name, files, kind, official, mode in RESULTS:
        submission = demo_submission(system=seed.systems[system_name], title=title, actor=submitter)
        if submission.status != Status.PUBLISHED:
            submission = audited_through_review(submission, users, files, kind=kind, official=official)
            publication = _publish(submission, submitter, mode)
        else:
            publication = submission.publication
        if title in CHALLENGES:
            _challenge(publication, users, *CHALLENGES[title])
        submission.refresh_from_db()
        made[title] = submission
    # The audited AX-8000 (review.demo) waits for the next cohort (1st and 3rd Wednesday, 08:00 US Pacific).
    audited = Submission.objects.get(system=seed.systems["Acme_AX-8000"], title=AUDITED_TITLE)
    _publish(audited, submitter, Publication.Mode.COHORT)
    for title, submission in made.items():
        if submission.status != Status.PUBLISHED:
            raise RuntimeError(f"Demo result {title!r} is {submission.status}, not published.")
    made.update(seed_demo_extensions(made[AX8000_TITLE].publication, users))
    return made
