"""A portal's check run as `portal submit --wait` and `portal status` show it: progress while it runs, the
findings printed or as JSON, and the exit code it means."""

from __future__ import annotations

import sys
import time

from checker.cli.remote.client import (
    EXIT_FAIL,
    EXIT_PASS,
    EXIT_USAGE,
    Client,
)


class CheckProgress:
    """The portal's check while --wait polls it: a bar on a terminal, a plain line per change otherwise."""

    def __init__(self, *, enabled: bool, plain: bool = False):
        self.enabled, self.plain = enabled, plain
        self.last = ""

    def show(self, run: dict) -> None:
        done, total = run.get("progress_done") or 0, run.get("progress_total") or 0
        stage = {"points": "recomputing load points", "rules": "applying the rules"}.get(
            run.get("progress_stage") or "", run.get("progress_stage") or ""
        )
        what = "waiting for a worker" if run.get("status") == "queued" else (stage or run.get("status", ""))
        text = f"checking: {what}, {done}/{total or '?'} points"
        if self.enabled:
            width = 20
            filled = int(width * done / total) if total else 0
            sys.stderr.write(f"\r{text[:50]:<50} [{'#' * filled}{'.' * (width - filled)}]")
            sys.stderr.flush()
        elif self.plain and text != self.last:
            sys.stderr.write(text + "\n")
            sys.stderr.flush()
        self.last = text

    def end(self) -> None:
        if self.enabled and self.last:
            sys.stderr.write("\n")
            sys.stderr.flush()


def _fmt(value, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def print_check_run(run: dict, out=sys.stdout) -> None:
    counts = run.get("counts") or {}
    out.write(
        f"check run {run['id']}: {run['status']}  (attempt {run.get('attempts')}/{run.get('max_attempts')}, "
        f"checker {run.get('checker_version') or '-'}, rules {run.get('ruleset') or '-'})\n"
    )
    if run.get("error_message"):
        out.write(f"  note: {run['error_message']}\n")
    findings = run.get("findings") or []
    if counts:
        out.write(
            f"  {counts.get('error', 0)} error(s), {counts.get('warning', 0)} warning(s), "
            f"{counts.get('info', 0)} note(s)\n"
        )
        # Raw logs already published by the organisation: said first, with what to do (the full finding follows).
        for finding in findings:
            if finding.get("rule") == "raw-log-published":
                out.write(f"  hint: {finding['message'].split(': ', 1)[0]}: {finding.get('fix') or ''}\n")
        portal_only = [f for f in findings if f.get("portal_only")]
        if portal_only:
            out.write(
                f"  {len(portal_only)} of them from rules only the portal runs (marked 'portal only'; "
                "`portal check` on the same files does not report them)\n"
            )
    points = run.get("point_metrics") or []
    if points:
        out.write(
            f"\n  {'point':<38} {'region':<17} {'system_tps':>11} {'tps/user':>10} {'ttft_p90_ms':>12} "
            f"{'claimed_tps':>12}\n"
        )
        for point in points:
            recomputed = point.get("recomputed") or {}
            claimed = point.get("claimed") or {}
            region = point.get("region") or (point.get("extra") or {}).get("region") or "-"
            out.write(
                f"  {point['key'][:38]:<38} {str(region)[:17]:<17} {_fmt(recomputed.get('system_tps')):>11} "
                f"{_fmt(recomputed.get('tps_per_user')):>10} {_fmt(recomputed.get('ttft_p90_ms')):>12} "
                f"{_fmt(claimed.get('system_tps')):>12}\n"
            )
    if findings:
        out.write("\n")
        for finding in findings:
            where = finding.get("file") or finding.get("point") or ""
            if finding.get("line"):
                where += f":{finding['line']}"
            origin = " (portal only)" if finding.get("portal_only") else ""
            out.write(
                f"  {finding['severity'].upper():<7} {finding['rule']}{origin}: {finding['message']}"
                f"{f'  [{where}]' if where else ''}\n"
            )
            if finding.get("fix"):
                out.write(f"          fix: {finding['fix']}\n")


def run_as_json(run: dict | None, *, submission: int, version: dict, url: str) -> dict:
    """What `portal submit --json` prints: where the version is, the check's final status, findings and points."""
    out: dict = {
        "submission": submission,
        "version": version.get("number"),
        "url": url,
        "status": run.get("status") if run else "timeout",
    }
    if run:
        out.update(
            {
                "check_run": run.get("id"),
                "checker_version": run.get("checker_version"),
                "ruleset": run.get("ruleset"),
                "error_message": run.get("error_message") or None,
                "counts": run.get("counts") or {},
                "findings": run.get("findings") or [],
                "points": [
                    {
                        k: point.get(k)
                        for k in ("key", "concurrency", "region", "region_label", "claimed", "recomputed")
                    }
                    for point in run.get("point_metrics") or []
                ],
            }
        )
    return out


def exit_code_for(run: dict | None) -> int:
    if run is None:
        return EXIT_USAGE
    status = run.get("status")
    return (
        # passed_with_waivers: a failed run whose every error has a granted waiver (the portal's verdict)
        {"passed": EXIT_PASS, "passed_with_waivers": EXIT_PASS, "failed": EXIT_FAIL}.get(status, EXIT_USAGE)
        if isinstance(status, str)
        else EXIT_USAGE
    )


def wait_for_check(
    client: Client, version: dict, *, timeout: float, show_progress: bool, plain_progress: bool = False
) -> dict | None:
    deadline = time.monotonic() + timeout
    run_id = (version.get("latest_check_run") or {}).get("id")
    progress = CheckProgress(enabled=show_progress, plain=plain_progress)
    delay = 1.0
    try:
        while time.monotonic() < deadline:
            if run_id is None:
                fresh = client.request("GET", f"versions/{version['id']}/")
                run_id = (fresh.get("latest_check_run") or {}).get("id")
            if run_id is not None:
                run = client.request("GET", f"check-runs/{run_id}/")
                if run["status"] in ("passed", "passed_with_waivers", "failed", "error"):
                    return run
                progress.show(run)
            time.sleep(delay)
            delay = min(delay * 1.5, 5.0)
        return None
    finally:
        progress.end()
