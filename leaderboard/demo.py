"""The publication part of `manage.py seed_demo`: results on the public leaderboard, through the real process.

| title (the marker) | state | how |
|---|---|---|
| AX-8000 from its seven run archives | audited, awaiting its cohort | review.demo's audited flow; `cohort` chosen |
| NB-2 published, annotated | published | NimbusCloud's seven real runs; audited, published; Zephyr challenges, the chair annotates |
| AX-8000 published | published | audited (waivers granted, attested), published now |
| AX-4000 preview, retracted | published, retracted | bundle; published now; challenged, the chair retracts |
| AX-4000 published | published | the sample bundle, audited, published now |
| AX-8000 extension: acme-serve 1.1 re-measures r16, r32 | published as revision 2 of AX-8000 published | real runs |
| AX-8000 extension: acme-serve 1.1 adds r48 | in review | a real run (revision 3 once published) |
| Zephyr ZX-2 agentic coding curve | published | Zephyr Silicon's real agentic runs (r1, r2, r8) on their own board, the Qwen3.6-35B-A3B agentic benchmark under the preview rule set |

The extension runs are the real acme-serve 1.1 runs of the AX-8000 (tests/checker/fixtures/extension/), uploaded as
the client and the official builder wrote them; NB-2's are NimbusCloud's (fixtures/second-system/).

Every step goes through review.services and leaderboard.publishing.services (waiver requests and grants, two approvals,
evidence, attestation, publication_schedule, challenge_raise, challenge_resolve), in publication order, so the
systems' histories read oldest first. Each step is skipped when it was already taken: safe to run again.
Unreleased-Z9 stays in review, unpublished.
"""

from __future__ import annotations

from catalog.models import Benchmark
from catalog.services import benchmark_create
from leaderboard.models import Challenge, Publication
from leaderboard.publishing import extensions, services
from review.demo import (
    AUDITED_TITLE,
    TEAMS,
    audited_through_review,
    demo_submission,
    demo_version,
    extension_in_review,
)
from submissions.demo_submissions import (
    AGENTIC_MODEL_ID,
    agentic_files,
    bundle_archive_for_system,
    extension_archive_files,
    run_archive_files,
    second_system_files,
    system_description_of,
)
from submissions.models import Submission, System
from submissions.services import system_register

Status = Submission.Status

ANNOTATED_TITLE = "Demo: Nimbus NB-2 published (annotated after a challenge)"
NB2_SYSTEM = "Nimbus_NB-2"
AX8000_TITLE = "Demo: AX-8000 published"
RETRACTED_TITLE = "Demo: AX-4000 preview (retracted after a challenge)"
AX4000_TITLE = "Demo: AX-4000 published from the sample bundle"

CHALLENGES = {
    ANNOTATED_TITLE: (
        "From c16 to c64 the NB-2's throughput stays flat while its TTFT P90 rises elevenfold: are the c32 and "
        "c64 points limited by the load generator rather than the system?",
        Challenge.Status.ANNOTATED,
        "NimbusCloud's raw logs show 32 and 64 requests in flight, as declared: the NB-2's two accelerators are "
        "saturated from c16 on and the extra requests queue. The numbers stand; its Pareto front ends at r16.",
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
    (ANNOTATED_TITLE, NB2_SYSTEM, second_system_files, "run_archives", False, Publication.Mode.NOW),
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
    if challenge.in_state("open"):
        services.challenge_resolve(
            challenge=challenge, actor=users["demo-chair"], outcome=outcome, text=resolution
        )


REVISION_2_TITLE = "Demo: AX-8000 extension: acme-serve 1.1 re-measures r16 and r32"
IN_REVIEW_EXTENSION_TITLE = "Demo: AX-8000 extension: acme-serve 1.1 adds r48"
STACK = "acme-serve 1.1"
SOFTWARE_CHANGE = "acme-serve 0.9 -> 1.1: lower time to first token and inter-token latency"
# title, stack label, declared software and configuration changes, run archives, the state it is taken to
EXTENSIONS = (
    (REVISION_2_TITLE, STACK, SOFTWARE_CHANGE, "", lambda: extension_archive_files(16, 32), Status.PUBLISHED),
    (
        IN_REVIEW_EXTENSION_TITLE,
        # The same stack as revision 2's points, labelled apart so its unpublished point is told from them.
        STACK + " (r48)",
        SOFTWARE_CHANGE + " (the stack of revision 2's points)",
        "",
        lambda: extension_archive_files(48),
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
        if extension.in_state("draft"):
            demo_version(extension, 1, files, submitter, official=False)
        if state == Status.PUBLISHED and not extension.in_state("published"):
            extension = audited_through_review(extension, users, files, kind="run_archives", official=False)
            _publish(extension, submitter, Publication.Mode.NOW)
        elif state == Status.IN_REVIEW and extension.in_state("draft"):
            extension_in_review(extension, users)
        extension.refresh_from_db()
        if not extension.in_state(state):
            raise RuntimeError(f"Demo extension {title!r} is {extension.status}, not {state}.")
        made[title] = extension
    return made


AGENTIC_TITLE = "Demo: Zephyr ZX-2 agentic coding curve (Qwen3.6-35B-A3B)"
AGENTIC_SYSTEM = "Zephyr_ZX-2"


def seed_demo_agentic(seed) -> Submission:
    """Zephyr Silicon's agentic coding curve: the chair adds the Qwen3.6-35B-A3B agentic benchmark (its tokenizer the
    sample folder the runs were counted with, chat template included; the preview rule set, as every demo result),
    Zephyr registers the ZX-2, uploads its three real agentic runs, and the result goes through review and audit to
    its own board, where system throughput is drawn against e2e_interactivity."""
    users = seed.users
    benchmark = Benchmark.objects.filter(model_id=AGENTIC_MODEL_ID).first() or benchmark_create(
        model_id=AGENTIC_MODEL_ID,
        display_name="Qwen3.6-35B-A3B (agentic coding)",
        dataset="Agentic coding sessions (multi-turn, tool calls)",
        workload=Benchmark.Workload.AGENTIC_CODING,
        tokenizer_path="sample-bpe-4k",
        tokenizer_is_placeholder=True,
        ruleset_version="endpoints-v1.0-preview",
        actor=users["demo-chair"],
    )
    zephyr, submitter = seed.organisations["zephyr-silicon"], users["demo-zephyr"]
    system = System.objects.filter(organisation=zephyr, name=AGENTIC_SYSTEM).first() or system_register(
        organisation=zephyr,
        name=AGENTIC_SYSTEM,
        description=system_description_of(agentic_files()),
        actor=submitter,
    )
    seed.systems[AGENTIC_SYSTEM] = system
    submission = demo_submission(
        system=system, title=AGENTIC_TITLE, actor=submitter, model_id=benchmark.model_id
    )
    if not submission.in_state("published"):
        submission = audited_through_review(
            submission, users, agentic_files, kind="run_archives", official=False
        )
        _publish(submission, submitter, Publication.Mode.NOW)
    submission.refresh_from_db()
    if not submission.in_state("published"):
        raise RuntimeError(f"Demo result {AGENTIC_TITLE!r} is {submission.status}, not published.")
    return submission


def seed_demo_publications(seed) -> dict[str, Submission]:
    """Publish the demo results (see the module docstring); title -> submission."""
    users = seed.users
    submitter = users["demo-submitter"]
    made = {}
    for title, system_name, files, kind, official, mode in RESULTS:
        system = seed.systems[system_name]
        owner = users[TEAMS[system.organisation.slug][0]]
        submission = demo_submission(system=system, title=title, actor=owner)
        if not submission.in_state("published"):
            submission = audited_through_review(submission, users, files, kind=kind, official=official)
            publication = _publish(submission, owner, mode)
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
        if not submission.in_state("published"):
            raise RuntimeError(f"Demo result {title!r} is {submission.status}, not published.")
    made.update(seed_demo_extensions(made[AX8000_TITLE].publication, users))
    made[AGENTIC_TITLE] = seed_demo_agentic(seed)
    return made
