"""The workflow table of a preview (portal.policy): the check finishes it, its organisation re-checks or deletes
it. A preview has no review, no audit and no publication: nothing in this table leads to the public board."""

from __future__ import annotations

from django.conf import settings

from accounts.actors import MEMBER, SUBMITTER, WORKER
from portal.policy import Policy, Rule
from portal.reconcile import Overdue
from previews.models import Preview

S = Preview.Status
PREVIEW = Policy(
    name="preview",
    states=tuple(S.values),
    description="Created `checking` by an upload of another tool's output (previews.services.preview_create); "
    "private to its organisation and never a submission.",
    rules=(
        Rule("view", tuple(S.values), (MEMBER,), "View", needs="a member of the organisation"),
        Rule(
            "finish",
            (S.CHECKING,),
            (WORKER,),
            "Finish the check",
            target=S.CHECKED,
            done="checked",
            automatic=True,
            needs="the importer read at least one load point (`failed` when nothing was usable)",
        ),
        Rule(
            "recheck",
            (S.CHECKED, S.FAILED),
            (SUBMITTER,),
            "Re-check",
            target=S.CHECKING,
            done="re-checked",
        ),
        Rule("delete", (S.CHECKED, S.FAILED), (SUBMITTER,), "Delete", needs="the check has finished"),
    ),
)

POLICIES = (PREVIEW,)


def _lost_finding(entry: Overdue, now) -> dict:
    return {
        "result": {},
        "curve": {},
        "findings": [
            {"rule": entry.code, "severity": "error", "message": entry.sentence, "fix": PREVIEW_RETRY}
        ],
        "error_count": 1,
        "checked_at": now,
    }


PREVIEW_RETRY = (
    "Re-check the preview; if it fails again, delete it and upload the tool's files exactly as it wrote them."
)
# A check lost (no worker, a message lost, a worker killed mid-check): `checking` past the judge queue's hard time
# limit and ten minutes more ends `failed`.
OVERDUE = (
    Overdue(
        kind="preview",
        model=Preview,
        policy=PREVIEW,
        action="finish",
        target=S.FAILED,
        states=(S.CHECKING,),
        since=("checking_since",),
        limit_s=lambda: settings.PORTAL_TASK_TIME_LIMITS["judge"][1] + 600,
        code="preview-check-lost",
        sentence="The check's worker stopped before it finished (no worker on the judge queue, or it died "
        "mid-check); the files are kept.",
        record=_lost_finding,
    ),
)
