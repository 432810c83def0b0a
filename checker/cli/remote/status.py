"""`portal status SUBMISSION_ID`: a submission's latest version and its check, read from a portal."""

from __future__ import annotations

import sys

from checker.cli.remote.check_runs import exit_code_for, print_check_run
from checker.cli.remote.client import (
    EXIT_USAGE,
    RemoteError,
    client_from_args,
    portal_url,
    token_refused,
    web_address,
)


def cmd_status(args) -> int:
    try:
        client = client_from_args(args)
        submission = client.request("GET", f"submissions/{args.submission_id}/")
        version = submission.get("latest_version")
        print(
            f"submission {submission['id']} ({submission['organisation']}/{submission['system']}/"
            f"{submission['benchmark']}): {submission['status']}\n"
            f"  on the web: {web_address(portal_url(args), submission['id'])}"
        )
        if version is None:
            print("no version uploaded yet")
            return EXIT_USAGE
        print(f"version {version['number']}: {version['size_bytes']} bytes, sha256 {version['sha256']}")
        summary = version.get("latest_check_run")
        if summary is None:
            print("no check run yet")
            return EXIT_USAGE
        run = client.request("GET", f"check-runs/{summary['id']}/")
        print_check_run(run)
        return exit_code_for(run)
    except RemoteError as exc:
        print(f"portal status: {token_refused(exc, portal_url(args)) or exc}", file=sys.stderr)
        return EXIT_USAGE
