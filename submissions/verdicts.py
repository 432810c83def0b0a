"""One vocabulary for a check and for the official cross-check, decided here and read by every page of every role and
every API answer (docs/published-record.md): **passed**, **passed with N waived**, **failed**, or **not run** with
why in words (never a setting's name). Plain data in, plain data out: the callers read the run's status, its error
count, how many of those have a granted waiver (review.selectors) and the official checker's kept verdict."""

from __future__ import annotations

from typing import Any

_ASKED = object()

NOT_RUN_WHY = {
    None: "no check has run on this version",
    "queued": "the check is waiting for a worker",
    "running": "the check is running",
    "error": "the check could not complete",
}


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def verdict(
    status: str | None, *, errors: int = 0, waived: int = 0, official: Any = _ASKED
) -> dict[str, Any]:
    """The words for a check run of `status` (None: no run) with `errors` error findings, `waived` of them
    covered by a granted waiver: `status` is the API's word (passed, passed_with_waivers, failed, queued, running,
    error, none), `verdict` the vocabulary's (passed, passed with waivers, failed, not run), `label` what a page
    shows, `why` the sentence behind it, `badge` the badge's colour. With `official` (the official checker's
    verdict kept in the run's report, or None when the run kept none) the same words for the cross-check are under
    "official"."""
    if status == "passed":
        words = {"status": "passed", "verdict": "passed", "label": "passed", "why": "no error finding"}
    elif status == "failed" and errors and waived >= errors:
        words = {
            "status": "passed_with_waivers",
            "verdict": "passed with waivers",
            "label": f"passed with {waived} waived",
            "why": f"every error finding ({errors}) has a granted waiver",
        }
    elif status == "failed":
        open_errors = max(errors - waived, 0)
        words = {
            "status": "failed",
            "verdict": "failed",
            "label": "failed",
            "why": _plural(open_errors, "error finding")
            + " without a granted waiver"
            + (f" ({waived} waived)" if waived else ""),
        }
    else:
        why = NOT_RUN_WHY.get(status, "the check did not run")
        words = {
            "status": status or "none",
            "verdict": "not run",
            "label": f"not run yet: {why}" if status in ("queued", "running") else f"not run: {why}",
            "why": why,
        }
    words.update(badge="passed" if words["status"] == "passed_with_waivers" else words["status"])
    words.update(errors=errors, waived=waived)
    if official is not _ASKED:
        words["official"] = _official(official, words)
    return words


def _official(official: dict | None, check: dict[str, Any]) -> dict[str, Any]:
    """The official checker's verdict on the same files, in the same words."""
    if not isinstance(official, dict):
        why = "this check was made without the cross-check with the official checker"
    elif official.get("available") is False:
        why = "the official checker is not installed on the portal's check workers"
    elif not official.get("ran"):
        why = "the official checker could not run on these files" + (
            f" ({official['problem']})" if official.get("problem") else ""
        )
    else:
        errors = int(official.get("errors") or 0)
        version = official.get("version") or ""
        if official.get("passed"):
            return {
                "status": "passed",
                "label": "passed",
                "why": "no error on the same files",
                "version": version,
            }
        why = _plural(errors, "error") + " on the same files"
        if check["status"] == "passed_with_waivers":
            why += (
                f"; the official checker knows no waivers, and the portal's check passed with {check['waived']} "
                "waived"
            )
        return {"status": "failed", "verdict": "failed", "label": "failed", "why": why, "version": version}
    return {"status": "not_run", "verdict": "not run", "label": f"not run: {why}", "why": why, "version": ""}
