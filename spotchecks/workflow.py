"""The workflow table of a spot-check (portal.policy). Who may start one is the submission's table's
`spot_check` row (submissions.workflow): auditors and the chair on a non-draft submission with a declared
endpoint, and the spot-check schedule. The worker moves it; nobody edits a verdict."""

from __future__ import annotations

from django.conf import settings

from accounts.actors import OVERSEER, WORKER
from portal.policy import Policy, Rule
from portal.reconcile import Overdue
from spotchecks.models import SpotCheck

S = SpotCheck.Status
SPOT_CHECK = Policy(
    name="spot-check",
    event_name="spotcheck",
    states=tuple(S.values),
    description="Created `queued` by the submission's `spot_check` row (spotchecks.services.spotcheck_start): one "
    "point of the latest check run or of the published curve, measured again by GuideLLM through the egress guard "
    "on the `spotcheck` queue.",
    rules=(
        Rule("view", tuple(S.values), (OVERSEER,), "View", needs="the submission is not a draft"),
        Rule(
            "run",
            (S.QUEUED,),
            (WORKER,),
            "Measure",
            target=S.RUNNING,
            done="started",
            audited=False,  # the run's end records it: `spotcheck.finished`
            automatic=True,
            needs="the spot-check worker took it (at most once: compare-and-set)",
        ),
        Rule(
            "finish",
            (S.RUNNING,),
            (WORKER,),
            "Finish",
            target=S.WITHIN,
            done="finished",
            automatic=True,
            needs="`within`, `outside` or `inconclusive` from checker.judge.remeasure_stats (a bootstrap interval of "
            "each figure's shortfall against MLPerf's 10 % margin); `unreachable` when the guard "
            "recorded the endpoint unreachable or refused, or nothing completed; `outside` on a published "
            "result opens a challenge for the chair (the publication's `challenge_remeasured` row)",
        ),
        Rule(
            "abandon",
            (S.QUEUED, S.RUNNING),
            (WORKER,),
            "Abandon",
            target=S.ERROR,
            done="abandoned",
            event="spotcheck.finished",
            automatic=True,
            needs="the endpoint's declaration is gone, or GuideLLM failed for another reason than the endpoint",
        ),
    ),
)

POLICIES = (SPOT_CHECK,)


def _lost_detail(entry: Overdue, now) -> dict:
    return {"detail": entry.sentence, "finished_at": now}


# A worker lost mid-measurement (or a `queued` one whose message was lost): past the spotcheck queue's hard time
# limit and ten minutes more since it started (or was created) ends `error`, saying so; never measured twice.
OVERDUE = (
    Overdue(
        kind="spot_check",
        model=SpotCheck,
        policy=SPOT_CHECK,
        action="abandon",
        target=S.ERROR,
        states=(S.QUEUED, S.RUNNING),
        since=("started_at", "created_at"),
        limit_s=lambda: settings.PORTAL_TASK_TIME_LIMITS["spotcheck"][1] + 600,
        code="spotcheck-lost",
        sentence="The spot-check worker stopped before it recorded a verdict (no worker on the spotcheck queue, or "
        "it died mid-run); start another.",
        record=_lost_detail,
        event="spotcheck.lost",
    ),
)
