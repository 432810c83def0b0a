"""`portal submit`: upload run archives or a bundle to a portal over its HTTP API (stdlib only, no Django);
`portal status` is checker.cli.remote.status.

    portal submit PATH... --url URL --token TOKEN [--system NAME] [--benchmark ID] [--submission ID]
                  [--extends EP-ID --stack TEXT [--software TEXT] [--configuration TEXT]]
                  [--wait] [--json] [--timeout S]
    portal status SUBMISSION_ID --url URL --token TOKEN

PORTAL_URL and PORTAL_TOKEN may replace --url and --token. Where it goes: --submission ID adds a version to that
submission (a draft, or one with changes requested); otherwise a new draft is created for the system and
benchmark the files name (every load point names both) unless --system/--benchmark say them, and it says so
before uploading, naming the caller's drafts of that system and benchmark already open. It asks for
--system/--benchmark only when the files name several (or none); given, they select that curve out of a bundle that
holds others (only its results/<system>/<model>/ folders are uploaded). --extends EP-ID opens an extension of that
published result (docs/extensions.md) and uploads the files as its first version. It prints the submission's web
address. What is uploaded:
  * one archive file: as is;
  * a folder (a bundle, or a run folder): packed into a .tar.gz made in a temporary folder;
  * several paths: each becomes one file of the same version (a set of run archives), each file its
    own chunked upload, the last finish joining them.
Each file is sent in the server's part size, with an Idempotency-Key per request; a failed part is
retried with backoff, and before retrying the client re-asks which parts the server already holds,
so an interrupted upload resumes. Across invocations too: before starting a file, the client asks the
server for an upload of the same file (SHA-256 + size) it started for the same draft (or for the same
system + benchmark) that is still open or verified, and continues it, sending only the missing parts.
The server is the only state (nothing is written on this machine); a folder is packed reproducibly so
its archive hashes the same on every run. Exit codes: 0 the check passed, 1 it found errors, 2 usage or
transport failure (also when the check could not run, or --wait timed out).
"""

from __future__ import annotations

import json
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

from checker.cli.remote.check_runs import exit_code_for, print_check_run, run_as_json, wait_for_check
from checker.cli.remote.client import (
    EXIT_PASS,
    EXIT_USAGE,
    Client,
    RemoteError,
    TokenProblem,
    client_from_args,
    portal_url,
    token_refused,
    web_address,
)
from checker.cli.remote.uploads import pack, upload_file


def register_system_hint(base_url: str, system: str) -> str:
    """What to do when the portal has no system of that name for the caller's organisation."""
    base = base_url.rstrip("/")
    return (
        f"the portal has no system {system!r} in your organisation(s), so it cannot create a draft for it.\n"
        f"  Register it once, with its system_desc.json (the one in your run folders):\n"
        f'    - in the browser: {base}/systems/ ("Register a system"), or\n'
        f'    - from a script: POST {base}/api/v1/systems/ with {{"name": "{system}", "description": '
        f'<system_desc.json>}} (add "organisation": SLUG if you belong to several);\n'
        f"  then run the same `portal submit` command again. Check the spelling: the name is the "
        f"results/<system>/ folder name, e.g. Acme_AX-8000."
    )


def system_exists(client: Client, system: str) -> bool | None:
    """True/False when the portal says whether the caller's organisations have this system; None when it cannot
    tell (an older portal without /systems/)."""
    try:
        me = client.request("GET", "me/")
        found = client.request("GET", "systems/?" + urllib.parse.urlencode({"name": system}))
    except RemoteError as exc:
        if exc.http_status == 404:
            return None
        raise
    own = set((me or {}).get("organisations") or {})
    rows = found.get("results", []) if isinstance(found, dict) else (found or [])
    return any(row.get("organisation") in own or (me or {}).get("chair") for row in rows)


def files_target(paths: list[Path]) -> list[tuple[str, str]]:
    """The (system, benchmark) pairs the files' load points name, read as `portal check` reads them (archives
    unpacked into a temporary folder, with the checker's limits); unknown names are left out."""
    from checker.read.inputs import Limits, open_inputs
    from checker.report import Findings

    with tempfile.TemporaryDirectory(prefix="portal-submit-read-") as sandbox:
        layout = open_inputs(
            list[str | Path](paths), workdir=Path(sandbox), limits=Limits(), findings=Findings()
        )
        return sorted(
            {
                (point.system, point.model)
                for point in layout.points
                if point.system != "unknown-system" and point.model != "unknown-model"
            }
        )


class Ambiguous(Exception):
    """The target cannot be chosen without the user: the message says which option to give."""


def choose_target(args, paths: list[Path], pairs: list[tuple[str, str]]) -> tuple[str, str, str]:
    """(system, benchmark, how they were found) from the options, else from what the files name (`pairs`)."""
    if args.system and args.benchmark:
        return args.system, args.benchmark, "given"
    systems = sorted({system for system, _ in pairs})
    models = sorted({model for _, model in pairs})
    system = args.system or (systems[0] if len(systems) == 1 else None)
    benchmark = args.benchmark or (models[0] if len(models) == 1 else None)
    problems = []
    if system is None:
        problems.append(
            f"the files name {len(systems)} systems ({', '.join(systems)}): give --system NAME"
            if systems
            else "no system could be read from the files: give --system NAME (your registered system)"
        )
    if benchmark is None:
        problems.append(
            f"the files name {len(models)} benchmarks ({', '.join(models)}): give --benchmark ID"
            if models
            else "no benchmark could be read from the files: give --benchmark ID (e.g. llama3_1-8b)"
        )
    if problems or system is None or benchmark is None:
        raise Ambiguous("; ".join(problems) + " (or --submission ID to add a version to a draft)")
    return system, benchmark, "read from the files"


def open_drafts(client: Client, system: str, benchmark: str) -> list[dict]:
    """The caller's organisations' submissions of this system and benchmark that take a new version."""
    me = client.request("GET", "me/") or {}
    query = [
        ("system", system),
        ("benchmark", benchmark),
        ("status", "draft"),
        ("status", "changes_requested"),
    ]
    found = client.request("GET", "submissions/?" + urllib.parse.urlencode(query))
    rows = found.get("results", []) if isinstance(found, dict) else (found or [])
    own = set(me.get("organisations") or {})
    return [row for row in rows if row.get("organisation") in own]


def cmd_submit(args) -> int:
    paths = [Path(p) for p in args.paths]
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        print(f"portal submit: no such file or folder: {', '.join(missing)}", file=sys.stderr)
        return EXIT_USAGE
    as_json = bool(args.json)
    wait = args.wait or as_json
    terminal = sys.stderr.isatty()
    show_progress = terminal and not args.quiet
    plain_progress = not terminal and not args.quiet
    info = sys.stderr if as_json else sys.stdout  # with --json, stdout holds only the JSON
    base_url = portal_url(args)
    try:
        client = client_from_args(args)
        submission = args.submission
        start_fields: dict = {}
        pairs = files_target(paths)
        curve = None
        if submission is None and args.extends:
            submission = _extension_opened(args, client, base_url)
            if submission is None:
                return EXIT_USAGE
        if submission is None:
            new_draft = _new_draft_fields(args, client, paths, base_url, pairs)
            if new_draft is None:
                return EXIT_USAGE
            start_fields = new_draft
            curve = (new_draft["system"], new_draft["benchmark"])
        elif args.system and args.benchmark:
            curve = (args.system, args.benchmark)
        elif args.system and len({model for _, model in pairs}) == 1:
            curve = (args.system, pairs[0][1])
        if curve is not None and set(pairs) <= {curve}:
            curve = None  # nothing else in the files: upload them as they are
        elif curve is not None and not args.quiet:
            others = ", ".join(f"{system}/{model}" for system, model in pairs if (system, model) != curve)
            print(
                f"portal submit: uploading the {curve[0]}/{curve[1]} curve only (leaving out {others})",
                file=info,
            )
        run_key = uuid.uuid4().hex
        with tempfile.TemporaryDirectory(prefix="portal-submit-") as workdir:
            files = pack(paths, Path(workdir), curve=curve)
            include: list[str] = []
            finished: dict | None = None
            for position, path in enumerate(files):
                last = position == len(files) - 1
                finished = upload_file(
                    client,
                    path,
                    submission=submission,
                    start_fields=start_fields,
                    run_key=run_key,
                    create_version=last,
                    include=include,
                    show_progress=show_progress,
                    quiet=args.quiet,
                    plain_progress=plain_progress,
                )
                submission = finished["upload"]["submission"]
                start_fields = {}
                include.append(finished["upload"]["id"])
        assert finished is not None and submission is not None  # pack() returns a file per given path
        version = finished["version"]
        address = web_address(base_url, submission, version["number"])
        print(
            f"submission {submission}: version {version['number']} uploaded "
            f"({version['size_bytes']} bytes, sha256 {version['sha256']})\n"
            f"  on the web: {address}",
            file=info,
        )
        if not wait:
            return EXIT_PASS
        run = wait_for_check(
            client, version, timeout=args.timeout, show_progress=show_progress, plain_progress=plain_progress
        )
        if as_json:
            sys.stdout.write(
                json.dumps(run_as_json(run, submission=submission, version=version, url=address), indent=2)
                + "\n"
            )
        if run is None:
            print(
                f"portal submit: the check did not finish within {args.timeout:g} s; "
                f"see `portal status {submission}` or {address}",
                file=sys.stderr,
            )
            return EXIT_USAGE
        if not as_json:
            print_check_run(run)
            print(f"\nFindings, point table and curve: {address}")
        return exit_code_for(run)
    except TokenProblem as exc:
        print(f"portal submit: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except RemoteError as exc:
        return _refused(exc, args, base_url)


def _extension_opened(args, client: Client, base_url: str) -> int | None:
    """`--extends EP-…`: open an extension of that published result (docs/extensions.md) and return its draft's
    id, said on stderr; None (the reason printed) when the result is not the caller's or cannot be extended."""
    if not args.stack:
        print(
            "portal submit: --extends needs --stack TEXT, the software stack the new points carry on the curve "
            "(e.g. --stack 'acme-serve 1.1'; say what changed with --software)",
            file=sys.stderr,
        )
        return None
    found = client.request("GET", "submissions/?" + urllib.parse.urlencode({"result": args.extends}))
    rows = found.get("results", []) if isinstance(found, dict) else (found or [])
    if not rows:
        print(
            f"portal submit: {args.extends} is not a published result of your organisation "
            f"(see {base_url.rstrip('/')}/results/{args.extends}/)",
            file=sys.stderr,
        )
        return None
    fields = {"stack": args.stack, "software": args.software or "", "configuration": args.configuration or ""}
    opened = client.request("POST", f"submissions/{rows[0]['id']}/extend/", body=fields)
    if not args.quiet:
        print(
            f"portal submit: extension of {args.extends} opened: draft #{opened['id']} ({args.stack}); its points "
            "are checked with the published curve",
            file=sys.stderr,
        )
    return int(opened["id"])


def _new_draft_fields(
    args, client: Client, paths: list[Path], base_url: str, pairs: list[tuple[str, str]]
) -> dict | None:
    """The system and benchmark of the new draft, said on stderr with the caller's drafts already open; None
    (the reason printed) when they cannot be chosen or the portal has no such system."""
    try:
        system, benchmark, how = choose_target(args, paths, pairs)
    except Ambiguous as exc:
        print(f"portal submit: {exc}", file=sys.stderr)
        return None
    if system_exists(client, system) is False:
        print(f"portal submit: {register_system_hint(base_url, system)}", file=sys.stderr)
        return None
    # A new draft unless told which submission to add to: never a guess at an older one.
    where = "creating a new draft"
    drafts = open_drafts(client, system, benchmark)
    if drafts:
        listed = ", ".join(f"#{d['id']} ({d['status']})" for d in drafts)
        where += (
            f" (open already: {listed}; to add a version to one instead, run again with "
            f"--submission {drafts[0]['id']})"
        )
    if not args.quiet:
        print(f"portal submit: {system} on {benchmark} ({how}); {where}", file=sys.stderr)
    return {"system": system, "benchmark": benchmark}


def _refused(exc: RemoteError, args, base_url: str) -> int:
    """What to tell the user when the portal refused the submission (a usage exit)."""
    refused = token_refused(exc, base_url)
    if refused:
        print(f"portal submit: {refused}", file=sys.stderr)
        return EXIT_USAGE
    if exc.code == "unknown-system":
        system = args.system or str((exc.body or {}).get("system") or "")
        print(f"portal submit: {register_system_hint(base_url, system)}", file=sys.stderr)
        return EXIT_USAGE
    print(f"portal submit: {exc}", file=sys.stderr)
    return EXIT_USAGE
