"""The workflow table of a spot-check (portal.policy). Who may start one is the submission's table's
`spot_check` row (submissions.workflow): auditors and the chair on a non-draft submission with a declared
endpoint, and the spot-check schedule. The worker moves it; nobody edits a verdict."""

from __future__ import annotations

from accounts.actors import OVERSEER, WORKER
from portal.policy import Policy, Rule
from spotchecks.models import SpotCheck

S = SpotCheck.Status
SPOT_CHECK = Policy(
    name="spot-check",
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
            needs="`within` or `outside` from checker.judge.remeasure.compare_point; `unreachable` when the guard "
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
            automatic=True,
            needs="the endpoint's declaration is gone, or GuideLLM failed for another reason than the endpoint",
        ),
    ),
)

POLICIES = (SPOT_CHECK,)
