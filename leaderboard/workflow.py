"""The workflow tables of the publication, its revisions and challenges (portal.policy): state -> action -> who
may. The leaderboard's services ask `require(...)` of them before they write; the submission's own table (where
`publish` is a row) is review.lifecycle's. `POLICIES` lists every table of the portal, for docs/lifecycle.md and
the permission matrix."""

from __future__ import annotations

from accounts.actors import CHAIR, ORG_MEMBER, SCHEDULE, SPOTCHECK, SUBMITTER
from leaderboard.models import Challenge, Publication, PublicationRevision, RecheckCampaign, RecheckResult
from portal.errors import ConflictError
from portal.policy import Policy, Ready, Rule
from review import lifecycle as review_lifecycle


def _extendable(publication: Publication) -> Ready:
    if not review_lifecycle.SUBMISSION.state_allows(publication.submission, "extend"):
        raise ConflictError("Only a published result can be extended.", code="state-conflict")
    if publication.is_retracted:
        raise ConflictError("A retracted result cannot be extended.", code="result-retracted")
    return Ready()


P = Publication.Status
PUBLICATION = Policy(
    name="publication",
    states=tuple(P.values),
    description="Created `scheduled` by the submitter's choice of date on an audited submission (the submission's "
    "`publish` row); the schedule publishes it when due.",
    rules=(
        Rule(
            "reschedule",
            (P.SCHEDULED,),
            (SUBMITTER,),
            "Choose the date",
            done="rescheduled",
            audited=False,  # `publication.scheduled` records each choice
            needs="the submission is still audited",
        ),
        Rule(
            "publish",
            (P.SCHEDULED,),
            (SUBMITTER, SCHEDULE),
            "Publish",
            target=P.PUBLISHED,
            done="published",
            automatic=True,
            needs="due (now, the embargo date or the cohort's date) and the submission still audited",
        ),
        Rule(
            "cancel",
            (P.SCHEDULED,),
            (SCHEDULE,),
            "Cancel",
            target=P.CANCELLED,
            done="cancelled",
            automatic=True,
            needs="the submission was withdrawn or rejected while it waited",
        ),
        Rule(
            "challenge",
            (P.PUBLISHED,),
            (ORG_MEMBER, CHAIR),
            "Challenge",
            needs="a reason (leaderboard.services.challenge_raise; the chair's from a re-check's report)",
        ),
        Rule(
            "challenge_remeasured",
            (P.PUBLISHED,),
            (SPOTCHECK,),
            "Challenge (re-measurement)",
            automatic=True,
            event="challenge.raised",
            needs="a spot-check of the published curve outside tolerance (leaderboard.services."
            "challenge_raise_remeasured): raised by the portal, with the figures; for the chair to resolve",
        ),
        Rule(
            "retract",
            (P.PUBLISHED,),
            (CHAIR,),
            "Retract",
            reason_required=True,
            needs="a public reason; not retracted already (a challenge's `retract` outcome)",
        ),
        Rule("annotate", (P.PUBLISHED,), (CHAIR,), "Annotate", needs="a public text"),
        Rule(
            "extend",
            (P.PUBLISHED,),
            (SUBMITTER,),
            "Open an extension",
            precondition=_extendable,
            needs="not retracted (409 `result-retracted`); new or re-measured load points in a draft of their "
            "own (docs/extensions.md)",
        ),
    ),
)

R = PublicationRevision.Status
REVISION = Policy(
    name="revision",
    states=tuple(R.values),
    rules=(
        Rule(
            "record",
            (),
            (SUBMITTER, SCHEDULE),
            "Publish",
            target=R.PUBLISHED,
            done="recorded",
            creates=True,
            automatic=True,
            audited=False,  # `publication.published` (or `publication.revised`) records it
            needs="the publication of a result (its revision 1), or of an extension not scheduled before",
        ),
        Rule(
            "reschedule",
            (R.SCHEDULED,),
            (SUBMITTER,),
            "Choose the date",
            done="rescheduled",
            audited=False,  # `publication.revision_scheduled` records each choice
            needs="the extension's submission is still audited",
        ),
        Rule(
            "publish",
            (R.SCHEDULED,),
            (SUBMITTER, SCHEDULE),
            "Publish",
            target=R.PUBLISHED,
            done="published",
            automatic=True,
            audited=False,  # `publication.revised` records it
            needs="due, and the extension's submission still audited",
        ),
        Rule(
            "cancel",
            (R.SCHEDULED,),
            (SCHEDULE,),
            "Cancel",
            target=R.CANCELLED,
            done="cancelled",
            automatic=True,
            needs="the extension was withdrawn or rejected while it waited",
        ),
    ),
)

C = Challenge.Status
CHALLENGE = Policy(
    name="challenge",
    states=tuple(C.values),
    rules=tuple(
        Rule(
            outcome,
            (C.OPEN,),
            (CHAIR,),
            label,
            target=outcome,
            done=outcome,
            reason_required=True,
            needs=needs,
        )
        for outcome, label, needs in (
            (C.DISMISSED, "Dismiss", "a public resolution"),
            (C.ANNOTATED, "Annotate", "a public resolution, shown as an annotation"),
            (C.RETRACTED, "Retract", "a public resolution; the result is retracted"),
        )
    ),
)

RC = RecheckCampaign.Status
RECHECK_CAMPAIGN = Policy(
    name="re-check",
    event_name="recheck",
    states=tuple(RC.values),
    description="Started `running` by the chair (or by the beat schedule with PORTAL_RECHECK_AUTOMATIC) with one "
    "re-check run per published revision (leaderboard.rechecks.recheck_campaign_start); nothing published changes.",
    rules=(
        Rule(
            "report",
            (RC.RUNNING,),
            (SCHEDULE,),
            "Report",
            target=RC.REPORTED,
            done="reported",
            automatic=True,
            needs="every re-check run finished; each result's changes written (the `rechecks-advance` beat task)",
        ),
    ),
)


def _campaign_reported(result: RecheckResult) -> Ready:
    if not result.campaign.in_state("reported"):
        raise ConflictError(
            "The re-check is still running: decide once its report is written.", code="recheck-not-reported"
        )
    return Ready()


RR = RecheckResult.Status
RECHECK_RESULT = Policy(
    name="re-check result",
    states=tuple(RR.values),
    description="The chair's decision on one published revision of a reported re-check; audited, with its reason.",
    rules=tuple(
        Rule(
            action,
            (RR.PENDING,),
            (CHAIR,),
            label,
            target=target,
            done=done,
            reason_required=True,
            precondition=_campaign_reported,
            needs=needs,
            event=f"recheck.{target}",
        )
        for action, target, label, done, needs in (
            ("no_action", RR.NO_ACTION, "No action", "closed with no action", "the report written; a reason"),
            (
                "annotate",
                RR.ANNOTATED,
                "Annotate",
                "annotated",
                "the report written; a public text (leaderboard.services.annotation_add)",
            ),
            (
                "challenge",
                RR.CHALLENGED,
                "Open a challenge",
                "challenged",
                "the report written; a reason (leaderboard.services.challenge_raise)",
            ),
        )
    ),
)

POLICIES = (
    PUBLICATION,
    REVISION,
    CHALLENGE,
    RECHECK_CAMPAIGN,
    RECHECK_RESULT,
)
