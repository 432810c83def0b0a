"""The `submit` and `status` subcommands of `portal` and their options (checker.cli.main adds them)."""

from __future__ import annotations

from checker.cli.remote.status import cmd_status
from checker.cli.remote.submit import cmd_submit


def add_url_and_token(parser) -> None:
    parser.add_argument("--url", help="the portal's address (or env PORTAL_URL)")
    parser.add_argument("--token", help="your API token (or env PORTAL_TOKEN)")


def add_commands(sub) -> None:
    """Called by checker.cli.main to add `submit` and `status`."""
    submit = sub.add_parser(
        "submit", help="upload run archives or a bundle to a portal and (optionally) wait"
    )
    submit.add_argument(
        "paths", nargs="+", metavar="PATH", help="run archives, a bundle archive or a bundle folder"
    )
    add_url_and_token(submit)
    submit.add_argument(
        "--system",
        help="your registered system's name (default: the one the files name; register it on the "
        "portal's Systems page first); of a bundle with several, only this system's curve is uploaded",
    )
    submit.add_argument(
        "--benchmark", help="the benchmark's model id, e.g. llama3_1-8b (default: the one the files name)"
    )
    submit.add_argument(
        "--submission",
        type=int,
        help="add a version to this submission (a draft or one with changes requested) instead of a new draft",
    )
    submit.add_argument(
        "--new-draft", action="store_true", help="start a new draft (the default; kept for scripts)"
    )
    submit.add_argument(
        "--extends",
        metavar="EP-ID",
        help="open an extension of this published result of yours (new or re-measured load points) and upload "
        "the files to it (docs/extensions.md)",
    )
    submit.add_argument(
        "--stack", help="with --extends: the software stack the new points carry, e.g. 'acme-serve 1.1'"
    )
    submit.add_argument("--software", help="with --extends: what changed in the serving stack (versions)")
    submit.add_argument(
        "--configuration", help="with --extends: configuration changes (batch size, parallelism…)"
    )
    submit.add_argument("--wait", action="store_true", help="wait for the checks and print the findings")
    submit.add_argument(
        "--json",
        action="store_true",
        help="wait, then print the final status, findings and points as JSON (messages go to stderr)",
    )
    submit.add_argument(
        "--timeout", type=float, default=1800.0, help="seconds to wait with --wait (default 1800)"
    )
    submit.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    submit.set_defaults(func=cmd_submit)

    status = sub.add_parser("status", help="show a submission's latest version and check")
    status.add_argument("submission_id", type=int, metavar="ID")
    add_url_and_token(status)
    status.set_defaults(func=cmd_status)
