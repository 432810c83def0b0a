"""Rules only the portal can run: they need what the portal knows about the submission (plain data here).

- `submission-scope` (error): every load point must be of the submission's system and model.
- `system-desc-mismatch` (warning): the system_desc.json the points carry should be the registered
  description of the system, naming the top-level keys that differ.
- `raw-log-reused` (error): a raw log is also a point of a submission of another system.
- `raw-log-published` (warning): raw logs the organisation already published (as EP-...): extend that result or
  open a revision of it instead of publishing the same runs twice.

`portal check` on a laptop knows no submission, so it never reports these (docs/rules.md lists them as
portal-only); the pipeline runs them in judge_version when given a SubmissionScope.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from checker.judge.ruleset import RulesetError, load_ruleset
from checker.read.inputs import Layout, Limits
from checker.read.loaders import load_json
from checker.report import Findings

PORTAL_ONLY_RULES = ("submission-scope", "system-desc-mismatch", "raw-log-reused", "raw-log-published")


@dataclass(frozen=True)
class ReusedRawLog:
    """One of the version's raw logs that the portal also holds under a point of a submission of another system."""

    point: str  # this version's point key
    elsewhere: str  # how messages name the other submissions and points, e.g. "submission #12 (S/m/r32)"
    other_organisation: bool = (
        False  # every one of them is another organisation's (nothing of ours to move to)
    )


@dataclass(frozen=True)
class PublishedRawLogs:
    """Raw logs of this version that the same organisation already published in a result (any revision of it)."""

    public_id: str  # e.g. "EP-00012"
    points: tuple[str, ...]  # this version's point keys whose raw log that result holds


@dataclass(frozen=True)
class SubmissionScope:
    """What the portal knows about the submission a version belongs to."""

    submission_label: str  # how messages name the submission, e.g. "submission #12"
    system: str
    model: str
    registered_description: dict[str, Any] = field(default_factory=dict)  # empty: nothing registered
    registered_revision: int | None = None
    # The portal's lookup of this version's raw-log digests in submissions of other systems (rule raw-log-reused)
    raw_logs_elsewhere: tuple[ReusedRawLog, ...] = ()
    # The same lookup in the organisation's own published results (rule raw-log-published)
    raw_logs_published: tuple[PublishedRawLogs, ...] = ()


def check_raw_log_reuse(layout: Layout, *, scope: SubmissionScope, findings: Findings) -> None:
    """raw-log-reused: a raw log of this version is also a point of a submission of another system."""
    displays = {point.key: point.display_of("events") for point in layout.points}
    for reused in scope.raw_logs_elsewhere:
        display = displays.get(reused.point, reused.point)
        if reused.other_organisation:
            findings.error(
                "raw-log-reused",
                f"{display} of {reused.point} is also the raw log of {reused.elsewhere}: a run counts for the "
                f"organisation and the system that made it, once. Upload the raw log of a run your organisation made "
                f"on {scope.system} for this point (run the point again if you have none). If this run is yours and "
                "another organisation uploaded it, tell the chair: the portal keeps both uploads' SHA-256.",
                file=display,
                point=reused.point,
                fix=f"Upload the raw log of a run your organisation made on {scope.system} for this point; if the "
                "run is yours and another organisation uploaded it, tell the chair.",
            )
            continue
        findings.error(
            "raw-log-reused",
            f"{display} of {reused.point} is also the raw log of {reused.elsewhere}, of another system: one run "
            f"cannot stand for two systems. Upload the raw log of the run made on {scope.system} for this point "
            f"(run the point again on it if you have none); if it is the same machine, submit under the system "
            f"those results were registered as.",
            file=display,
            point=reused.point,
            fix=f"Upload the raw log of the run made on {scope.system} for this point; if it is the same machine, "
            "submit under the system those results were registered as.",
        )


def check_raw_logs_published(layout: Layout, *, scope: SubmissionScope, findings: Findings) -> None:
    """raw-log-published: raw logs of this version that the organisation already published; one finding per
    published result, naming the points and what to do instead of a second result of the same runs."""
    displays = {point.key: point.display_of("events") for point in layout.points}
    for published in scope.raw_logs_published:
        points = sorted(published.points)
        shown = ", ".join(points[:4]) + (f" and {len(points) - 4} more" if len(points) > 4 else "")
        findings.warning(
            "raw-log-published",
            f"Already published as {published.public_id}: the raw log{'s' if len(points) > 1 else ''} of "
            f"{shown} {'are' if len(points) > 1 else 'is'} the same run{'s' if len(points) > 1 else ''} (same "
            f"SHA-256) as that result's. Extend it or open a revision: new load points, and re-measurements of "
            f"published ones, go into an extension of {published.public_id} (`portal submit ARCHIVES --extends "
            f'{published.public_id} --stack TEXT`, or "Add points to {published.public_id}" on its submission '
            "page), which publishes as its next revision; a second result of the same runs is a duplicate.",
            file=displays.get(points[0], points[0]),
            point=points[0] if len(points) == 1 else None,
            fix=f"Withdraw this draft; upload only the new or re-measured points' archives with `portal submit "
            f"ARCHIVES --extends {published.public_id} --stack TEXT` (a revision of {published.public_id}).",
        )


def check_submission_scope(layout: Layout, *, scope: SubmissionScope, findings: Findings) -> None:
    """Every load point must belong to the submission's system and model."""
    expected = f"{scope.system}/{scope.model}"
    for point in sorted(layout.points, key=lambda p: (p.system, p.model, p.concurrency)):
        found = f"{point.system}/{point.model}"
        if found == expected:
            continue
        differing = [
            name
            for name, differs in (
                ("system", point.system != scope.system),
                ("model", point.model != scope.model),
            )
            if differs
        ]
        verb = "differs" if len(differing) == 1 else "differ"
        findings.error(
            "submission-scope",
            f"{point.display}: this load point is for {found}, but {scope.submission_label} is for "
            f"{expected} (the {' and '.join(differing)} {verb}).",
            file=point.display,
            point=point.key,
            fix=f"Upload only run archives (or a bundle) of {expected} to this submission. Results of {found} "
            f"belong in their own submission: create one for that system and benchmark on the dashboard "
            f"(register the system on the Systems page first if it is new).",
        )


def _identity(description: dict[str, Any], per_point_keys: set[str]) -> dict[str, Any]:
    """The keys that name the system: per-point keys (parallelism, batch...) and unset (null) keys left out."""
    return {k: v for k, v in description.items() if k not in per_point_keys and v is not None}


def _per_point_keys(ruleset: str) -> set[str]:
    try:
        keys = load_ruleset(ruleset).get("disclosure", "system_desc_per_point", default=[])
    except RulesetError:
        return set()
    return set(keys or [])


def check_registered_description(
    layout: Layout, *, scope: SubmissionScope, ruleset: str, findings: Findings
) -> None:
    """The points' system_desc.json against the registered description: one warning per distinct copy."""
    if not scope.registered_description:
        return
    per_point = _per_point_keys(ruleset)
    registered = _identity(scope.registered_description, per_point)
    expected = f"{scope.system}/{scope.model}"
    copies: dict[str, dict[str, Any]] = {}  # canonical JSON -> {"description", "displays", "points"}
    for point in sorted(layout.points, key=lambda p: (p.system, p.model, p.concurrency)):
        path = point.files.get("system_desc.json")
        if path is None or f"{point.system}/{point.model}" != expected:
            continue
        # An unreadable copy already has its own finding from the schema step: read it quietly here.
        uploaded = load_json(
            path, display=point.display_of("system_desc.json"), findings=Findings(), limits=Limits()
        )
        if not isinstance(uploaded, dict):
            continue
        uploaded = _identity(uploaded, per_point)
        if uploaded == registered:
            continue
        canonical = json.dumps(uploaded, sort_keys=True, default=str)
        copy = copies.setdefault(canonical, {"description": uploaded, "displays": [], "points": []})
        copy["displays"].append(point.display_of("system_desc.json"))
        copy["points"].append(point.key)
    revision = f" (revision {scope.registered_revision})" if scope.registered_revision else ""
    for copy in copies.values():
        keys = sorted(
            key
            for key in set(registered) | set(copy["description"])
            if registered.get(key) != copy["description"].get(key)
        )
        others = len(copy["displays"]) - 1
        also = f" (and the copies of {others} more point{'s' if others != 1 else ''})" if others else ""
        findings.warning(
            "system-desc-mismatch",
            f"{copy['displays'][0]}{also} differs from the registered description of {scope.system}{revision} "
            f"in the top-level key{'s' if len(keys) != 1 else ''} {', '.join(keys)}.",
            file=copy["displays"][0],
            point=copy["points"][0] if len(copy["points"]) == 1 else None,
            fix=f"If the system changed, give {scope.system} the new system_desc.json on its system page (a new, "
            "audited revision); otherwise upload results made with the registered description.",
        )


# Findings the portal's check adds to what `portal check` prints on the same files: the portal-only rules above,
# and the official checker's cross-check, which the portal always runs (`portal check --official` adds it too;
# on run archives the cross-check first assembles the official bundle, whose `assembly-*` notes come with it).
CROSS_CHECK_RULES = ("official-checker-disagreement", "official-checker-unavailable")


def finding_origin(rule: str) -> str:
    """'portal' for a portal-only rule, 'official' for the official cross-check's notes, '' for every other rule
    (which `portal check` reports on the same files)."""
    if rule in PORTAL_ONLY_RULES:
        return "portal"
    if rule in CROSS_CHECK_RULES or rule.startswith("assembly-"):
        return "official"
    return ""
