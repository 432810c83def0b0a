"""The workflow table of a preview (portal.policy): the check finishes it, its organisation re-checks or deletes
it. A preview has no review, no audit and no publication: nothing in this table leads to the public board."""

from __future__ import annotations

from accounts.actors import MEMBER, SUBMITTER, WORKER
from portal.policy import Policy, Rule
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
